import { appendFileSync } from "node:fs";

let file;
const seen = new Set();

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url)?.[1];
  if (file && name && !seen.has(name)) {
    seen.add(name);
    appendFileSync(file, `${name}\n`);
  }
  return resolved;
}
