"""Metrics registry: recording helpers and the exposition a scrape returns."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from app.observability.metrics import Metrics


async def scrape(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = (await metrics.render()).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


async def test_recorded_events_appear_with_their_labels() -> None:
    metrics = Metrics()
    metrics.orchestration_ended("done")
    metrics.orchestration_ended("done")
    metrics.node_finished("intake", 0.02, failed=False)
    metrics.llm_call("LOCAL_FAST", "ok", seconds=0.5, prompt_tokens=120, completion_tokens=30, cost_usd=0.0)
    metrics.llm_call("CLOUD_REASONING", "error")
    metrics.agent_job("aider", "agent", "success", 12.0)
    metrics.push_failed("/internal/orchestrator-status")
    samples = await scrape(metrics)
    assert samples[("jervis_orchestrations_total", (("outcome", "done"),))] == 2
    assert samples[("jervis_node_duration_seconds_count", (("node", "intake"), ("outcome", "ok")))] == 1
    assert samples[("jervis_llm_tokens_total", (("kind", "prompt"), ("tier", "LOCAL_FAST")))] == 120
    assert samples[("jervis_llm_tokens_total", (("kind", "completion"), ("tier", "LOCAL_FAST")))] == 30
    assert samples[("jervis_llm_calls_total", (("outcome", "error"), ("tier", "CLOUD_REASONING")))] == 1
    assert samples[("jervis_llm_call_duration_seconds_sum", (("tier", "LOCAL_FAST"),))] == 0.5
    assert samples[("jervis_agent_jobs_total", (("agent", "aider"), ("mode", "agent"), ("outcome", "success")))] == 1
    assert samples[("jervis_kotlin_push_failures_total", (("endpoint", "/internal/orchestrator-status"),))] == 1
    assert not any(name.endswith("_created") for name, _ in samples)


async def test_lock_slots_are_classified_at_scrape_time() -> None:
    metrics = Metrics()
    slots = [
        {"locked_by": "pod-a", "stale": False},
        {"locked_by": "pod-b", "stale": False},
        {"locked_by": "pod-c", "stale": True},
        {"locked_by": None, "stale": False},
        {"locked_by": None, "stale": False},
    ]

    async def refresh(m: Metrics) -> None:
        m.set_lock_slots(slots, "pod-a")

    metrics.on_scrape(refresh)
    samples = await scrape(metrics)
    states = {labels[0][1]: value for (name, labels), value in samples.items() if name == "jervis_lock_slots"}
    assert states == {"held_here": 1, "held_elsewhere": 1, "stale": 1, "free": 2}
    slots[3]["locked_by"] = "pod-a"  # the next scrape reads the new state
    assert (await scrape(metrics))[("jervis_lock_slots", (("state", "held_here"),))] == 2


async def test_a_failing_refresh_does_not_fail_the_scrape() -> None:
    metrics = Metrics()

    async def broken(_: Metrics) -> None:
        raise ConnectionError("MongoDB is down")

    metrics.on_scrape(broken)
    metrics.orchestration_ended("error")
    assert (await scrape(metrics))[("jervis_orchestrations_total", (("outcome", "error"),))] == 1


def test_two_instances_do_not_share_a_registry() -> None:
    first, second = Metrics(), Metrics()
    first.orchestration_ended("done")
    assert second.orchestrations.labels("done")._value.get() == 0


async def test_outbox_gauges_are_read_at_scrape_time() -> None:
    metrics = Metrics()
    depth = [3]

    async def refresh(m: Metrics) -> None:
        m.set_outbox(depth[0], 12.5 if depth[0] else -1.0)

    metrics.on_scrape(refresh)
    samples = await scrape(metrics)
    assert samples[("jervis_outbox_depth", ())] == 3 and samples[("jervis_outbox_oldest_age_seconds", ())] == 12.5
    depth[0] = 0
    samples = await scrape(metrics)
    assert samples[("jervis_outbox_depth", ())] == 0 and samples[("jervis_outbox_oldest_age_seconds", ())] == 0
