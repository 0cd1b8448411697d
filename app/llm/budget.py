"""Per-orchestration budgets (the BudgetTracker of the earlier designs): tokens, USD and time.

Usage is counted per node and tier. Crossing `warn_fraction` of a limit warns once; a call made
with a limit already used up raises `BudgetExceededError` before it spends anything more.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from app.texts import texts


class BudgetExceededError(RuntimeError):
    """A limit of this orchestration is used up; the message is in the run's language."""


class BudgetLimits(BaseModel):
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None

    def merged(self, override: BudgetLimits | None) -> BudgetLimits:
        if override is None:
            return self
        return BudgetLimits(**{k: v if v is not None else getattr(self, k)
                               for k, v in override.model_dump().items()})


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    calls: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd
        self.seconds += other.seconds
        self.calls += other.calls


Warn = Callable[[str, float], None]


@dataclass
class BudgetTracker:
    limits: BudgetLimits
    warn_fraction: float = 0.8
    on_warning: Warn | None = None
    elapsed_before: float = 0.0
    """Run time of earlier segments (a resumed run continues its clock, waiting excluded)."""
    by_key: dict[str, Usage] = field(default_factory=dict)
    node_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time inside each node, all its runs together (where a run's time went, for people)."""
    warned: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    language: str = "en"
    """The run's language: the exhausted error is shown to the user (report, gate, Kotlin)."""

    def total(self) -> Usage:
        total = Usage()
        for usage in self.by_key.values():
            total.add(usage)
        return total

    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self.started

    def fractions(self) -> dict[str, float]:
        total = self.total()
        used = {"tokens": (total.tokens, self.limits.max_tokens),
                "cost": (total.cost_usd, self.limits.max_cost_usd),
                "time": (self.elapsed(), self.limits.max_seconds)}
        return {name: value / limit for name, (value, limit) in used.items() if limit}

    def check(self) -> None:
        """Before a call: refuse once any limit is used up."""
        over = [name for name, fraction in self.fractions().items() if fraction >= 1.0]
        if over:
            t = texts(self.language)
            raise BudgetExceededError(t.budget_exhausted.format(
                dimensions=", ".join(t.dimension(name) for name in over), usage=self.describe()))

    def record(self, node: str, tier: str, usage: Usage) -> None:
        self.by_key.setdefault(f"{node}/{tier}", Usage()).add(usage)
        for name, fraction in self.fractions().items():
            if fraction >= self.warn_fraction and name not in self.warned:
                self.warned.add(name)
                if self.on_warning is not None:
                    self.on_warning(name, fraction)

    def record_node(self, node: str, seconds: float) -> None:
        """A node finished after `seconds` (the run driver calls it for every node)."""
        self.node_seconds[node] = self.node_seconds.get(node, 0.0) + seconds

    def by_node(self) -> dict[str, dict[str, float | int]]:
        """Per node, in the order the run reached them: wall seconds, model calls, tokens, model seconds."""
        nodes: dict[str, dict[str, float | int]] = {
            node: {"seconds": round(seconds, 3), "llm_calls": 0, "llm_tokens": 0, "llm_seconds": 0.0}
            for node, seconds in self.node_seconds.items()}
        for key, usage in self.by_key.items():
            figures = nodes.setdefault(key.split("/", 1)[0], {"seconds": 0.0, "llm_calls": 0, "llm_tokens": 0,
                                                              "llm_seconds": 0.0})
            figures["llm_calls"] += usage.calls
            figures["llm_tokens"] += usage.tokens
            figures["llm_seconds"] = round(figures["llm_seconds"] + usage.seconds, 3)
        return nodes

    def extend(self, factor: float) -> None:
        """The user approved going on: every limit becomes `factor` × what it or the usage is
        (whichever is larger), so there is real room again; warnings may come again."""
        total = self.total()
        used = {"max_tokens": total.tokens, "max_cost_usd": total.cost_usd, "max_seconds": self.elapsed()}
        self.limits = BudgetLimits.model_validate(
            {k: (type(v)(max(v, used[k]) * factor) if v is not None else None)
             for k, v in self.limits.model_dump().items()})
        self.warned.clear()

    def describe(self) -> str:
        """Tokens, cost and time so far, in the run's language."""
        total = self.total()
        return texts(self.language).usage_figures.format(tokens=total.tokens, cost=f"{total.cost_usd:.4f}",
                                                         seconds=f"{self.elapsed():.0f}")

    def snapshot(self) -> dict[str, Any]:
        total = self.total()
        return {
            "prompt_tokens": total.prompt_tokens, "completion_tokens": total.completion_tokens,
            "tokens": total.tokens, "cost_usd": round(total.cost_usd, 6), "seconds": round(self.elapsed(), 3),
            "llm_calls": total.calls,
            "by_node_tier": {key: {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                                   "cost_usd": round(u.cost_usd, 6), "seconds": round(u.seconds, 3), "calls": u.calls}
                             for key, u in self.by_key.items()},
            "limits": self.limits.model_dump(),
            "node_seconds": {node: round(seconds, 3) for node, seconds in self.node_seconds.items()},
        }

    def restore(self, snapshot: dict[str, Any] | None) -> None:
        """Continue the counts of earlier segments of the same run."""
        if not snapshot:
            return
        self.elapsed_before = float(snapshot.get("seconds", 0.0))
        if snapshot.get("limits"):
            self.limits = BudgetLimits.model_validate(snapshot["limits"])
        for node, seconds in (snapshot.get("node_seconds") or {}).items():
            self.node_seconds[node] = float(seconds)
        for key, usage in (snapshot.get("by_node_tier") or {}).items():
            self.by_key[key] = Usage(prompt_tokens=int(usage.get("prompt_tokens", 0)),
                                     completion_tokens=int(usage.get("completion_tokens", 0)),
                                     cost_usd=float(usage.get("cost_usd", 0.0)),
                                     seconds=float(usage.get("seconds", 0.0)), calls=int(usage.get("calls", 0)))


def node_usage(snapshot: dict[str, Any] | None) -> dict[str, dict[str, float | int]]:
    """`BudgetTracker.by_node` of a stored usage snapshot (the run record's)."""
    tracker = BudgetTracker(BudgetLimits())
    tracker.restore(snapshot)
    return tracker.by_node()


def describe_nodes(snapshot: dict[str, Any] | None) -> str:
    """Where a run's time went, on one line: `intake 0.1 s; plan_steps 31.2 s (1 call, 812 tokens,
    30.9 s); execute_step 25.3 s`. Nodes that called a model show their calls, tokens and model time."""
    parts = []
    for node, figures in node_usage(snapshot).items():
        text = f"{node} {figures['seconds']:.1f} s"
        if figures["llm_calls"]:
            calls = int(figures["llm_calls"])
            text += (f" ({calls} call{'s' if calls != 1 else ''}, {int(figures['llm_tokens'])} tokens, "
                     f"{figures['llm_seconds']:.1f} s)")
        elif figures["llm_tokens"]:  # an agent's own model use, as it reported it
            text += f" ({int(figures['llm_tokens'])} tokens)"
        parts.append(text)
    return "; ".join(parts)
