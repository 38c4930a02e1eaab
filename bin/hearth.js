#!/usr/bin/env node
// The CLI runs the TypeScript sources directly through tsx: no build step can go stale.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
