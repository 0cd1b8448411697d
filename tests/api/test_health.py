"""The probes of the real app during its lifespan's shutdown (what SIGTERM starts): readiness
answers 503 while the pod suspends its runs, liveness stays 200 until the end.

In-process, because under uvicorn no new connection reaches the app by then: uvicorn stops
listening at SIGTERM, before the lifespan's shutdown (tests/integration/test_operability.py shows
it on a real process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from app.config import Settings
from app.dev.embedded_mongo import EmbeddedMongo
from app.main import create_app
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import Reply, ScriptedLlmServer
from tests.support import SCRIPTED_AGENT, classification, node_marker, orchestrate_body, until


async def test_a_stopping_app_is_not_ready_but_alive(mongo_server: EmbeddedMongo, mongo_db_name: str,
                                                     llm: ScriptedLlmServer, kotlin: FakeKotlinServer,
                                                     kb: FakeKbServer, tmp_path: Path) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), name="intake"),
               Reply(match=node_marker("respond"), content="never", delay_before=60, name="respond-slow"))
    settings = Settings(
        mongodb_url=mongo_server.url, mongodb_database=mongo_db_name, checkpoint_database=f"{mongo_db_name}_cp",
        pod_id="stopping-pod", data_root=tmp_path, kotlin_server_url=kotlin.url, knowledgebase_url=kb.url,
        ollama_url=llm.url, local_model="test-model", agent_runner="local", local_agent_command=SCRIPTED_AGENT,
        health_cache_seconds=0, shutdown_grace_seconds=2,  # the run holds the shutdown this long
    )
    app = create_app(settings)
    lifespan = app.router.lifespan_context(app)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://[::1]") as http:
        await lifespan.__aenter__()
        stopping: asyncio.Task[bool | None] | None = None
        try:
            assert (await http.get("/health/ready")).status_code == 200
            assert (await http.post("/orchestrate/stream", json=orchestrate_body())).status_code == 200
            await until(lambda: any(r.matched == "respond-slow" for r in llm.requests), "the slow respond call")

            stopping = asyncio.create_task(lifespan.__aexit__(None, None, None))
            for _ in range(100):  # the shutdown stops admitting runs at once; 2 s of grace follow
                if (ready := await http.get("/health/ready")).status_code != 200:
                    break
                await asyncio.sleep(0.01)
            live = await http.get("/health/live")
            assert not stopping.done(), "the probes must be seen while the run is being suspended"
        finally:
            await (stopping or lifespan.__aexit__(None, None, None))

    assert ready.status_code == 503
    assert ready.json() == {"status": "not_ready", "mongodb": ready.json()["mongodb"], "accepting_work": False}
    assert ready.json()["mongodb"]["status"] == "ok", "not ready because it stops, not for MongoDB"
    assert live.status_code == 200 and live.json() == {"status": "alive"}
