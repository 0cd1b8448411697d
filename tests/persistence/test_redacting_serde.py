"""Checkpoints pass the service's redaction (app/persistence/redacting_serde.py): the state and
the pending interrupt, on the real MongoDBSaver, read back after a restart."""

from __future__ import annotations

from typing import TypedDict

from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pymongo import MongoClient

from app.dev.embedded_mongo import EmbeddedMongo
from app.observability.redaction import REDACTED, Redactor
from app.persistence.redacting_serde import RedactingSerializer

CONFIGURED = "configured-git-token-0001"
SHAPED = "ghp_abcdefghijklmnopqrstuvwxyz0123"


class State(TypedDict, total=False):
    failure: str
    steps: list[dict[str, object]]


def build_graph(saver: MongoDBSaver) -> object:
    def run_agent(_: State) -> State:
        return {"failure": f"push failed for https://x:{CONFIGURED}@git.example/repo",
                "steps": [{"summary": f"token {SHAPED}", "attempt": 2, "files": ("a.py",)}]}

    def ask(state: State) -> State:
        interrupt({"action": "clarify", "description": f"Retry? The agent said: {state['failure']}"})
        return {}

    builder = StateGraph(State)
    builder.add_node("run_agent", run_agent)
    builder.add_node("ask", ask)
    builder.add_edge(START, "run_agent")
    builder.add_edge("run_agent", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def test_state_and_interrupts_are_stored_redacted_and_read_back_as_stored(mongo_server: EmbeddedMongo,
                                                                        mongo_db_name: str) -> None:
    config = {"configurable": {"thread_id": "thread-secret"}}
    serde = RedactingSerializer(Redactor([CONFIGURED]))
    with MongoClient(mongo_server.url) as client:
        build_graph(MongoDBSaver(client, db_name=mongo_db_name, serde=serde)).invoke({}, config)  # type: ignore[attr-defined]
        stored = [doc for name in client[mongo_db_name].list_collection_names()
                  for doc in client[mongo_db_name][name].find()]
    with MongoClient(mongo_server.url) as client:  # a restarted service reads what was stored
        snapshot = build_graph(MongoDBSaver(client, db_name=mongo_db_name, serde=serde)).get_state(config)  # type: ignore[attr-defined]

    raw = repr(stored).encode()
    assert stored and CONFIGURED.encode() not in raw and SHAPED.encode() not in raw
    assert snapshot.values["failure"] == f"push failed for https://x:{REDACTED}@git.example/repo"
    assert snapshot.values["steps"] == [{"summary": f"token ghp_{REDACTED}", "attempt": 2, "files": ["a.py"]}]
    assert snapshot.interrupts[0].value == {
        "action": "clarify", "description": f"Retry? The agent said: push failed for https://x:{REDACTED}@git.example/repo"}
    assert snapshot.next == ("ask",)
