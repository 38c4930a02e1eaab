import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (where package.json, the bundled models.config.json and image-styles.json live). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
