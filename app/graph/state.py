"""Orchestrator state (spec §6). Checkpointed after every node, so it holds references and
short texts only: agent logs, KB chunks and diffs live in the context store or on the volume."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


class OrchestratorInput(TypedDict, total=False):
    """What a run starts from (built from the Kotlin request)."""

    thread_id: str
    task: dict[str, Any]
    """`CodingTask` dump: id, client_id, project_id, workspace_path, query, agent_preference."""
    rules: dict[str, Any]
    environment: dict[str, Any] | None
    jervis_project_id: str | None
    client_name: str | None
    project_name: str | None
    chat_history: dict[str, Any] | None
    budget_limits: dict[str, Any] | None
    """Token / USD / time limits of this run (settings merged with the request's)."""


class OrchestratorState(OrchestratorInput, total=False):
    # intake
    task_category: str | None
    task_action: str | None
    external_refs: list[str]
    task_complexity: str | None
    needs_clarification: bool
    clarification_questions: list[str]
    clarification_response: dict[str, Any] | None
    clarification_rounds: int
    project_context: str | None
    kb_results: list[dict[str, str]]
    """Task-relevant KB hits found by intake ({source, content[:300]}), reused by evidence_pack."""
    kb_warnings: list[str]
    allow_cloud_prompt: bool
    # evidence
    evidence_pack: dict[str, Any] | None
    # goals and steps
    goals: list[dict[str, Any]]
    current_goal_index: int
    steps: list[dict[str, Any]]
    current_step_index: int
    step_results: Annotated[list[dict[str, Any]], operator.add]
    goal_summaries: Annotated[list[dict[str, Any]], operator.add]
    evaluation: dict[str, Any] | None
    # results
    branch: str | None
    commit_sha: str | None
    git_outcome: str | None
    """"committed", "pushed", "commit_rejected", "push_rejected", "no_changes", "not_a_repo"."""
    final_result: str | None
    artifacts: list[str]
    error: str | None
