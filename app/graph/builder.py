"""The orchestration graph (spec §5): nodes and edges only. The lifespan compiles it with the
MongoDB checkpointer; tests compile it with an in-memory one.

The work loop recovers instead of giving up at the first failure: an unacceptable evaluation
goes to `reflect`, whose decision retries the step (`execute_step`), replans (`replan`), asks
the user (`ask_user`), skips to the next step, or stops (`git_operations` offers the finished
work, then `finalize`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from app.graph import routing
from app.graph.context import RunContext
from app.graph.guards import Node, halting, in_run_language
from app.graph.nodes.advance import advance_goal, advance_step
from app.graph.nodes.approve_plan import approve_plan
from app.graph.nodes.ask_user import ask_user
from app.graph.nodes.clarify import clarify
from app.graph.nodes.evaluate import evaluate
from app.graph.nodes.evidence_pack import evidence_pack
from app.graph.nodes.execute_step import execute_step
from app.graph.nodes.finalize import finalize
from app.graph.nodes.find_tests import find_tests
from app.graph.nodes.git_operations import git_operations
from app.graph.nodes.intake import intake
from app.graph.nodes.merge_wave import merge_wave
from app.graph.nodes.plan import plan
from app.graph.nodes.plan_epic import design, plan_epic
from app.graph.nodes.plan_steps import plan_steps
from app.graph.nodes.reflect import reflect
from app.graph.nodes.replan import replan
from app.graph.nodes.respond import respond
from app.graph.nodes.review_epic import review_epic
from app.graph.nodes.run_goal import goal_runner
from app.graph.nodes.select_goal import select_goal
from app.graph.state import OrchestratorInput, OrchestratorState
from app.graph.state_access import Setbacks
from app.graph.writes import only_changes

NODES: tuple[Node, ...] = (
    intake, clarify, evidence_pack, find_tests, respond, plan, plan_epic, design, approve_plan, select_goal, plan_steps,
    execute_step, evaluate, reflect, ask_user, replan, advance_step, advance_goal, merge_wave, review_epic,
    git_operations, finalize,
)
#: Nodes of the goal loop a goal of a wave runs in its worktree (`build_goal_graph`).
GOAL_LOOP = (plan_steps, execute_step, evaluate, reflect, advance_step, advance_goal)
NODE_NAMES = frozenset(node.__name__ for node in NODES) | {"run_goal"}
#: Where a new run starts.
ENTRY_NODE = "intake"
#: Nodes inside the work loop whose expected failures (budget, LLM) halt the run instead of crashing it.
HALTING = frozenset({"plan_steps", "execute_step", "evaluate", "replan"})


def _wrapped(node: Node) -> Node:
    return only_changes(in_run_language(halting(node) if node.__name__ in HALTING else node))


def _in_goal(route: Callable[[OrchestratorState], str]) -> Callable[[OrchestratorState], str]:
    """A route of the main loop inside a goal of a wave: the goal's end (its summary) where the
    main loop would go on to another goal or git; the end, unfinished, where it would halt, replan
    or ask the user (the goal then runs again on its own after the wave)."""
    def goal_route(state: OrchestratorState) -> str:
        target = route(state)
        if Setbacks.of(state).halt or target in ("replan", "ask_user", "finalize"):
            return END
        return "advance_goal" if target == "git_operations" else target
    goal_route.__name__ = f"{route.__name__}_in_goal"
    return goal_route


def build_goal_graph() -> StateGraph[OrchestratorState, RunContext, OrchestratorState, OrchestratorState]:
    """The goal loop alone, for a goal of a wave (`run_goal`): the main loop's nodes and routes."""
    graph = StateGraph(OrchestratorState, context_schema=RunContext)
    for node in GOAL_LOOP:
        graph.add_node(node.__name__, _wrapped(node))
    graph.add_edge(START, "plan_steps")
    graph.add_conditional_edges("plan_steps", _in_goal(routing.route_after_plan_steps))
    graph.add_conditional_edges("execute_step", _in_goal(routing.route_after_execute))
    graph.add_conditional_edges("evaluate", _in_goal(routing.route_after_evaluate))
    graph.add_conditional_edges("reflect", _in_goal(routing.route_recovery))
    graph.add_edge("advance_step", "execute_step")
    graph.add_edge("advance_goal", END)
    return graph


def build_graph(goal_graph: Pregel[Any, Any, Any, Any] | None = None,
                ) -> StateGraph[OrchestratorState, RunContext, OrchestratorInput, OrchestratorState]:
    """The orchestration graph; `goal_graph` is the compiled goal loop its waves run (by default
    `build_goal_graph().compile()`, which checkpoints with the run's checkpointer)."""
    graph = StateGraph(OrchestratorState, context_schema=RunContext, input_schema=OrchestratorInput)
    for node in NODES:
        graph.add_node(node.__name__, _wrapped(node))
    graph.add_node("run_goal", only_changes(in_run_language(goal_runner(goal_graph or build_goal_graph().compile()))))
    graph.add_edge(START, ENTRY_NODE)
    graph.add_conditional_edges("intake", routing.route_after_intake)
    graph.add_edge("clarify", "intake")
    graph.add_conditional_edges("evidence_pack", routing.route_by_category)
    graph.add_conditional_edges("find_tests", routing.route_after_find_tests)
    graph.add_edge("respond", "finalize")
    graph.add_conditional_edges("plan", routing.route_after_plan)
    graph.add_edge("plan_epic", "approve_plan")
    graph.add_edge("design", "approve_plan")
    graph.add_conditional_edges("approve_plan", routing.route_after_approval)
    graph.add_conditional_edges("select_goal", routing.route_after_select_goal, ["plan_steps", "run_goal"])
    graph.add_edge("run_goal", "merge_wave")
    graph.add_conditional_edges("merge_wave", routing.route_after_merge_wave)
    graph.add_conditional_edges("plan_steps", routing.route_after_plan_steps)
    graph.add_conditional_edges("execute_step", routing.route_after_execute)
    graph.add_conditional_edges("evaluate", routing.route_after_evaluate)
    graph.add_conditional_edges("reflect", routing.route_recovery)
    graph.add_conditional_edges("ask_user", routing.route_recovery)
    graph.add_conditional_edges("replan", routing.route_after_replan)
    graph.add_edge("advance_step", "execute_step")
    graph.add_conditional_edges("advance_goal", routing.route_after_advance_goal)
    graph.add_conditional_edges("review_epic", routing.route_after_review_epic)
    graph.add_conditional_edges("git_operations", routing.route_after_git)
    graph.add_edge("finalize", END)
    return graph
