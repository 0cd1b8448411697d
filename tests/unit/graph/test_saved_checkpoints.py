"""Checkpoints written by earlier code resume with today's (issue 34: the state is read through typed
parts now, its channels and their contents must not change meaning).

`tests/fixtures/checkpoints/*.json` hold every checkpoint and pending write of a thread stopped at
a question, exactly as the saver serialized them (LangGraph's typed serializer: what MongoDB
stores), written by the code of stop 37: the graph run to its question in-process as the tests
below run it (the code task of `code_task_script`, the epic of `epic_script`), then `dump`. Each
test loads one into a fresh saver, answers the question, and checks the run ends as it would
have then.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from app.graph.builder import build_graph
from app.graph.context import RunContext
from tests.fixtures.llm_server import Reply
from tests.support import classification, git, goals_json, make_git_repo, node_marker, steps_json

SAVED = Path(__file__).resolve().parents[2] / "fixtures" / "checkpoints"
WORKSPACE = "clients/c1/webshop"
CHANGED = "app/health.py"


def _typed(value: Any, saver: BaseCheckpointSaver[Any]) -> dict[str, str]:
    kind, data = saver.serde.dumps_typed(value)
    return {"type": kind, "data": base64.b64encode(data).decode()}


def _untyped(value: dict[str, str], saver: BaseCheckpointSaver[Any]) -> Any:
    return saver.serde.loads_typed((value["type"], base64.b64decode(value["data"])))


async def dump(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[str, Any]:
    """Every checkpoint of the thread, oldest first, with its pending writes, serialized."""
    found = [item async for item in saver.alist(config)][::-1]
    return {"thread_id": config["configurable"]["thread_id"], "checkpoints": [{
        "config": item.config, "parent": item.parent_config,
        "checkpoint": _typed(item.checkpoint, saver), "metadata": _typed(item.metadata, saver),
        "writes": [{"task_id": task_id, "channel": channel, "value": _typed(value, saver)}
                   for task_id, channel, value in item.pending_writes or []],
    } for item in found]}


async def load(saved: dict[str, Any], saver: BaseCheckpointSaver[Any]) -> RunnableConfig:
    """The thread put back into `saver` through its public API; the config to resume it with."""
    for item in saved["checkpoints"]:
        checkpoint = _untyped(item["checkpoint"], saver)
        parent = RunnableConfig(configurable=(item["parent"] or {}).get("configurable")
                                or {"thread_id": saved["thread_id"], "checkpoint_ns": ""})
        config = await saver.aput(parent, checkpoint, _untyped(item["metadata"], saver),
                                  checkpoint["channel_versions"])
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for write in item["writes"]:
            by_task.setdefault(write["task_id"], []).append((write["channel"], _untyped(write["value"], saver)))
        for task_id, writes in by_task.items():
            await saver.aput_writes(config, writes, task_id)
    return RunnableConfig(configurable={"thread_id": saved["thread_id"]}, recursion_limit=150)


def saved_thread(name: str) -> dict[str, Any]:
    saved: dict[str, Any] = json.loads((SAVED / f"{name}.json").read_text())
    return saved


def fresh_graph() -> tuple[Any, InMemorySaver]:
    saver = InMemorySaver()
    return build_graph().compile(checkpointer=saver), saver


def epic_script() -> list[Reply]:
    return [Reply(match=node_marker("intake"), content=classification("epic", "code", "complex"), name="intake"),
            Reply(match=node_marker("plan_epic"), content=goals_json("API klient"), name="plan_epic"),
            Reply(match=node_marker("plan_steps"), name="plan_steps", content=steps_json(
                {"instructions": "Popiš klienta", "step_type": "respond"})),
            Reply(match=node_marker("execute_step"), content="Klient popsán.", name="execute_step"),
            Reply(match=node_marker("finalize"), content="Epic hotov.", name="finalize")]


# ----------------------------------------------------------------------------------------- tests
async def test_a_code_run_saved_at_the_commit_question_commits_when_approved(ctx: RunContext, llm: Any,
                                                                            tmp_path: Path) -> None:
    saved = saved_thread("commit_gate")
    repo = make_git_repo(tmp_path / WORKSPACE)
    (repo / CHANGED).parent.mkdir(parents=True, exist_ok=True)
    (repo / CHANGED).write_text(saved["agent_wrote"])  # what the agent left before the question
    graph, saver = fresh_graph()
    config = await load(saved, saver)
    before = await graph.aget_state(config)
    assert before.interrupts and before.interrupts[0].value["action"] == "commit"

    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config,
                        context=ctx)

    final = (await graph.aget_state(config)).values
    branch = f"task/{saved['task_id']}"
    assert final["git_outcome"] == "committed" and final["branch"] == branch, final.get("error")
    assert final["artifacts"] == [CHANGED]
    assert git(repo, "show", "--name-only", "--format=", branch).split() == [CHANGED]
    assert final["final_result"].endswith(f"Změny jsou commitnuté ve větvi {branch}.")
    assert "Dokončeno 1 z 1 kroků" in final["final_result"]  # the report of the saved step results
    assert llm.requests == []  # nothing classified, planned or run again


async def test_an_epic_saved_at_its_plan_question_runs_its_goal_when_approved(ctx: RunContext, llm: Any) -> None:
    saved = saved_thread("epic_plan")
    llm.script(*epic_script())
    graph, saver = fresh_graph()
    config = await load(saved, saver)
    assert (await graph.aget_state(config)).interrupts[0].value["action"] == "epic_plan"

    await graph.ainvoke(Command(resume={"approved": True, "reason": "ano", "modification": None}), config,
                        context=ctx)

    final = (await graph.aget_state(config)).values
    assert not final.get("error") and "Klient popsán." in final["final_result"], final.get("error")
    assert [r.matched for r in llm.requests if r.matched in ("plan_epic", "intake")] == []  # not planned again
