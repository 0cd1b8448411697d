"""Every runner behind one wrapper: agent steps counted by agent, mode and outcome, and the agent's
output redacted, so both runners report alike.

Agent output is the likeliest place for a secret to surface (an agent echoing its `GIT_TOKEN`, a
provider error quoting a key), and from here it goes everywhere: the run's stream, the context
store, the graph state and the prompts of later LLM calls. Redacting it once, where it enters the
orchestrator, keeps every one of those clean.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from app.agents.base import AgentJob, AgentResult, AgentRunner, LogSink, Prepare
from app.observability.metrics import Metrics
from app.observability.redaction import no_redaction


class MeteredRunner:
    def __init__(self, inner: AgentRunner, metrics: Metrics, *, redact: Callable[[str], str] = no_redaction) -> None:
        self._inner = inner
        self._metrics = metrics
        self._redact = redact

    def program(self, agent_type: str) -> str:
        return self._inner.program(agent_type)

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        started = time.monotonic()
        outcome = "error"
        sink = None if on_log is None else self._redacted(on_log)
        try:
            result = await self._inner.run(job, prepare=prepare, on_log=sink)
            outcome = "success" if result.success else "failure"
            return result.model_copy(update={"summary": self._redact(result.summary),
                                             "log_tail": self._redact(result.log_tail)})
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self._metrics.agent_job(job.agent_type, job.mode, outcome, time.monotonic() - started)

    def _redacted(self, on_log: LogSink) -> LogSink:
        def sink(line: str) -> None:
            on_log(self._redact(line))

        return sink
