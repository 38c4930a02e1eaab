/** The console's only way to the API: the admin key from sessionStorage as a bearer token. */

const KEY_STORAGE = "hearth.adminKey";
export const API = "/api/v1";

export const storedKey = () => sessionStorage.getItem(KEY_STORAGE);
export const storeKey = (key: string) => sessionStorage.setItem(KEY_STORAGE, key);
export const forgetKey = () => sessionStorage.removeItem(KEY_STORAGE);

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Fetches an API path with the stored key; a non-2xx answer throws its `error` message. */
export async function apiFetch(path: string, init: RequestInit & { key?: string } = {}): Promise<Response> {
  const { key = storedKey() ?? "", ...rest } = init;
  const headers = new Headers(rest.headers);
  headers.set("authorization", `Bearer ${key}`);
  if (typeof rest.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
  const res = await fetch(`${API}${path}`, { ...rest, headers });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = (await res.json()) as { error?: unknown };
      if (typeof body.error === "string") message = body.error;
    } catch {
      // Not JSON: keep the status line.
    }
    throw new ApiError(res.status, message);
  }
  return res;
}

export async function apiJson<T>(path: string, init: RequestInit & { key?: string } = {}): Promise<T> {
  return (await apiFetch(path, init)).json() as Promise<T>;
}

export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Formats whole units for a table: at most 6 decimals, trailing zeros dropped. */
export const amount = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(6).replace(/0+$/, ""));

export const bytes = (value: number | null | undefined) => {
  if (value === null || value === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = value;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
};

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "–");
