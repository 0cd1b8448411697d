"""Prometheus metrics of one service instance (`GET /metrics`).

Each `Metrics` owns its registry instead of using the process-global one, so several service
instances (tests, benchmarks) can live in one process. Components receive it by injection and
call the small recording methods below; names and labels are documented in docs/operations.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

log = logging.getLogger(__name__)

__all__ = ["CONTENT_TYPE", "Metrics"]

disable_created_metrics()  # type: ignore[no-untyped-call]  # `*_created` series double the output; nobody reads them

#: Node and agent durations span milliseconds (routing nodes) to half an hour (agent steps).
_DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 15, 30, 60, 150, 300, 600, 1200, 1800, 3600)
_LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

Refresher = Callable[["Metrics"], Awaitable[None]]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.orchestrations = Counter(
            "jervis_orchestrations", "Orchestration segments ended, by outcome "
            "(done, error, cancelled, interrupted = waiting for the user, suspended = handed over on shutdown "
            "or a lost lease, or after a MongoDB outage longer than its wait; fenced = ended after another pod "
            "took the run over: not recorded or pushed).",
            ["outcome"], registry=r)
        self.rejections = Counter(
            "jervis_orchestration_rejections", "Requests refused with HTTP 429: every slot was busy.", registry=r)
        self.active_runs = Gauge("jervis_orchestrations_active", "Runs executing in this pod.", registry=r)
        self.node_duration = Histogram(
            "jervis_node_duration_seconds", "Wall time of one graph node, by node and outcome (ok / error).",
            ["node", "outcome"], buckets=_DURATION_BUCKETS, registry=r)
        self.llm_tokens = Counter(
            "jervis_llm_tokens", "LLM tokens by tier and kind (prompt / completion).", ["tier", "kind"], registry=r)
        self.llm_calls = Counter(
            "jervis_llm_calls", "LLM calls by tier and outcome (ok / error / heartbeat_timeout / queue_timeout = "
            "a local server stayed busy past LLM_QUEUE_WAIT_SECONDS; length / repetition = cut answers).",
            ["tier", "outcome"], registry=r)
        self.llm_latency = Histogram(
            "jervis_llm_call_duration_seconds", "Wall time of a successful streamed LLM call, by tier.",
            ["tier"], buckets=_LLM_BUCKETS, registry=r)
        self.llm_cost = Counter("jervis_llm_cost_usd", "Estimated LLM cost in USD, by tier.", ["tier"], registry=r)
        self.llm_queue_waits = Counter(
            "jervis_llm_queue_waits", "Local LLM calls the server did not take within LLM_QUEUE_CHECK_SECONDS "
            "(busy with another request, or still reading a long prompt) and that waited for it, by tier.",
            ["tier"], registry=r)
        self.llm_queue_waiting = Gauge(
            "jervis_llm_queue_waiting", "Local LLM calls waiting now for the server to take them.", registry=r)
        self.agent_jobs = Counter(
            "jervis_agent_jobs", "Agent steps (Kubernetes Jobs or local processes) by agent, mode "
            "(agent / commit / push) and outcome (success / failure / cancelled / error).",
            ["agent", "mode", "outcome"], registry=r)
        self.agent_duration = Histogram(
            "jervis_agent_job_duration_seconds", "Wall time of one agent step, by agent and mode.",
            ["agent", "mode"], buckets=_DURATION_BUCKETS, registry=r)
        self.agent_stalls = Counter(
            "jervis_agent_stalls", "Agent steps stopped by the progress watchdog (no output and no change in the "
            "workspace for AGENT_STALL_SECONDS), by agent.", ["agent"], registry=r)
        self.agent_jobs_not_deleted = Counter(
            "jervis_agent_jobs_not_deleted", "Agent Jobs the runner had to delete (cancel, timeout, stall, no start, "
            "an earlier attempt still running) but could not, retries included: the agent may run on until its "
            "activeDeadlineSeconds. By agent.", ["agent"], registry=r)
        self.push_failures = Counter(
            "jervis_kotlin_push_failures", "Pushes to the Kotlin server given up, by endpoint: expired in the outbox "
            "before Kotlin acknowledged them, or lost from memory while MongoDB refused writes.",
            ["endpoint"], registry=r)
        self.push_deliveries = Counter(
            "jervis_kotlin_push_deliveries", "Pushes Kotlin acknowledged (any answer below 500), by endpoint.",
            ["endpoint"], registry=r)
        self.push_attempt_failures = Counter(
            "jervis_kotlin_push_attempt_failures", "Push attempts that failed (connection error, timeout, HTTP 5xx) "
            "and are retried with backoff, by endpoint.", ["endpoint"], registry=r)
        self.outbox_depth = Gauge(
            "jervis_outbox_depth", "Pushes waiting in the MongoDB outbox (all pods) at scrape time.", registry=r)
        self.outbox_oldest_age = Gauge(
            "jervis_outbox_oldest_age_seconds", "Age of the oldest push waiting in the outbox at scrape time "
            "(0 when none waits).", registry=r)
        self.outbox_unwritten = Gauge(
            "jervis_outbox_unwritten", "Pushes this pod holds in memory because MongoDB has not taken them yet.",
            registry=r)
        self.lock_slots = Gauge(
            "jervis_lock_slots", "Orchestration lock slots (MongoDB) by state at scrape time: "
            "held_here (this pod), held_elsewhere, stale (holder stopped heart-beating), free.",
            ["state"], registry=r)
        self.lock_lost = Counter(
            "jervis_lock_lost", "Runs stopped because this pod lost their lock slot.", registry=r)
        self.runs_adopted = Counter(
            "jervis_runs_adopted", "Runs of a dead or restarted pod this pod took over and continued.", registry=r)
        self.runs_reannounced = Counter(
            "jervis_runs_reannounced", "Ended runs whose status push a crash lost, pushed again by recovery.",
            registry=r)
        self.answers_refused = Counter(
            "jervis_answers_refused", "Answers to a question that was already answered (409).", registry=r)
        self.mongodb_waits = Gauge(
            "jervis_mongodb_waits", "Runs (and run-record writes) of this pod waiting for an unreachable MongoDB "
            "to answer again; each continues from its last checkpoint when it does.", registry=r)
        self._refreshers: list[Refresher] = []

    # --- recording ---------------------------------------------------------------------------

    def orchestration_ended(self, outcome: str) -> None:
        self.orchestrations.labels(outcome).inc()

    def node_finished(self, node: str, seconds: float, *, failed: bool) -> None:
        self.node_duration.labels(node, "error" if failed else "ok").observe(seconds)

    def llm_call(self, tier: str, outcome: str, *, seconds: float | None = None, prompt_tokens: int = 0,
                 completion_tokens: int = 0, cost_usd: float = 0.0) -> None:
        self.llm_calls.labels(tier, outcome).inc()
        if seconds is not None:
            self.llm_latency.labels(tier).observe(seconds)
        if prompt_tokens:
            self.llm_tokens.labels(tier, "prompt").inc(prompt_tokens)
        if completion_tokens:
            self.llm_tokens.labels(tier, "completion").inc(completion_tokens)
        if cost_usd:
            self.llm_cost.labels(tier).inc(cost_usd)

    def llm_queue_wait(self, tier: str, waiting: bool) -> None:
        """A local call started (`waiting`) or stopped waiting for the server to take it."""
        if waiting:
            self.llm_queue_waits.labels(tier).inc()
            self.llm_queue_waiting.inc()
        else:
            self.llm_queue_waiting.dec()

    def agent_job(self, agent: str, mode: str, outcome: str, seconds: float) -> None:
        self.agent_jobs.labels(agent, mode, outcome).inc()
        self.agent_duration.labels(agent, mode).observe(seconds)

    def agent_stalled(self, agent: str) -> None:
        self.agent_stalls.labels(agent).inc()

    def agent_job_not_deleted(self, agent: str) -> None:
        self.agent_jobs_not_deleted.labels(agent).inc()

    def push_failed(self, endpoint: str) -> None:
        self.push_failures.labels(endpoint).inc()

    def push_delivered(self, endpoint: str) -> None:
        self.push_deliveries.labels(endpoint).inc()

    def push_attempt_failed(self, endpoint: str) -> None:
        self.push_attempt_failures.labels(endpoint).inc()

    def set_outbox(self, depth: int, oldest_age_seconds: float) -> None:
        self.outbox_depth.set(depth)
        self.outbox_oldest_age.set(max(0.0, oldest_age_seconds))

    def set_lock_slots(self, slots: Iterable[dict[str, Any]], pod_id: str) -> None:
        counts = dict.fromkeys(("held_here", "held_elsewhere", "stale", "free"), 0)
        for slot in slots:
            holder = slot.get("locked_by")
            state = ("free" if holder is None else "stale" if slot.get("stale")
                     else "held_here" if holder == pod_id else "held_elsewhere")
            counts[state] += 1
        for state, count in counts.items():
            self.lock_slots.labels(state).set(count)

    # --- exposition --------------------------------------------------------------------------

    def on_scrape(self, refresher: Refresher) -> None:
        """Values read from elsewhere (MongoDB) when scraped rather than tracked continuously."""
        self._refreshers.append(refresher)

    async def render(self) -> bytes:
        for refresher in self._refreshers:
            try:
                await refresher(self)
            except Exception as exc:  # a scrape must not fail because MongoDB is down
                log.warning("metrics refresh failed: %s", exc)
        return generate_latest(self.registry)
