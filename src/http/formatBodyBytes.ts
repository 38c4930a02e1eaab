/** A body size as limits and refusals name it (decimal units, as --max-upload-mb counts). */
export function formatBytes(bytes: number): string {
  if (bytes >= 1e6) return `${+(bytes / 1e6).toFixed(1)} MB`;
  if (bytes >= 1e3) return `${+(bytes / 1e3).toFixed(1)} KB`;
  return `${bytes} bytes`;
}
