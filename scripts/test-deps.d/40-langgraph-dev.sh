#!/usr/bin/env bash
# LangChain's own Agent Server (`langgraph dev`, langgraph-api 0.16.7, in-memory) in a venv of its own under
# data/langgraph-peer/venv, for tests/agentserver/test_differential.py. It is Elastic-2.0 software: the tests only
# talk to it over HTTP, it never enters the project's own environment. Never fails: without it that test skips.
set -u
cd "$(dirname "$0")/../.." || exit 0
VENV="data/langgraph-peer/venv"
PINS=("langgraph-cli[inmem]==0.4.40" "langgraph-api==0.16.7" "langgraph-runtime-inmem==0.36.7")
if [ -x "$VENV/bin/langgraph" ] && "$VENV/bin/python" -c 'import importlib.metadata as m, sys
sys.exit(m.version("langgraph-api") != "0.16.7")' 2>/dev/null; then
  exit 0
fi
PY="$(command -v python3.11 || command -v python3)"
if [ -z "$PY" ]; then
  echo "python3 not found: the differential test against langgraph dev will skip."
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV" && "$VENV/bin/pip" install -q "${PINS[@]}" \
  || echo "pip could not install ${PINS[*]}: the differential test against langgraph dev will skip."
exit 0
