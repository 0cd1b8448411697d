#!/usr/bin/env bash
# Run the whole test suite (real processes on loopback; no Docker, no network), after the lint
# and type checks (ruff and mypy, configured in pyproject.toml): a finding of either fails the run
# before any test starts. JERVIS_LINT=0 skips them (for a quick run of a few tests).
source "$(dirname "$0")/_venv.sh" requirements-dev.txt
# The whole suite's real-agent tests (tests/agent_images) need Aider in .cache/agents/aider-venv: on
# a fresh clone its one-time install (about 45 s) starts now, beside the lint; their fixture waits
# for it (the installer holds a file lock) and redoes it if it failed.
AIDER_VENV=.cache/agents/aider-venv
if [ "$#" -eq 0 ] && [ ! -f "$AIDER_VENV/.jervis-installed" ]; then
  mkdir -p .cache/agents
  .venv/bin/python -c 'import sys; from pathlib import Path; from app.agents.aider_install import ensure_aider
ensure_aider(Path(sys.argv[1]), log=lambda _: None)' "$AIDER_VENV" > .cache/agents/preinstall.log 2>&1 &
  AIDER_PREINSTALL=$!
fi
# The same for OpenHands' SDK in .cache/agents/openhands-venv (about 2 minutes, with a Python 3.12 found
# on the machine), once Aider's is done: both installers take the same lock, and Aider's tests come
# first. tests/agent_images/test_openhands.py waits for it and redoes a failed one.
OPENHANDS_VENV=.cache/agents/openhands-venv
if [ "$#" -eq 0 ] && [ ! -f "$OPENHANDS_VENV/.jervis-installed" ]; then
  mkdir -p .cache/agents
  (while [ -n "${AIDER_PREINSTALL:-}" ] && kill -0 "$AIDER_PREINSTALL" 2>/dev/null; do sleep 2; done
   .venv/bin/python -c 'import sys; from app.agents.programs.openhands import OpenHandsProgram; from app.config import Settings
OpenHandsProgram(Settings(openhands_venv=sys.argv[1])).install(lambda _: None)' "$OPENHANDS_VENV") \
    > .cache/agents/preinstall-openhands.log 2>&1 &
fi
if [ "${JERVIS_LINT:-1}" != 0 ]; then
  .venv/bin/ruff check . || { echo "ruff found problems (.venv/bin/ruff check --fix . fixes some)" >&2; exit 1; }
  .venv/bin/python -m mypy || { echo "mypy found problems" >&2; exit 1; }
fi
# The console's browser tests (tests/ui) drive Debian's Chromium; install it when it is missing.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests …" >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -q chromium >&2 || { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q chromium >&2; }
fi
# Local agents run in a bubblewrap sandbox (AGENT_SANDBOX, app/agents/sandbox.py); the agent tests need it.
if ! command -v bwrap >/dev/null 2>&1; then
  echo "installing Debian's bubblewrap for the agent sandbox …" >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -q bubblewrap >&2 || { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q bubblewrap >&2; }
fi
# The whole suite runs in JERVIS_TEST_WORKERS processes (pytest-xdist; 3 by default: most tests wait
# on real processes, so three keep two cores busy: 5.7 instead of 11 minutes); named tests in one.
workers=()
[ "$#" -eq 0 ] && workers=(-n "${JERVIS_TEST_WORKERS:-3}")
set +e
.venv/bin/python -m pytest -q ${workers[@]+"${workers[@]}"} "$@"
code=$?
[ "$code" -eq 5 ] && { echo "no tests collected" >&2; exit 1; }
exit "$code"
