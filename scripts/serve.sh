#!/usr/bin/env bash
# Install the service into .venv and run it: migrations, demo workspace and key, admin user,
# Daphne on http://127.0.0.1:8000 (--port N serves on another port) plus a background worker. Ctrl-C stops
# everything. A port that is taken stops it at once, before anything starts.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install --disable-pip-version-check -q -r requirements.txt
exec .venv/bin/python manage.py serve "$@"
