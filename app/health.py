"""Health report: cheap dependency checks, cached for a few seconds.

`status` is "ok" unless MongoDB is unreachable: without it no run can be checkpointed, so
Kotlin must not dispatch. The same rule, plus "not shutting down", is the Kubernetes readiness
probe; liveness asks only that the process serves requests, so a MongoDB outage takes the pod
out of the Service without restarting it. The KB and each LLM tier (ONLINE / OFFLINE /
API_ERROR / BUSY) are reported but do not make the service unhealthy or unready (the KB is
optional for a run; an LLM outage escalates or surfaces as a run error naming the tier; a BUSY
local model, one serving another client, takes a run's calls in turn). `warnings` lists what
works but is not as configured for: a cloud tier whose calls the dollar budget cannot price.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from pymongo import AsyncMongoClient

from app.agents.factory import describe_agents
from app.agents.sandbox import AgentSandbox
from app.clients.knowledge_base import KnowledgeBaseClient
from app.config import Settings
from app.llm.health import ProviderHealth
from app.persistence.mongo import ping
from app.runs.manager import RunManager
from app.runtime.listen import listen_warnings

Check = Callable[[], Awaitable[Any]]


class HealthChecker:
    def __init__(self, *, settings: Settings, mongo: AsyncMongoClient[Any], http: httpx.AsyncClient,
                 kb: KnowledgeBaseClient, runs: RunManager, llm: ProviderHealth,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._mongo = mongo
        self._http = http
        self._kb = kb
        self._runs = runs
        self._llm_health = llm
        self._clock = clock
        self._cached: tuple[float, dict[str, Any]] | None = None
        self._sandbox = AgentSandbox(settings, os.environ, data_root=settings.data_root)
        self._lock = asyncio.Lock()

    async def report(self) -> dict[str, Any]:
        dependencies, tiers = await asyncio.gather(self._dependencies(), self._llm_health.report())
        return {
            "status": "ok" if dependencies["mongodb"]["status"] == "ok" else "degraded",
            "service": "orchestrator",
            "busy": self._runs.busy,
            "active_runs": self._runs.active_count,
            "max_concurrent_orchestrations": self._settings.max_concurrent_orchestrations,
            "agent_runner": self._settings.agent_runner,
            "agents": describe_agents(self._settings),  # a few stat calls: the install state now
            "agent_sandbox": await self._sandbox.describe(),  # probed once per process
            "pod_id": self._settings.pod_id,
            "dependencies": dependencies,
            "llm_tiers": tiers,
            "warnings": [*listen_warnings(self._settings), *self._llm_health.warnings()],
        }

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        mongodb = (await self._dependencies())["mongodb"]
        accepting = self._runs.accepting
        ready = mongodb["status"] == "ok" and accepting
        return ready, {"status": "ready" if ready else "not_ready", "mongodb": mongodb,
                       "accepting_work": accepting}

    async def _dependencies(self) -> dict[str, Any]:
        async with self._lock:
            now = self._clock()
            if self._cached and now - self._cached[0] < self._settings.health_cache_seconds:
                return self._cached[1]
            checks: dict[str, Check] = {"mongodb": lambda: ping(self._mongo), "knowledgebase": self._kb.health}
            results = await asyncio.gather(*(self._timed(check) for check in checks.values()))
            report = dict(zip(checks, results, strict=True))
            self._cached = (now, report)
            return report

    @staticmethod
    async def _timed(check: Check) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            await asyncio.wait_for(check(), 3.0)
        except Exception as exc:
            return {"status": "down", "error": f"{type(exc).__name__}: {exc}"[:200]}
        return {"status": "ok", "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
