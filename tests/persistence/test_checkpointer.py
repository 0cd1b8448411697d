"""MongoDBSaver (sync pymongo) on the fixture server: interrupt in one saver, resume in another.

This is the checkpoint layer the service relies on for approval/clarification (spec §13).
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt
from pymongo import MongoClient

from app.dev.embedded_mongo import EmbeddedMongo


class State(TypedDict, total=False):
    value: str
    approved: bool
    reason: str


def build_graph(saver: MongoDBSaver, calls: list[str]) -> CompiledStateGraph:
    def plan(state: State) -> State:
        calls.append("plan")
        return {"value": state["value"] + "-planned"}

    def commit(state: State) -> State:
        answer = interrupt({"type": "approval_request", "action": "commit", "description": "Commit?"})
        calls.append("commit-resumed")
        return {"value": state["value"] + "-committed", "approved": answer["approved"], "reason": answer["reason"]}

    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("commit", commit)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "commit")
    builder.add_edge("commit", END)
    return builder.compile(checkpointer=saver)


def test_interrupted_graph_resumes_from_a_second_saver_and_client(
    mongo_server: EmbeddedMongo, mongo_db_name: str
) -> None:
    config = {"configurable": {"thread_id": "thread-42"}}
    calls: list[str] = []

    with MongoClient(mongo_server.url) as first_client:
        graph = build_graph(MongoDBSaver(first_client, db_name=mongo_db_name), calls)
        paused = graph.invoke({"value": "task"}, config)
        assert paused["__interrupt__"][0].value["action"] == "commit"
        assert graph.get_state(config).next == ("commit",)

    with MongoClient(mongo_server.url) as second_client:
        graph = build_graph(MongoDBSaver(second_client, db_name=mongo_db_name), calls)
        assert graph.get_state(config).next == ("commit",)  # loaded from MongoDB, not memory
        final = graph.invoke(Command(resume={"approved": True, "reason": "ship it"}), config)
        assert graph.get_state(config).next == ()

    assert final == {"value": "task-planned-committed", "approved": True, "reason": "ship it"}
    assert calls == ["plan", "commit-resumed"]  # plan ran once; only the interrupted node re-ran
