"""Run the service on embedded defaults: `python -m app.dev`.

Without `MONGODB_URL`, nx-27017 (a MongoDB wire-protocol server on SQLite) is started on a free
loopback port with its data under `.data/mongo`, and stopped with the service. `DATA_ROOT`
defaults to `.data/workspaces`. Everything else comes from the environment as in production.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import uvicorn

from app.persistence.embedded_mongo import EmbeddedMongo


def main() -> None:
    base = Path(os.environ.get("JERVIS_DEV_HOME", ".data")).resolve()
    os.environ.setdefault("DATA_ROOT", str(base / "workspaces"))
    Path(os.environ["DATA_ROOT"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    embedded: EmbeddedMongo | None = None
    if not os.environ.get("MONGODB_URL"):
        (base / "mongo").mkdir(parents=True, exist_ok=True)
        embedded = EmbeddedMongo(data_dir=base / "mongo", work_dir=base)
        os.environ["MONGODB_URL"] = embedded.start()
        print(f"embedded MongoDB (nx-27017) at {os.environ['MONGODB_URL']}, data in {base / 'mongo'}", flush=True)
    # uvicorn re-raises SIGTERM after its graceful shutdown; with the default handler that would
    # kill this process before `finally` stops the embedded database.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        uvicorn.run("app.main:app", host=os.environ.get("HOST", "0.0.0.0"), port=int(os.environ.get("PORT", "8090")))
    finally:
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    main()
