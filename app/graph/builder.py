"""The orchestration graph (spec §5): nodes and edges only. The lifespan compiles it with the
MongoDB checkpointer; tests compile it with an in-memory one.

The work loop recovers instead of giving up at the first failure: an unacceptable evaluation
goes to `reflect`, whose decision retries the step (`execute_step`), replans (`replan`), asks
the user (`ask_user`), skips to the next step, or stops (`git_operations` offers the finished
work, then `finalize`).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

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
from app.graph.nodes.git_operations import git_operations
from app.graph.nodes.intake import intake
from app.graph.nodes.plan import plan
from app.graph.nodes.plan_epic import design, plan_epic
from app.graph.nodes.plan_steps import plan_steps
from app.graph.nodes.reflect import reflect
from app.graph.nodes.replan import replan
from app.graph.nodes.respond import respond
from app.graph.nodes.review_epic import review_epic
from app.graph.nodes.select_goal import select_goal
from app.graph.state import OrchestratorInput, OrchestratorState
from app.graph.writes import only_changes

NODES: tuple[Node, ...] = (
    intake, clarify, evidence_pack, respond, plan, plan_epic, design, approve_plan, select_goal, plan_steps,
    execute_step, evaluate, reflect, ask_user, replan, advance_step, advance_goal, review_epic, git_operations,
    finalize,
)
NODE_NAMES = frozenset(node.__name__ for node in NODES)
#: Nodes inside the work loop whose expected failures (budget, LLM) halt the run instead of crashing it.
HALTING = frozenset({"plan_steps", "execute_step", "evaluate", "replan"})


def build_graph() -> StateGraph[OrchestratorState, RunContext, OrchestratorInput, OrchestratorState]:
    graph = StateGraph(OrchestratorState, context_schema=RunContext, input_schema=OrchestratorInput)
    for node in NODES:
        wrapped = in_run_language(halting(node) if node.__name__ in HALTING else node)
        graph.add_node(node.__name__, only_changes(wrapped))
    graph.add_edge(START, "intake")
    graph.add_conditional_edges("intake", routing.route_after_intake)
    graph.add_edge("clarify", "intake")
    graph.add_conditional_edges("evidence_pack", routing.route_by_category)
    graph.add_edge("respond", "finalize")
    graph.add_conditional_edges("plan", routing.route_after_plan)
    graph.add_edge("plan_epic", "approve_plan")
    graph.add_edge("design", "approve_plan")
    graph.add_conditional_edges("approve_plan", routing.route_after_approval)
    graph.add_edge("select_goal", "plan_steps")
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
