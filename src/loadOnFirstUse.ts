/**
 * A loader called on first use and shared after. For dependencies heavy enough that a node which
 * never needs them should not load them at start: the wallet libraries (viem, @solana/kit, the
 * curves) and sharp each cost 30–45 MB of resident memory, next to a chat model's KV cache.
 * A load that fails is tried again on the next call.
 */
export function loadOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
