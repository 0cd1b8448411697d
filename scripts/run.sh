#!/usr/bin/env bash
# Run the service on :8090. Without MONGODB_URL an embedded nx-27017 is started (see app/dev.py).
source "$(dirname "$0")/_venv.sh" requirements.txt
exec .venv/bin/python -m app.dev
