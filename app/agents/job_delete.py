"""Deleting an agent's Job, retried: a delete that fails leaves the agent running, and changing
its workspace, until its `activeDeadlineSeconds`, so it is never swallowed.

`KubernetesApi` already retries a transient answer (429, 5xx) within one call; this retries the
call itself (a refused or unreachable API server, a call that exhausted its own retries) a few
times with backoff, and hands back the last error when none succeeds, for the runner to log,
count and report. A 404 is no failure: the Job is already gone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from app.agents.k8s_client import KubernetesApi, KubernetesError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeleteRetry:
    attempts: int = 3
    """Tries in all, the first included."""
    backoff_seconds: float = 1.0
    """Wait before the second try; doubled before each further one."""


async def delete_job(api: KubernetesApi, name: str, *, retry: DeleteRetry, deadline_seconds: float) -> str | None:
    """None once the Job is deleted (or was already gone); else the last error. No try starts
    later than `deadline_seconds` after the first (whose own length the client's timeout bounds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_seconds
    error = ""
    for attempt in range(1, retry.attempts + 1):
        try:
            await api.delete_job(name)
        except Exception as exc:  # KubernetesError, or what the client raised past its own retries
            error = str(exc) if isinstance(exc, KubernetesError) else f"{type(exc).__name__}: {exc}"
        else:
            if attempt > 1:
                log.info("Job %s deleted at attempt %d", name, attempt)
            return None
        delay = retry.backoff_seconds * 2 ** (attempt - 1)
        if attempt == retry.attempts or loop.time() + delay > deadline:
            log.warning("deleting Job %s failed (attempt %d of %d): %s; giving up", name, attempt, retry.attempts,
                        error)
            return error
        log.warning("deleting Job %s failed (attempt %d of %d): %s; retrying in %g s", name, attempt, retry.attempts,
                    error, delay)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")
