"""Answering one of several questions asked at once (app/runs/resume.py `resume_command`), on a
real LangGraph graph whose two parallel branches each ask: the first answer reaches the first
question only, the second question is asked again, and its answer ends the run."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt

from app.runs.resume import resume_command


class State(TypedDict, total=False):
    branch: str
    answers: Annotated[list[str], operator.add]


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"action": "budget", "description": f"more for {state['branch']}?"})
    return {"answers": [f"{state['branch']}={answer['reason']}"]}


def graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_conditional_edges(START, lambda _: [Send("ask", {"branch": b}) for b in ("a", "c")], ["ask"])
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=InMemorySaver())


async def test_each_of_two_questions_asked_at_once_gets_its_own_answer() -> None:
    g, config = graph(), {"configurable": {"thread_id": "t"}}
    await g.ainvoke({"answers": []}, config)
    first = (await g.aget_state(config)).interrupts
    assert len(first) == 2

    await g.ainvoke(resume_command(first, {"approved": True, "reason": "one"}), config)
    second = (await g.aget_state(config)).interrupts
    assert [i.id for i in second] == [first[1].id]  # the other question, still open

    await g.ainvoke(resume_command(second, {"approved": True, "reason": "two"}), config)
    final = await g.aget_state(config)
    assert not final.interrupts and not final.next
    asked = {first[0].value["description"][9]: "one", first[1].value["description"][9]: "two"}
    assert sorted(final.values["answers"]) == sorted(f"{branch}={reason}" for branch, reason in asked.items())
