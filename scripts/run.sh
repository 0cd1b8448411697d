#!/usr/bin/env bash
# Run the service on :8090 (see app/dev/__main__.py). Without MONGODB_URL an embedded nx-27017 is started;
# without a reachable Ollama (OLLAMA_URL) an embedded local model, installed here the first time:
# llama.cpp's llama-server built from the llama-cpp-python sdist (about 6 min, requirements-llm.txt;
# llama-cpp-python's server where it cannot be built) and a 1.1 GB model, both cached in .cache/llm/. JERVIS_EMBEDDED_LLM=0 skips it. Code steps run Aider, installed the first
# time into .cache/agents/aider-venv (1-3 min).
source "$(dirname "$0")/_venv.sh" requirements.txt
# Agents run in a bubblewrap sandbox (AGENT_SANDBOX); without it only Aider runs, unconfined.
if ! command -v bwrap >/dev/null 2>&1; then
  echo "installing Debian's bubblewrap for the agent sandbox …" >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -q bubblewrap >&2 || { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q bubblewrap >&2; } \
    || echo "bubblewrap could not be installed: agents other than Aider will be refused (AGENT_SANDBOX=off runs them unconfined)" >&2
fi
.venv/bin/python -m app.dev prepare
exec .venv/bin/python -m app.dev
