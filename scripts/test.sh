#!/usr/bin/env bash
# Install what the tests need into .venv (plus npm packages and Chromium where possible) and run
# the whole suite on the embedded defaults (SQLite, in-memory channel layer). Extra arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install --disable-pip-version-check -q -r requirements-dev.txt
for extra in scripts/test-deps.d/*.sh; do
  [ -e "$extra" ] && bash "$extra"
done
.venv/bin/ruff check .
# The layers and independence contracts of pyproject.toml ([tool.importlinter], docs/architecture.md).
.venv/bin/lint-imports
# Type checking with django-stubs ([tool.mypy] in pyproject.toml); incremental, with its cache in .mypy_cache.
.venv/bin/mypy
# PYTEST_WORKERS test processes (2; 0 runs everything in this one), one test module per process at a time.
exec .venv/bin/python -m pytest --durations=10 -n "${PYTEST_WORKERS:-2}" --dist loadfile "$@"
