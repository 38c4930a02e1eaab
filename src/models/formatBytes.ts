/** Bytes in binary units for people (logs, errors, the CLI): "6.2 MiB"; Infinity is "unlimited". */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "unlimited";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}
