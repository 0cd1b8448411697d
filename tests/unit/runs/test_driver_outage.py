"""RunDriver through a MongoDB outage: a small graph checkpointed by MongoDBSaver on an nx-27017
that one of its nodes stops (and a worker starts again), as the service's graph is."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from app.agents.local import LocalRunner
from app.agents.workspace import WorkspaceManager
from app.clients.knowledge_base import KnowledgeBaseClient
from app.config import Settings
from app.graph.context import RunContext
from app.llm.provider import LitellmProvider
from app.observability.metrics import Metrics
from app.persistence.context_store import COLLECTION_NAME, ContextStore
from app.persistence.mongo import MongoTimeouts, create_client, create_sync_client, ping
from app.persistence.outage import MongoOutage, MongoUnavailableError
from app.persistence.project_memory import COLLECTION_NAME as PROJECTS_COLLECTION
from app.persistence.project_memory import ProjectMemory
from app.runs.events import EventHub
from app.runs.lifecycle import RunDriver, RunIdentity, RunProgress
from tests.fixtures.mongo import RestartableMongo
from tests.fixtures.outbox import push_rig

#: Short, but longer than pymongo's 0.5 s between checks of a server that went away.
FAST = MongoTimeouts(connect_seconds=1.0, socket_seconds=5.0)
NOWHERE = "http://127.0.0.1:9"  # the toy nodes call neither Kotlin nor the KB


class ToyState(TypedDict, total=False):
    query: str
    answer: str


@dataclass
class Harness:
    mongo: RestartableMongo
    saver: MongoDBSaver
    outage: MongoOutage
    context: RunContext
    calls: list[str]
    events: EventHub

    def driver(self, graph: Any) -> RunDriver:
        return RunDriver(graph, self.context, self.context.kotlin, Metrics(), self.outage)

    def outage_in(self, node: str, *, restart: bool) -> Callable[[], None]:
        """A side effect for the first run of `node`: MongoDB goes away and, with `restart`, comes
        back once the driver waits for it (not after a fixed time: a restart faster than the
        client's server selection would let the write through, and there would be no outage)."""
        def strike() -> None:
            if self.calls.count(node) == 1:
                self.mongo.stop()
                if restart:
                    threading.Thread(target=self._restart_once_waiting, daemon=True).start()
        return strike

    def _restart_once_waiting(self) -> None:
        deadline = time.monotonic() + 30
        while self.outage.waiting == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.mongo.start_after(0.1)


@pytest.fixture
async def harness(restartable_mongo: RestartableMongo, tmp_path: Path) -> AsyncIterator[Harness]:
    settings = Settings(data_root=tmp_path, mongodb_url=restartable_mongo.url)
    sync_client = create_sync_client(restartable_mongo.url, timeouts=FAST)
    client = create_client(restartable_mongo.url, timeouts=FAST)
    database = "t_" + uuid.uuid4().hex[:12]
    workspaces = WorkspaceManager(tmp_path)
    async with httpx.AsyncClient() as http, push_rig(http, NOWHERE, client[database]) as pushes:
        context = RunContext(
            settings=settings, llm=LitellmProvider(settings), kb=KnowledgeBaseClient(http, NOWHERE, NOWHERE, timeout=1),
            kotlin=pushes.client, context_store=ContextStore(client[database][COLLECTION_NAME]),
            project_memory=ProjectMemory(client[database][PROJECTS_COLLECTION]),
            runner=LocalRunner(workspaces, settings), workspaces=workspaces,
        )
        outage = MongoOutage(lambda: ping(client), wait_seconds=30, first_delay=0.1, max_delay=0.5)
        yield Harness(restartable_mongo, MongoDBSaver(sync_client, db_name=database), outage, context, [], EventHub())
    await client.close()
    sync_client.close()


def chain(h: Harness, strike: Callable[[], None]) -> Any:
    """first → second → third; `strike` runs inside `second`."""
    graph = StateGraph(ToyState)

    def step(name: str) -> Callable[[ToyState], dict[str, Any]]:
        def run(state: ToyState) -> dict[str, Any]:
            h.calls.append(name)
            if name == "second":
                strike()
            return {"answer": f"{state.get('answer', '')}{name};"}
        return run

    for name in ("first", "second", "third"):
        graph.add_node(name, step(name))
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", "third")
    graph.add_edge("third", END)
    return graph.compile(checkpointer=h.saver)


def identity() -> RunIdentity:
    return RunIdentity(f"thread-{uuid.uuid4().hex[:8]}", "task-1", "client-1")


def event_types(h: Harness, thread_id: str) -> list[str]:
    return [event.type for event in h.events.log(thread_id).events]


async def test_a_checkpoint_write_cut_by_an_outage_waits_and_continues_from_the_last_checkpoint(
        harness: Harness) -> None:
    h = harness
    graph = chain(h, h.outage_in("second", restart=True))
    run, progress = identity(), RunProgress()

    outcome = await h.driver(graph).drive(run, {"query": "q"}, h.events.log(run.thread_id), run_progress=progress)

    assert outcome.status == "done"
    assert h.calls == ["first", "second", "second", "third"]  # `second`'s checkpoint was lost: it ran again
    assert event_types(h, run.thread_id) == ["paused", "resumed"]
    saved = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
    assert saved.values["answer"] == "first;second;third;"
    assert progress.nodes_finished >= 3 and h.outage.waiting == 0


async def test_an_answer_whose_step_was_not_saved_is_applied_again_after_the_outage(harness: Harness) -> None:
    h = harness
    strike = h.outage_in("ask:yes", restart=True)
    graph = StateGraph(ToyState)

    def ask(state: ToyState) -> dict[str, Any]:
        answer = interrupt({"action": "clarify", "description": "Which one?"})
        h.calls.append(f"ask:{answer}")
        strike()
        return {"answer": str(answer)}

    def after(state: ToyState) -> dict[str, Any]:
        h.calls.append("after")
        return {}

    graph.add_node("ask", ask)
    graph.add_node("after", after)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "after")
    graph.add_edge("after", END)
    compiled = graph.compile(checkpointer=h.saver)
    run = identity()
    config = {"configurable": {"thread_id": run.thread_id}}
    driver = h.driver(compiled)

    waiting = await driver.drive(run, {"query": "q"}, h.events.log(run.thread_id))
    assert (waiting.status, waiting.interrupt_action) == ("interrupted", "clarify")
    known = (await compiled.aget_state(config)).values

    outcome = await driver.drive(run, Command(resume="yes"), h.events.log(run.thread_id), known=known)

    assert outcome.status == "done"  # not asked again: the answer was re-sent with the lost step
    assert h.calls == ["ask:yes", "ask:yes", "after"]
    assert (await compiled.aget_state(config)).values["answer"] == "yes"


async def test_an_outage_past_its_deadline_raises_for_the_manager_to_suspend(harness: Harness) -> None:
    h = harness
    h.outage.wait_seconds = 0.5
    graph = chain(h, h.outage_in("second", restart=False))
    run = identity()

    with pytest.raises(MongoUnavailableError):
        await h.driver(graph).drive(run, {"query": "q"}, h.events.log(run.thread_id))

    assert h.calls == ["first", "second"]
    assert event_types(h, run.thread_id) == ["paused"]
    assert h.outage.waiting == 0
