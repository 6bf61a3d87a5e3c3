// Bundles the useStream test page (use_stream_page.jsx) with esbuild into dist/: node build_use_stream_page.mjs
import { build } from "esbuild";

await build({
  entryPoints: ["use_stream_page.jsx"],
  bundle: true,
  format: "esm",
  minify: true,
  jsx: "automatic",
  outfile: "dist/use_stream_page.js",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
});
