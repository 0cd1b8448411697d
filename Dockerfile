# syntax=docker/dockerfile:1
# Jervis Orchestrator image. The build context is the repository root:
#   docker build --platform linux/amd64 -t <registry>/jervis-orchestrator:<tag> .
# k8s/build_orchestrator.sh builds, pushes and deploys it; docker-compose.yml builds it for a laptop.
#
# Base images are pinned by exact version tag. This file was written without registry access, so
# no digest could be resolved: when you can reach the registry, pin by digest as well
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm` gives it) and write
# `FROM python:3.11.14-slim-bookworm@sha256:<digest>` in both stages.
# Every requirement ships a binary wheel for linux/amd64 and linux/arm64 (or is pure Python), so
# the builder needs no compiler.

# ---------------------------------------------------------------- builder: the virtualenv
FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

COPY requirements.txt /tmp/requirements.txt
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir -r /tmp/requirements.txt

# ---------------------------------------------------------------- aider: the local runner's agent
# Only with `--build-arg LOCAL_AIDER=true` (docker-compose.yml sets it): the cluster image runs its
# agents as Jobs of their own images and carries an empty directory here instead of ~700 MB.
# The marker names the pin, as app/agents/aider_install.py expects (same pin as AIDER_SPEC there).
FROM python:3.11.14-slim-bookworm AS aider

ARG LOCAL_AIDER=false
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN if [ "$LOCAL_AIDER" = "true" ]; then \
        python -m venv /opt/aider-venv \
        && /opt/aider-venv/bin/pip install --no-cache-dir "aider-chat==0.86.2" \
        && /opt/aider-venv/bin/aider --version \
        && echo "aider-chat==0.86.2" > /opt/aider-venv/.jervis-installed; \
    else mkdir -p /opt/aider-venv; fi

# ---------------------------------------------------------------- runtime
FROM python:3.11.14-slim-bookworm

ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="jervis-orchestrator" \
      org.opencontainers.image.description="Jervis Orchestrator: FastAPI + LangGraph service that plans, runs and reviews coding work" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11.14-slim-bookworm"

# git: the workspace manager and the local runner run it on the workspaces. bubblewrap: the local
# runner's agent sandbox (app/agents/sandbox.py); AGENT_SANDBOX=bwrap below makes it required, so an
# agent never runs unconfined in this image (docs/deployment.md: what bwrap needs in a container).
# safe.directory: the
# shared volume's repositories may be owned by another uid (agent Jobs). uid/gid 1000: the same
# user the agent Jobs run as (app/agents/job_spec.py), so both can write the shared workspaces.
# /opt/jervis/data is created owned by that user, so a fresh named volume (compose) inherits it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*' \
    && groupadd --gid 1000 jervis \
    && useradd --uid 1000 --gid 1000 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin jervis \
    && mkdir -p /opt/jervis/data \
    && chown 1000:1000 /opt/jervis/data

COPY --from=builder /opt/venv /opt/venv
COPY --from=aider /opt/aider-venv /opt/aider-venv

# HOME=/tmp: the root filesystem is read-only in the cluster; /tmp is an emptyDir there.
# LITELLM_LOCAL_MODEL_COST_MAP: litellm must never fetch its price map from the internet.
# AGENT_SANDBOX=bwrap: the local runner (docker-compose.yml) refuses every agent, Aider included,
# that bubblewrap cannot confine; the cluster's agents run as Jobs and never read it.
# HOST/PORT: `python -m app.serve` listens there, and refuses to without API_TOKEN (or ALLOW_NO_TOKEN).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    DATA_ROOT=/opt/jervis/data \
    AIDER_VENV=/opt/aider-venv \
    AGENT_SANDBOX=bwrap \
    HOST=0.0.0.0 \
    PORT=8090

# The repository layout is kept: app/agents/local.py finds the agent entrypoint at
# <root>/agent-images/entrypoint/jervis_entrypoint/ (parents[2] of its own file).
WORKDIR /opt/jervis/orchestrator
COPY app/ ./app/
COPY agent-images/entrypoint/ ./agent-images/entrypoint/
COPY agent-images/kb_mcp/ ./agent-images/kb_mcp/
# Byte-code compiled at build time: the running container cannot write it (read-only root).
RUN python -m compileall -q app agent-images

USER 1000:1000
EXPOSE 8090
# The launcher is PID 1 (exec form) and serves in its own process (uvicorn.run), so SIGTERM reaches the app,
# which stops taking work, lets a running node reach its checkpoint (SHUTDOWN_GRACE_SECONDS,
# default 20) and releases its MongoDB lock.
STOPSIGNAL SIGTERM
# No curl in a slim image: urllib raises on a non-2xx answer, which fails the check.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8090/health/ready', timeout=8)"]
# app.serve: HOST/PORT above; refuses to start beyond loopback without API_TOKEN (ALLOW_NO_TOKEN=true
# to accept it, logged loudly); forwarded headers (scheme, client address) believed from
# TRUSTED_PROXIES only (none by default), never from uvicorn's FORWARDED_ALLOW_IPS.
CMD ["python", "-m", "app.serve"]
