"""Counts agent steps by agent, mode and outcome around any runner, so both runners report alike."""

from __future__ import annotations

import asyncio
import time

from app.agents.base import AgentJob, AgentResult, AgentRunner, LogSink, Prepare
from app.observability.metrics import Metrics


class MeteredRunner:
    def __init__(self, inner: AgentRunner, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        started = time.monotonic()
        outcome = "error"
        try:
            result = await self._inner.run(job, prepare=prepare, on_log=on_log)
            outcome = "success" if result.success else "failure"
            return result
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self._metrics.agent_job(job.agent_type, job.mode, outcome, time.monotonic() - started)
