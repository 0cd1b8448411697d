"""The raw LangGraph graphs the benchmarks compare against: a chain of nodes on a checkpointer."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph


def chain(saver: BaseCheckpointSaver[Any], state: type, names: list[str], make_node: Callable[[str], Any]) -> Any:
    """START → names[0] → … → names[-1] → END, each node made by `make_node(name)`, compiled on `saver`."""
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(state)
    for name in names:
        graph.add_node(name, make_node(name))
    graph.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph.compile(checkpointer=saver)
