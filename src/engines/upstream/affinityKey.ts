import { createHash } from "node:crypto";
import type { ChatGenerateOptions, CompleteOptions } from "../types.js";

/**
 * A shared prefix this long (the node's system prompt, a character's prompt, a long document
 * every request of an app starts with) is worth sending to the replica that has it cached.
 */
export const SHARED_PREFIX_MIN_CHARS = 1024;

const digest = (text: string) => createHash("sha256").update(text).digest("base64url");

/**
 * What a chat request is routed on in a pool: its prompt_cache_key, else its first system
 * message when that is long; undefined: no affinity (the least loaded replica takes it).
 */
export function chatAffinityKey(options: ChatGenerateOptions): string | undefined {
  if (options.cache?.key !== undefined) return `key:${options.cache.key}`;
  const first = options.messages[0];
  if (first?.role === "system" && first.content.length >= SHARED_PREFIX_MIN_CHARS) return `prefix:${digest(first.content)}`;
  return undefined;
}

/** A legacy completion's: the first SHARED_PREFIX_MIN_CHARS characters of its first prompt, when it is text that long. */
export function completionAffinityKey(options: CompleteOptions): string | undefined {
  const first = options.prompts[0];
  if (typeof first !== "string" || first.length < SHARED_PREFIX_MIN_CHARS) return undefined;
  return `prefix:${digest(first.slice(0, SHARED_PREFIX_MIN_CHARS))}`;
}
