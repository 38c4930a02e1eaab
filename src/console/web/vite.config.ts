import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// The console builds into src/console/dist, which is committed: a plain `npm install` + `npm start`
// serves it without a build step. Everything is bundled (no CDN, no web fonts).
export default defineConfig({
  base: "/",
  plugins: [preact()],
  build: {
    outDir: "../dist",
    emptyOutDir: true,
    assetsDir: "assets",
    // Small enough to ship as is; no source maps in the committed bundle.
    sourcemap: false,
    reportCompressedSize: false,
  },
});
