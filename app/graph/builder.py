"""The orchestration graph (spec §5): nodes and edges only. The lifespan compiles it with the
MongoDB checkpointer; tests compile it with an in-memory one."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from app.graph import routing
from app.graph.context import RunContext
from app.graph.nodes.advance import advance_goal, advance_step
from app.graph.nodes.approve_plan import approve_plan
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
from app.graph.nodes.respond import respond
from app.graph.nodes.select_goal import select_goal
from app.graph.state import OrchestratorInput, OrchestratorState

NODES = (
    intake, clarify, evidence_pack, respond, plan, plan_epic, design, approve_plan, select_goal, plan_steps,
    execute_step, evaluate, advance_step, advance_goal, git_operations, finalize,
)
NODE_NAMES = frozenset(node.__name__ for node in NODES)


def build_graph() -> StateGraph:
    graph = StateGraph(OrchestratorState, context_schema=RunContext, input_schema=OrchestratorInput)
    for node in NODES:
        graph.add_node(node.__name__, node)
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
    graph.add_edge("execute_step", "evaluate")
    graph.add_conditional_edges("evaluate", routing.route_after_evaluate)
    graph.add_edge("advance_step", "execute_step")
    graph.add_edge("advance_goal", "select_goal")
    graph.add_edge("git_operations", "finalize")
    graph.add_edge("finalize", END)
    return graph
