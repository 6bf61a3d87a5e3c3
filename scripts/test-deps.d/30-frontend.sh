#!/usr/bin/env bash
# The chat page's bundle check (tests/chatui/test_bundle.py) rebuilds frontend/ with `npm ci`. Installing the
# locked packages here fills npm's cache, so the test's own `npm ci` runs from it. Never fails: without Node.js
# >= 20.19 or a reachable registry the test skips and says why.
set -u
cd "$(dirname "$0")/../../frontend" || exit 0
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "node/npm are missing: the chat bundle check will skip (install Node.js >= 20.19)."
  exit 0
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
  echo "Node.js $(node -v) is older than 20.19: the chat bundle check will skip."
  exit 0
fi
# Already installed from the current lockfile (and so in npm's cache): nothing to do.
if [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1 \
  || echo "npm ci in frontend/ failed (no registry?): the chat bundle check may skip."
exit 0
