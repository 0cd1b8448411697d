"""What nodes get through `Runtime[RunContext]`: injected services, never module globals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.agents.snapshots import WorkspaceSnapshots
from app.agents.worktrees import GoalWorktrees
from app.config import Settings
from app.kb.prefetch import ProjectContextPrefetch

if TYPE_CHECKING:
    from app.agents.base import AgentRunner
    from app.agents.workspace import WorkspaceManager
    from app.clients.knowledge_base import KnowledgeBaseClient
    from app.clients.kotlin import KotlinClient
    from app.llm.provider import Llm
    from app.persistence.context_store import ContextStore
    from app.persistence.project_memory import ProjectMemory


@dataclass(frozen=True, kw_only=True)
class RunContext:
    settings: Settings
    llm: Llm
    """The model behind the approval gate (`llm_gate.ApprovingLlm`): a call that needs the user's
    approval interrupts the node instead of failing."""
    kb: KnowledgeBaseClient
    kotlin: KotlinClient
    context_store: ContextStore
    project_memory: ProjectMemory
    """What the user told earlier runs about the project (the test command `require_tests` asked for)."""
    runner: AgentRunner
    workspaces: WorkspaceManager
    snapshots: WorkspaceSnapshots = field(default_factory=WorkspaceSnapshots)
    """Each step's starting point in its workspace: what a retry, skip or stop goes back to."""
    worktrees: GoalWorktrees = field(default_factory=GoalWorktrees)
    """The git worktrees of goals running side by side, and the merge of their work (merge_wave)."""
    kb_prefetch: ProjectContextPrefetch = field(default_factory=ProjectContextPrefetch)
    """intake's KB lookup of each new run, started by the run driver at dispatch."""
