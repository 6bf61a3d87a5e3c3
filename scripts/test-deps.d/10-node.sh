#!/usr/bin/env bash
# npm packages for the tests that drive LangChain's official JS client (tests/js: @langchain/langgraph-sdk
# 1.9.24 on Node >= 20) and build the useStream test page (react, react-dom, esbuild). Never fails: without Node
# or the packages, those tests skip and say what to install.
set -u
cd "$(dirname "$0")/../../tests/js" || exit 0
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm not found: the JS client tests will skip (install Node.js >= 20)."
  exit 0
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "Node.js $major is older than 20: the JS client tests will skip."
  exit 0
fi
# Already installed at the pinned versions: nothing to do.
if node -e 'const v = (p) => require(`./node_modules/${p}/package.json`).version;
  const pinned = require("./package.json");
  const wanted = { ...pinned.dependencies, ...pinned.devDependencies };
  process.exit(Object.entries(wanted).every(([name, version]) => v(name) === version) ? 0 : 1)' 2>/dev/null; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error || echo "npm ci failed in tests/js: the JS client tests will skip."
exit 0
