# Sourced by run.sh and test.sh: a project virtualenv with the pinned requirements, reinstalled
# only when a requirements file changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
REQS="$1"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
STAMP=".venv/.installed-$(cat requirements*.txt | sha256sum | cut -c1-16)-$(basename "$REQS")"
if [ ! -f "$STAMP" ]; then
  echo "installing $REQS into .venv …" >&2
  .venv/bin/python -m pip install --disable-pip-version-check -q -r "$REQS"
  touch "$STAMP"
fi
export LITELLM_LOCAL_MODEL_COST_MAP="${LITELLM_LOCAL_MODEL_COST_MAP:-True}"
