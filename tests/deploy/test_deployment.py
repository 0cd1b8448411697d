"""The orchestrator's Deployment, Service, PodDisruptionBudget, ConfigMap and NetworkPolicy as written
in k8s/ (spec §19.2)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import uvicorn
from starlette.routing import Match

from app.api.router import api_router
from app.clients.delivery import DeliveryService
from app.clients.outbox import OutboxWriter
from app.config import Settings
from app.runtime.listen import allowed_host_names, check_listen
from app.serve import forwarded_allow_ips, graceful_shutdown_seconds
from tests.deploy.helpers import (
    K8S_DIR,
    NAMESPACE,
    REPO_ROOT,
    SETTINGS_ENV,
    STANDARD_ENV,
    Doc,
    find,
    load_file,
    resource_docs,
)

PORT = 8090


@pytest.fixture(scope="module")
def docs() -> list[Doc]:
    return resource_docs()


@pytest.fixture(scope="module")
def config(docs: list[Doc]) -> dict[str, str]:
    return find(docs, "ConfigMap", "jervis-orchestrator-config")["data"]


@pytest.fixture(scope="module")
def deployment(docs: list[Doc]) -> Doc:
    return find(docs, "Deployment", "jervis-orchestrator")


@pytest.fixture(scope="module")
def pod(deployment: Doc) -> Doc:
    template: Doc = deployment["spec"]["template"]
    return template


@pytest.fixture(scope="module")
def container(pod: Doc) -> Doc:
    [container] = pod["spec"]["containers"]
    return container


def port_number(container: Doc, port: Any) -> int:
    """A probe's or Service's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    [number] = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    return number


def test_probes_are_distinct_and_as_the_spec_says(container: Doc) -> None:
    live, ready, startup = container["livenessProbe"], container["readinessProbe"], container["startupProbe"]
    assert live["httpGet"]["path"] == "/health/live" and startup["httpGet"]["path"] == "/health/live"
    assert ready["httpGet"]["path"] == "/health/ready"
    assert (live["periodSeconds"], live["timeoutSeconds"]) == (30, 10)
    assert (ready["periodSeconds"], ready["timeoutSeconds"]) == (15, 10)
    for probe in (live, ready, startup):
        assert port_number(container, probe["httpGet"]["port"]) == PORT
    # The startup probe gives the app (litellm's import alone takes seconds) time before liveness.
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 60


def served(path: str) -> bool:
    """Whether the app's router has a GET route for `path` (matched as a request would be)."""
    scope = {"type": "http", "path": path, "method": "GET", "root_path": "", "headers": [], "query_string": b""}
    return any(route.matches(scope)[0] == Match.FULL for route in api_router.routes)


def test_probe_and_metrics_paths_are_routes_of_the_app(pod: Doc, container: Doc) -> None:
    paths = {container[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe", "startupProbe")}
    paths.add(pod["metadata"]["annotations"]["prometheus.io/path"])
    assert {path: served(path) for path in paths} == dict.fromkeys(paths, True)
    assert not served("/health/nope")


def test_resources_as_the_spec_says(container: Doc) -> None:
    assert container["resources"] == {"requests": {"memory": "256Mi", "cpu": "250m"},
                                      "limits": {"memory": "1Gi", "cpu": "2000m"}}


def test_runs_locked_down(pod: Doc, container: Doc) -> None:
    spec = pod["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"] and not security["capabilities"].get("add")
    assert spec.get("automountServiceAccountToken", True) is True, "the Job runner needs its API token"


def test_writable_paths_are_the_volumes(pod: Doc, container: Doc, config: dict[str, str], docs: list[Doc]) -> None:
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    claim = mounts[config["DATA_ROOT"]]["persistentVolumeClaim"]["claimName"]
    assert claim == config["PVC_CLAIM_NAME"] == "jervis-data-pvc"
    pvc = find(docs, "PersistentVolumeClaim", claim, NAMESPACE)
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], "agent Jobs on other nodes mount it too"
    # The agents' claim of that name: the same share, bound to the volume the operator makes (docs/deployment.md).
    agents = find(docs, "PersistentVolumeClaim", claim, config["AGENT_NAMESPACE"])
    assert agents["spec"]["accessModes"] == ["ReadWriteMany"] and agents["spec"]["storageClassName"] == ""
    assert "emptyDir" in mounts["/tmp"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["HOME"] == "/tmp" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_service_account_is_the_role_bindings_subject(pod: Doc, docs: list[Doc], deployment: Doc) -> None:
    [subject] = find(docs, "RoleBinding")["subjects"]
    assert pod["spec"]["serviceAccountName"] == subject["name"] == "jervis-orchestrator"
    assert subject["kind"] == "ServiceAccount" and subject["namespace"] == deployment["metadata"]["namespace"]
    assert find(docs, "ServiceAccount", subject["name"], NAMESPACE)


def test_agent_jobs_get_a_service_account_without_a_token(config: dict[str, str], docs: list[Doc]) -> None:
    account = find(docs, "ServiceAccount", config["AGENT_SERVICE_ACCOUNT"], config["AGENT_NAMESPACE"])
    assert account["automountServiceAccountToken"] is False


def test_two_replicas_replaced_one_at_a_time(deployment: Doc, pod: Doc) -> None:
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    [spread] = pod["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["maxSkew"] == 1
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway", "a preference: a one-node cluster still runs both"
    assert spread["labelSelector"] == spec["selector"]


def test_disruption_budget_lets_one_orchestrator_pod_go_at_a_time(docs: list[Doc], deployment: Doc, pod: Doc) -> None:
    budget = find(docs, "PodDisruptionBudget", "jervis-orchestrator")
    spec = budget["spec"]
    assert spec["selector"] == deployment["spec"]["selector"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    # maxUnavailable, not minAvailable: still one at a time when scaled up, and a drain can still
    # evict the only pod when scaled down to one.
    assert spec["maxUnavailable"] == 1 and "minAvailable" not in spec
    assert spec["maxUnavailable"] < deployment["spec"]["replicas"]
    # No pod is ready in a MongoDB outage; the default policy would then block every drain.
    assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def shutdown_budget(container: Doc, config: dict[str, str]) -> float:
    """Seconds from the pod's deletion to the app's exit, each stage at its bound: the preStop sleep,
    uvicorn's wait for open requests, the run's checkpoint grace, one MongoDB timeout for the
    suspension and lock release, then the outbox writer's and the delivery's drains."""
    sleep, seconds = container["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep == "sleep"
    env = {e["name"]: e.get("value") for e in container["env"]}

    def setting(name: str) -> float:
        return float(config.get(name.upper(), Settings.model_fields[name].default))

    def drain(stop: Any) -> float:
        return float(inspect.signature(stop).parameters["drain_seconds"].default)

    return (float(seconds) + float(env["UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN"]) + setting("shutdown_grace_seconds")
            + setting("mongodb_timeout_seconds") + drain(OutboxWriter.stop) + drain(DeliveryService.stop))


def test_graceful_shutdown_fits_the_grace_period(pod: Doc, container: Doc, config: dict[str, str]) -> None:
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    budget = shutdown_budget(container, config)
    assert budget == 50
    assert grace >= budget + 5, f"{grace} s of grace for a {budget} s stop: killed before the lock is released"


def test_a_stopping_pod_serves_until_the_service_forgot_it(container: Doc) -> None:
    """uvicorn stops listening at SIGTERM; the preStop sleep delays it while the endpoint removal
    reaches every node. The sleep must stay short (it is part of every rollout)."""
    assert container["lifecycle"]["preStop"] == {"exec": {"command": ["sleep", "5"]}}


def test_the_launcher_passes_uvicorns_bound_on_open_requests_on(container: Doc) -> None:
    """uvicorn's CLI reads UVICORN_*, uvicorn.run does not: the image's launcher (app.serve) passes it on."""
    [value] = [e["value"] for e in container["env"] if e["name"] == "UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN"]
    assert graceful_shutdown_seconds({"UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN": value}) == int(value) == 10
    assert graceful_shutdown_seconds({}) is None
    assert "--timeout-graceful-shutdown" not in (REPO_ROOT / "Dockerfile").read_text(), "the variable decides"


def test_forwarded_headers_are_believed_from_the_configured_proxies_only(config: dict[str, str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ConfigMap names whom to believe (TRUSTED_PROXIES, none here), never everyone; uvicorn's
    FORWARDED_ALLOW_IPS (loopback by default, where agents are) is neither set nor read."""
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    assert "FORWARDED_ALLOW_IPS" not in config
    value = config["TRUSTED_PROXIES"]
    assert "*" not in value
    monkeypatch.setenv("TRUSTED_PROXIES", value)
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")
    assert forwarded_allow_ips(Settings()) == []
    assert uvicorn.Config("app.main:app", proxy_headers=True, forwarded_allow_ips=[]).forwarded_allow_ips == []


def test_the_cluster_listens_without_a_token_only_by_an_explicit_choice(config: dict[str, str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kotlin sends no token: the ConfigMap says ALLOW_NO_TOKEN (the NetworkPolicy keeps others out)
    and every Host name (probes use the pod IP); the service then starts, with the warning."""
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in ("ALLOW_NO_TOKEN", "ALLOWED_HOSTS"):
        monkeypatch.setenv(name, config[name])
    settings = Settings(host="0.0.0.0")
    assert "WITHOUT an API_TOKEN" in (check_listen(settings) or "")
    assert allowed_host_names(settings) is None


def test_pod_identity_is_the_pod_name(container: Doc, config: dict[str, str]) -> None:
    [pod_name] = [e for e in container["env"] if e["name"] == "POD_NAME"]
    assert pod_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert "POD_ID" not in config and not [e for e in container["env"] if e["name"] == "POD_ID"]


def test_configuration_comes_from_the_config_map_and_the_optional_secret(container: Doc) -> None:
    assert container["envFrom"] == [
        {"configMapRef": {"name": "jervis-orchestrator-config"}},
        {"secretRef": {"name": "jervis-orchestrator-secrets", "optional": True}},
    ]


def test_every_variable_is_a_setting_or_a_documented_standard_one(container: Doc, config: dict[str, str]) -> None:
    secrets = {d["metadata"]["name"]: d for d in load_file(K8S_DIR / "secret.example.yaml")}
    names = {
        "ConfigMap": set(config),
        "Deployment env": {e["name"] for e in container["env"]},
        "orchestrator Secret": set(secrets["jervis-orchestrator-secrets"]["stringData"]),
    }
    for where, found in names.items():
        unknown = found - SETTINGS_ENV - STANDARD_ENV
        assert not unknown, f"{where}: not settings: {sorted(unknown)}"
    assert not names["ConfigMap"] & names["orchestrator Secret"], "a setting in both: one would silently win"
    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "MONGODB_URL"} <= names["orchestrator Secret"]
    # ALLOW_NO_TOKEN is a yes/no flag, not a token.
    assert not any(name.endswith(("_API_KEY", "_TOKEN")) or name == "MONGODB_URL"
                   for name in set(config) - {"ALLOW_NO_TOKEN"})
    # The agent Secret holds what the Jobs reference (AGENT_SECRET_NAME / AGENT_SECRET_KEYS).
    agent = secrets[config["AGENT_SECRET_NAME"]]
    assert list(agent["stringData"]) == Settings.model_fields["agent_secret_keys"].default_factory()


def test_config_map_values_are_valid_settings(config: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in config.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.agent_runner == "kubernetes" and settings.k8s_namespace == NAMESPACE
    assert settings.agent_namespace == config["AGENT_NAMESPACE"] == "jervis-agents" != NAMESPACE
    assert str(settings.data_root) == config["DATA_ROOT"] == "/opt/jervis/data"
    assert settings.kubeconfig is None, "in the pod the in-cluster config is used"
    assert settings.ollama_url == config["OLLAMA_URL"] and settings.log_format == "json"


def test_prometheus_scrapes_the_service_port(pod: Doc, container: Doc) -> None:
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == PORT == port_number(container, "http")
    assert annotations["prometheus.io/path"] == "/metrics"


def test_service_reaches_the_pods_on_8090(docs: list[Doc], pod: Doc, container: Doc) -> None:
    service = find(docs, "Service", "jervis-orchestrator")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    [port] = service["spec"]["ports"]
    assert port["port"] == PORT and port_number(container, port["targetPort"]) == PORT


def test_only_the_kotlin_server_may_call_the_orchestrator(docs: list[Doc], pod: Doc) -> None:
    policy = find(docs, "NetworkPolicy", "jervis-orchestrator", NAMESPACE)
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert spec["policyTypes"] == ["Ingress"], "egress stays open (MongoDB, LLMs, the Kubernetes API)"
    [rule] = spec["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app": "jervis-server"}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": PORT}]
