// Builds the chat page's script and stylesheet into the chat app's static files, with fixed names and no
// content hashes, so that the committed bundle is byte-for-byte what `npm ci && npm run build` produces
// (tests/chatui/test_bundle.py checks it) and Django serves it without Node.js.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  // Asset URLs are relative to the bundle itself, wherever STATIC_URL puts it.
  base: "./",
  publicDir: false,
  logLevel: "warn",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  oxc: { jsx: { runtime: "automatic" } },
  build: {
    outDir: fileURLToPath(new URL("../chat/static/chat", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    cssCodeSplit: false,
    reportCompressedSize: false,
    license: false,
    // One file on purpose (the page loads a single script); the client libraries make it ~800 kB, ~200 kB gzipped.
    chunkSizeWarningLimit: 1000,
    rolldownOptions: {
      // The React bindings mark modules "use client" for server-component bundlers; meaningless in this bundle.
      onLog(level, log, handler) {
        if (log.code === "MODULE_LEVEL_DIRECTIVE") return;
        handler(level, log);
      },
      input: fileURLToPath(new URL("./src/main.tsx", import.meta.url)),
      output: {
        format: "es",
        entryFileNames: "chat.js",
        chunkFileNames: "chat-[name].js",
        assetFileNames: "chat[extname]",
        codeSplitting: false,
      },
    },
  },
});
