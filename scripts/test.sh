#!/usr/bin/env bash
# Run the whole test suite (real processes on loopback; no Docker, no network).
source "$(dirname "$0")/_venv.sh" requirements-dev.txt
set +e
.venv/bin/python -m pytest -q "$@"
code=$?
[ "$code" -eq 5 ] && { echo "no tests collected" >&2; exit 1; }
exit "$code"
