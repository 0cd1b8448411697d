"""`HealthChecker.readiness`: the readiness probe's rule, with hand-written stand-ins for MongoDB,
the KB and the run manager (the route on the real app: tests/api/test_health.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pymongo.errors import ServerSelectionTimeoutError

from app.config import Settings
from app.health import HealthChecker


@dataclass
class FakeAdmin:
    down: bool = False

    async def command(self, name: str) -> dict[str, Any]:
        if self.down:
            raise ServerSelectionTimeoutError("no servers")
        return {"ok": 1}


@dataclass
class FakeMongo:
    admin: FakeAdmin = field(default_factory=FakeAdmin)


@dataclass
class FakeRuns:
    """What the checker reads of the run manager; `accepting` turns False when its shutdown begins."""
    accepting: bool = True
    busy: bool = False
    active_count: int = 0


class FakeKb:
    async def health(self) -> None:
        return None


def checker(mongo: FakeMongo, runs: FakeRuns) -> HealthChecker:
    return HealthChecker(settings=Settings(health_cache_seconds=0), mongo=mongo, http=None, kb=FakeKb(),  # type: ignore[arg-type]
                         runs=runs, llm=None)  # type: ignore[arg-type]


async def test_ready_when_mongodb_answers_and_the_pod_takes_work() -> None:
    ready, report = await checker(FakeMongo(), FakeRuns()).readiness()
    assert ready and report["status"] == "ready" and report["accepting_work"] is True
    assert report["mongodb"]["status"] == "ok"


async def test_not_ready_once_shutdown_began_though_mongodb_answers() -> None:
    runs = FakeRuns()
    health = checker(FakeMongo(), runs)
    runs.accepting = False  # what RunManager.shutdown does first (Admission.stop_accepting)
    ready, report = await health.readiness()
    assert not ready and report["status"] == "not_ready" and report["accepting_work"] is False
    assert report["mongodb"]["status"] == "ok"


async def test_not_ready_while_mongodb_is_down() -> None:
    ready, report = await checker(FakeMongo(FakeAdmin(down=True)), FakeRuns()).readiness()
    assert not ready and report["accepting_work"] is True
    assert report["mongodb"]["status"] == "down" and "ServerSelectionTimeoutError" in report["mongodb"]["error"]
