#!/usr/bin/env bash
# What bench/agent_server.py needs beside `langgraph dev` (scripts/test-deps.d/40-langgraph-dev.sh), each in a venv of
# its own under data/, pinned. Only the benchmark needs them, so they are not test dependencies (scripts/test-deps.d).
# * Aegra (aegra-api + aegra-cli, Apache-2.0), an open-source Agent Server on FastAPI and PostgreSQL: data/aegra-peer.
#   The bench only talks to it over HTTP; it never enters the project's own environment. SQLAlchemy 2.1 no longer
#   pulls greenlet, which aegra-api's asyncio engine needs, so it is pinned here too.
# * py-spy (MIT), the sampling profiler that profiles our serving process by pid: data/bench-tools.
# Idempotent: a venv whose pinned version is already there is left alone.
set -eu
cd "$(dirname "$0")/.."
PY="$(command -v python3.11 || command -v python3)"
AEGRA="0.6.0"

install() {  # install VENV CHECK_PACKAGE CHECK_VERSION PIN...
  local venv="$1" package="$2" version="$3"
  shift 3
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('$package') != '$version')" 2>/dev/null; then
    return 0
  fi
  mkdir -p "$(dirname "$venv")"
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$@"
  "$venv/bin/pip" freeze --disable-pip-version-check > "$(dirname "$venv")/freeze.txt"
  echo "$* installed in $venv (pip freeze in $(dirname "$venv")/freeze.txt)"
}

install data/aegra-peer/venv aegra-api "$AEGRA" "aegra-api==$AEGRA" "aegra-cli==$AEGRA" "greenlet==3.5.6"
install data/bench-tools/venv py-spy 0.4.3 "py-spy==0.4.3"
