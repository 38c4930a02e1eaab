import { extname } from "node:path";

/**
 * The module `name` next to the calling module, with the caller's own extension: `.ts` when the
 * sources run through tsx (tests), `.js` when bin/hearth.js runs the copy compiled into dist/.
 * For worker entries, which are loaded by URL and so escape the import graph.
 */
export function siblingModule(callerUrl: string, name: string): URL {
  return new URL(`./${name}${extname(new URL(callerUrl).pathname)}`, callerUrl);
}
