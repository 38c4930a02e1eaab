// Loaded with `node --import` into a CLI process under test: appends the name of every package
// the process loads to the file named by HEARTH_RECORD_PACKAGES, one per line.
import { register } from "node:module";

register(new URL("./recordPackagesHooks.mjs", import.meta.url), { data: { file: process.env.HEARTH_RECORD_PACKAGES } });
