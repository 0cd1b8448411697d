"""clarify: ask the user (interrupt `clarify`), then classify again with the answer.

A node of its own so that the classification LLM call is not repeated when the run resumes
(a node re-runs from its start after `interrupt()`).
"""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt

from app.graph.rules.approval import answer_text
from app.graph.run_state import NodeRuntime, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Intake


async def clarify(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    questions = Intake.of(state).clarification_questions or []
    decision = interrupt(
        {
            "type": "clarification",
            "action": "clarify",
            "description": "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1)),
            "task_id": task_of(state)["id"],
            "questions": questions,
        }
    )
    return {
        "clarification_response": {"questions": questions, "answer": answer_text(decision)},
        "clarification_rounds": Attempts.of(state).clarification_rounds + 1,
        "needs_clarification": False,
    }
