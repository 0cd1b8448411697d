"""The Grafana dashboard (k8s/grafana-dashboard.json) asks only for series the service
exports: every metric name in its queries is one `Metrics` registers (a renamed metric would
leave a panel empty without anyone noticing)."""

from __future__ import annotations

import json
import re

from app.observability.metrics import Metrics
from tests.deploy.helpers import REPO_ROOT

DASHBOARD = REPO_ROOT / "k8s" / "grafana-dashboard.json"


def exported_series() -> set[str]:
    """Every series name the registry exposes: counters as `<name>_total`, histograms as `_bucket`,
    `_sum` and `_count`, gauges as they are (labelled families before their first sample too)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {family.name + suffix for family in Metrics().registry.collect()
            for suffix in suffixes.get(family.type, ("",))}


def test_every_query_of_the_dashboard_names_a_series_the_service_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for query in queries for name in re.findall(r"\bjervis_[a-z_]+", query)}
    assert len(queries) >= 15 and used
    missing = used - exported_series()
    assert not missing, f"the dashboard asks for series the service does not export: {sorted(missing)}"
    assert {"jervis_orchestrations_total", "jervis_outbox_depth", "jervis_llm_tokens_total",
            "jervis_agent_jobs_total", "jervis_node_duration_seconds_bucket"} <= used
