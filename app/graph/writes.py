"""A node's update without the keys it does not change.

Every key a node returns is a write the checkpointer stores as a document of its own
(MongoDBSaver: one upsert per key, at every step) and that the next checkpoint serializes again.
Nodes return whole records for readability: intake eleven keys, most of them empty for a plain
question; advance_step resets counters that mostly hold their reset values already. A key whose
value the state already holds, an empty value (None, "", [], {}, False) for a key the state does
not hold (nodes read state with `.get`, so absent and empty read alike), and an empty list for
an appending key change nothing: they are left out. That halves the writes of an advice run.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from app.graph.guards import Node
from app.graph.run_state import NodeRuntime
from app.graph.state import OrchestratorState, reducers


def _empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)


def changes(state: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`update` less what would leave the state as it is."""
    appending = reducers()
    kept: dict[str, Any] = {}
    for key, value in update.items():
        if key in appending:
            if not (isinstance(value, list) and not value):
                kept[key] = value
        elif key in state:
            if state[key] != value:
                kept[key] = value
        elif not _empty(value):
            kept[key] = value
    return kept


def only_changes(node: Node) -> Node:
    """`node` returning only what it changes (a non-dict result, e.g. a Command, passes as is)."""
    @functools.wraps(node)
    async def compact(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
        update = await node(state, runtime)
        return changes(state, update) if isinstance(update, dict) else update
    return compact
