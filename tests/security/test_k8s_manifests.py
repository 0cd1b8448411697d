"""The agents' namespace, its network and the orchestrator's rights, read from the deployment (k8s/).

Checked on the kustomize render (what `kubectl apply -k k8s/` creates): the Jobs' namespace
enforces Pod Security `restricted`; its NetworkPolicies deny every ingress and every egress but
DNS, the model and the KB (and the git remote for push Jobs only), with exactly those peers and
ports; the orchestrator's only Role is there and holds nothing on Secrets, pods' creation or
service accounts; the admission policy's parameters are the orchestrator's settings; the agents'
Secret and data claim are in the agents' namespace. On main the agent Jobs share `jervis`, which
enforces nothing and has no egress policy, and the orchestrator's Role is there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from app.agents.base import AgentJob
from app.agents.job_spec import job_labels
from app.config import Settings
from tests.deploy.helpers import K8S_DIR, Doc, find, load_file, render_kustomize

DNS = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
               "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
       "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
#: Rights that let a holder read a Secret, start a pod of its own making, act as another account or grant itself more.
DANGEROUS = {("", "secrets"), ("", "pods"), ("", "serviceaccounts"), ("", "serviceaccounts/token"),
             ("", "pods/exec"), ("", "pods/attach"), ("", "pods/ephemeralcontainers"), ("", "configmaps"),
             ("rbac.authorization.k8s.io", "roles"), ("rbac.authorization.k8s.io", "rolebindings"),
             ("admissionregistration.k8s.io", "validatingadmissionpolicies")}


@pytest.fixture(scope="module")
def rendered() -> list[Doc]:
    return render_kustomize()


@pytest.fixture(scope="module")
def config(rendered: list[Doc]) -> dict[str, str]:
    data: dict[str, str] = find(rendered, "ConfigMap", "jervis-orchestrator-config")["data"]
    return data


@pytest.fixture(scope="module")
def settings(config: dict[str, str]) -> Settings:
    """The orchestrator's settings as the ConfigMap makes them."""
    return Settings(**{name.lower(): value for name, value in config.items() if name.lower() in Settings.model_fields})


def agent_namespace(settings: Settings) -> str:
    """Where the orchestrator's Job runner creates its Jobs (main: `K8S_NAMESPACE`)."""
    return str(getattr(settings, "agent_namespace", settings.k8s_namespace))


def policies(rendered: list[Doc], namespace: str) -> list[Doc]:
    return [d for d in rendered if d["kind"] == "NetworkPolicy" and d["metadata"]["namespace"] == namespace]


def selects(policy: Doc, labels: dict[str, str]) -> bool:
    selector = policy["spec"]["podSelector"]
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def egress_of(found: list[Doc], mode: str, agent_type: str) -> list[Any]:
    """Every egress rule that applies to a Job of this mode and agent (NetworkPolicies add up)."""
    labels = pod_labels(mode, agent_type)
    return [rule for p in found if selects(p, labels) and "Egress" in p["spec"]["policyTypes"]
            for rule in p["spec"].get("egress", [])]


def pod_labels(mode: str, agent_type: str = "aider") -> dict[str, str]:
    return job_labels(AgentJob(thread_id="thread-x-0", task_id="t", client_id="c", agent_type=agent_type,
                               workspace=Path("/opt/jervis/data/c/p"), mode=mode))  # type: ignore[arg-type]


def peer_of(url: str, namespace: str) -> dict[str, Any]:
    """The pods behind a Service URL as the allow-list names them (`app=<service>` in its namespace)."""
    host = urlsplit(url).hostname or ""
    service, _, rest = host.partition(".")
    assert rest.split(".")[0], f"{url}: an agent in {namespace} needs a namespace-qualified name"
    app = "ollama" if service == "ollama" else service
    return {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": rest.split(".")[0]}},
                    "podSelector": {"matchLabels": {"app": app}}}],
            "ports": [{"protocol": "TCP", "port": urlsplit(url).port}]}


def test_the_jobs_namespace_enforces_pod_security_restricted(rendered: list[Doc], settings: Settings) -> None:
    namespace = agent_namespace(settings)
    labels = find(rendered, "Namespace", namespace)["metadata"].get("labels", {})
    assert labels.get("pod-security.kubernetes.io/enforce") == "restricted", labels
    assert labels.get("pod-security.kubernetes.io/enforce-version"), "the profile's version is named"
    orchestrator = find(rendered, "Deployment", "jervis-orchestrator")["metadata"]["namespace"]
    assert namespace != orchestrator, "agents run apart from the orchestrator, its Secrets and its neighbours"


def test_nothing_reaches_the_agents_and_they_reach_only_dns_the_model_and_the_kb(rendered: list[Doc],
                                                                                 settings: Settings) -> None:
    namespace = agent_namespace(settings)
    found = policies(rendered, namespace)
    deny = [p for p in found if p["spec"]["podSelector"] == {}]
    assert [p["spec"] for p in deny] == [{"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}], \
        "one default deny, ingress and egress, for every pod of the namespace"
    assert not any(p["spec"].get("ingress") for p in found), "nothing may connect to an agent"
    for agent in ("aider", "openhands", "claude", "junie"):
        assert egress_of(found, "agent", agent) == [DNS, peer_of(settings.ollama_url, namespace),
                                                    peer_of(settings.knowledgebase_url, namespace)]
        # The project's tests and a commit need no network at all.
        assert egress_of(found, "test", agent) == egress_of(found, "commit", agent) == []


def test_only_the_push_job_reaches_the_git_remote(rendered: list[Doc], settings: Settings) -> None:
    found = policies(rendered, agent_namespace(settings))
    assert egress_of(found, "push", "claude") == [DNS, {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [
        {"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 22}]}]


def test_the_orchestrator_may_make_jobs_in_the_agents_namespace_only(rendered: list[Doc],
                                                                      settings: Settings) -> None:
    namespace = agent_namespace(settings)
    deployment = find(rendered, "Deployment", "jervis-orchestrator")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    subject = {"kind": "ServiceAccount", "name": account, "namespace": deployment["metadata"]["namespace"]}
    assert namespace != subject["namespace"], "no Job rights where the orchestrator's own Secrets are"
    assert not [d for d in rendered if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    bindings = [d for d in rendered if d["kind"] == "RoleBinding" and subject in d["subjects"]]
    assert [b["metadata"]["namespace"] for b in bindings] == [namespace], "its one binding is in the agents' namespace"
    [binding] = bindings
    role = find(rendered, "Role", binding["roleRef"]["name"], namespace)
    grants = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
              for resource in rule["resources"] for verb in rule["verbs"]}
    assert not any("*" in grant for grant in grants)
    assert {r for _, r, _ in grants} == {"jobs", "pods", "pods/log"}
    assert not {(g, r) for g, r, _ in grants} & (DANGEROUS - {("", "pods")}), "no Secret, account or RBAC right"
    assert {v for g, r, v in grants if r == "pods"} <= {"get", "list", "watch"}, "no pod of its own making"
    assert {v for g, r, v in grants if r == "pods/log"} <= {"get"}
    assert not {v for _, _, v in grants} & {"escalate", "bind", "impersonate", "update", "patch"}


def test_the_admission_policy_lets_the_jobs_name_only_the_orchestrators_agent_secret_and_account(
        rendered: list[Doc], settings: Settings) -> None:
    namespace = agent_namespace(settings)
    [binding] = [d for d in rendered if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    spec = binding["spec"]
    assert spec["validationActions"] == ["Deny"]
    assert spec["matchResources"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    policy = find(rendered, "ValidatingAdmissionPolicy", spec["policyName"])
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert spec["paramRef"]["namespace"] == namespace and spec["paramRef"]["parameterNotFoundAction"] == "Deny"
    params = find(rendered, "ConfigMap", spec["paramRef"]["name"], namespace)["data"]
    assert params == {"secretName": settings.agent_secret_name, "serviceAccountName": settings.agent_service_account}
    account = find(rendered, "ServiceAccount", settings.agent_service_account, namespace)
    assert account["automountServiceAccountToken"] is False


def test_the_agents_secret_and_data_claim_live_in_the_agents_namespace(rendered: list[Doc],
                                                                      settings: Settings) -> None:
    namespace = agent_namespace(settings)
    secrets = {d["metadata"]["name"]: d for d in load_file(K8S_DIR / "secret.example.yaml")}
    assert secrets[settings.agent_secret_name]["metadata"]["namespace"] == namespace
    assert secrets["jervis-orchestrator-secrets"]["metadata"]["namespace"] != namespace
    claim = find(rendered, "PersistentVolumeClaim", settings.pvc_claim_name, namespace)["spec"]
    # Bound to a volume the operator makes on the orchestrator's share, never a new empty one.
    assert claim["storageClassName"] == "" and claim["volumeName"] and claim["accessModes"] == ["ReadWriteMany"]
