#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright never downloads a browser here).
# Installs it with apt when missing and running as root; otherwise the browser tests skip.
set -u
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Chromium for the browser tests (apt-get install chromium)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "Could not install chromium: browser tests will skip (install the 'chromium' package)."
else
  echo "chromium is missing and this is not root: browser tests will skip (install the 'chromium' package)."
fi
exit 0
