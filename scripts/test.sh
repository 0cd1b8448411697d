#!/usr/bin/env bash
# Run the whole test suite (real processes on loopback; no Docker, no network), after the lint
# and type checks (ruff and mypy, configured in pyproject.toml): a finding of either fails the run
# before any test starts. JERVIS_LINT=0 skips them (for a quick run of a few tests).
source "$(dirname "$0")/_venv.sh" requirements-dev.txt
if [ "${JERVIS_LINT:-1}" != 0 ]; then
  .venv/bin/ruff check . || { echo "ruff found problems (.venv/bin/ruff check --fix . fixes some)" >&2; exit 1; }
  .venv/bin/python -m mypy || { echo "mypy found problems" >&2; exit 1; }
fi
set +e
.venv/bin/python -m pytest -q "$@"
code=$?
[ "$code" -eq 5 ] && { echo "no tests collected" >&2; exit 1; }
exit "$code"
