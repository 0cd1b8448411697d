"""Whoever holds the orchestrator's service account token can start no pod beyond an agent's.

The fake API server is given the deployment as kustomize renders it (k8s/) and authenticates the
kubeconfig's token as the orchestrator's service account (the Deployment's), so every request
passes RBAC (the rendered Roles and RoleBindings), the rendered admission policies, and Pod
Security where a rendered namespace enforces it. The attacker is anyone with that token: a
compromised orchestrator, or an agent that got hold of it. Its Jobs go to the namespace where the
orchestrator's Role lets it create Jobs (read from the render: on main, the shared `jervis`).

The runner's own Jobs (agent, test and git modes) are admitted, run, and mount only their
workspace with the restricted context. A Job that is privileged, mounts the host or a Secret, runs
as another service account, gets a token, or names another Secret is refused, and nothing of it
runs; the same Job in the orchestrator's own namespace is refused by RBAC, as are pods and Secrets.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from app.agents.base import AgentJob
from app.agents.job_spec import build_job, job_name
from app.agents.k8s_client import load_api_client
from app.config import Settings
from tests.deploy.helpers import Doc, find, render_kustomize
from tests.support import make_git_repo, wait_until

Mutation = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def rendered() -> list[Doc]:
    return render_kustomize()


def orchestrator_identity(rendered: list[Doc]) -> str:
    deployment = find(rendered, "Deployment", "jervis-orchestrator")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    return f"system:serviceaccount:{deployment['metadata']['namespace']}:{account}"


def jobs_namespace(rendered: list[Doc], identity: str) -> str:
    """The one namespace where the rendered RBAC lets the orchestrator create Jobs."""
    namespaces = set()
    for binding in (d for d in rendered if d["kind"] == "RoleBinding"):
        subjects = {f"system:serviceaccount:{s.get('namespace')}:{s['name']}" for s in binding["subjects"]}
        role = find(rendered, binding["roleRef"]["kind"], binding["roleRef"]["name"], binding["metadata"]["namespace"])
        if identity in subjects and any("batch" in r["apiGroups"] and "jobs" in r["resources"]
                                        and "create" in r["verbs"] for r in role["rules"]):
            namespaces.add(binding["metadata"]["namespace"])
    [namespace] = namespaces
    return namespace


class Cluster:
    """The fake with the rendered deployment applied, and the real client holding the orchestrator's token."""

    def __init__(self, k8s: Any, rendered: list[Doc], tmp_path: Path) -> None:
        self.k8s = k8s
        self.marker = tmp_path / "a-container-ran"
        k8s.configure(image_commands={"*": [sys.executable, "-c",
                                            f"open({str(self.marker)!r}, 'a').write('ran\\n')"]})
        k8s.apply(rendered)
        self.identity = orchestrator_identity(rendered)
        k8s.act_as(self.identity)
        self.namespace = jobs_namespace(rendered, self.identity)
        config = find(rendered, "ConfigMap", "jervis-orchestrator-config")["data"]
        self.data_root = tmp_path / "data"
        self.workspace = make_git_repo(self.data_root / "clients" / "c1" / "shop")
        # The orchestrator's settings as deployed, the Jobs' namespace being the one it may create them in.
        self.settings = Settings(data_root=self.data_root, k8s_namespace=self.namespace,
                                 agent_namespace=self.namespace, pvc_claim_name=config["PVC_CLAIM_NAME"],
                                 agent_secret_name=config["AGENT_SECRET_NAME"],
                                 agent_service_account=config.get("AGENT_SERVICE_ACCOUNT"))
        api = load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig")))
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)
        self.serialize = api.sanitize_for_serialization

    def runner_job(self, mode: str = "agent", name: str = "step") -> dict[str, Any]:
        job = AgentJob(thread_id=f"thread-{name}-0000", task_id=name, client_id="c1", agent_type="aider",
                       workspace=self.workspace, mode=mode, timeout_seconds=60)  # type: ignore[arg-type]
        body: dict[str, Any] = self.serialize(build_job(self.settings, job))
        assert body["metadata"]["name"] == job_name(job)
        return body

    def create(self, body: dict[str, Any], namespace: str | None = None) -> ApiException | None:
        try:
            self.batch.create_namespaced_job(namespace or self.namespace, body)
        except ApiException as exc:
            return exc
        return None


@pytest.fixture
def cluster(k8s: Any, rendered: list[Doc], tmp_path: Path) -> Cluster:
    return Cluster(k8s, rendered, tmp_path)


@pytest.mark.parametrize("mode", ["agent", "test", "commit", "push"])
def test_the_runners_own_jobs_are_admitted_run_and_mount_only_their_workspace(cluster: Cluster, mode: str) -> None:
    body = cluster.runner_job(mode)
    assert cluster.create(body) is None
    name = body["metadata"]["name"]
    cluster.k8s.wait_for_job(name, "Complete", namespace=cluster.namespace)
    assert cluster.k8s.refused_pods == [] and cluster.k8s.refusals == []
    pod = body["spec"]["template"]["spec"]
    [container] = pod["containers"]
    relative = cluster.workspace.relative_to(cluster.data_root).as_posix()
    data = [m for m in container["volumeMounts"] if m["name"] == "data"]
    assert data and all(m.get("subPath", "").startswith(relative) for m in data), data
    assert data[0] == {"name": "data", "subPath": relative, "mountPath": str(cluster.workspace)}
    git_mounts = [m for m in data if m["subPath"] == f"{relative}/.git"]
    assert git_mounts == ([] if mode in ("commit", "push") else
                          [{"name": "data", "subPath": f"{relative}/.git", "mountPath": str(cluster.workspace / ".git"),
                            "readOnly": True}])
    context = container["securityContext"]
    assert context == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                       "readOnlyRootFilesystem": True, "runAsGroup": 1000, "runAsNonRoot": True, "runAsUser": 1000,
                       "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["automountServiceAccountToken"] is False
    scratch = {v["name"]: v["emptyDir"]["sizeLimit"] for v in pod["volumes"] if "emptyDir" in v}
    assert set(scratch) == {"home", "tmp"} and all(scratch.values())


def _privileged(pod: dict[str, Any]) -> None:
    pod["containers"][0]["securityContext"]["privileged"] = True
    pod["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True


def _root_with_capabilities(pod: dict[str, Any]) -> None:
    context = pod["containers"][0]["securityContext"]
    context.update(runAsNonRoot=False, runAsUser=0, capabilities={"add": ["SYS_ADMIN"]})
    pod["securityContext"].update(runAsNonRoot=False, runAsUser=0)


def _host_network_unconfined(pod: dict[str, Any]) -> None:
    pod["hostNetwork"] = True
    pod["hostPID"] = True
    pod["containers"][0]["securityContext"]["seccompProfile"] = {"type": "Unconfined"}
    pod["securityContext"]["seccompProfile"] = {"type": "Unconfined"}


def _host_path(pod: dict[str, Any]) -> None:
    pod["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    pod["containers"][0]["volumeMounts"].append({"name": "host", "mountPath": "/host"})


def _secret_volume(pod: dict[str, Any]) -> None:
    pod["volumes"].append({"name": "keys", "secret": {"secretName": "jervis-orchestrator-secrets"}})
    pod["containers"][0]["volumeMounts"].append({"name": "keys", "mountPath": "/keys"})


def _projected_token(pod: dict[str, Any]) -> None:
    pod["volumes"].append({"name": "token", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}})
    pod["containers"][0]["volumeMounts"].append({"name": "token", "mountPath": "/token"})


def _other_account(pod: dict[str, Any]) -> None:
    pod["serviceAccountName"] = "default"


def _token_mounted(pod: dict[str, Any]) -> None:
    pod["automountServiceAccountToken"] = True


def _other_secret_in_env(pod: dict[str, Any]) -> None:
    pod["containers"][0]["env"].append({"name": "MONGODB_URL", "valueFrom": {"secretKeyRef": {
        "name": "jervis-orchestrator-secrets", "key": "MONGODB_URL"}}})


def _other_secret_by_env_from(pod: dict[str, Any]) -> None:
    pod["containers"][0]["envFrom"] = [{"secretRef": {"name": "jervis-orchestrator-secrets"}}]


#: Attack → (the change to the runner's Job, what refuses it: Pod Security on its pod, or the admission policy
#: on the Job, with a word of its message).
HOSTILE: dict[str, tuple[Mutation, str]] = {
    "privileged": (_privileged, "privileged"),
    "root-with-capabilities": (_root_with_capabilities, "runAsNonRoot"),
    "host-network-unconfined": (_host_network_unconfined, "host namespaces"),
    "host-path": (_host_path, "mounts only persistentVolumeClaim and emptyDir"),
    "secret-volume": (_secret_volume, "mounts only persistentVolumeClaim and emptyDir"),
    "projected-token": (_projected_token, "mounts only persistentVolumeClaim and emptyDir"),
    "other-service-account": (_other_account, "service account only"),
    "token-mounted": (_token_mounted, "no service account token"),
    "other-secret-in-env": (_other_secret_in_env, "names no Secret but the agents' own"),
    "other-secret-by-env-from": (_other_secret_by_env_from, "names no Secret but the agents' own"),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_job_is_refused_and_nothing_of_it_runs(cluster: Cluster, attack: str) -> None:
    mutate, why = HOSTILE[attack]
    body = cluster.runner_job(name=attack)
    mutate(body["spec"]["template"]["spec"])
    name = body["metadata"]["name"]
    refused = cluster.create(copy.deepcopy(body))
    if refused is None:  # admitted as a Job (Pod Security enforces on pods): its pod must be refused
        wait_until(lambda: cluster.k8s.jobs(cluster.namespace).get(name), what=f"Job {name}")
        assert [job for job, _ in cluster.k8s.refused_pods] == [name], f"{attack}: its pod was created"
        assert why in cluster.k8s.refused_pods[0][1], cluster.k8s.refused_pods
    else:
        assert refused.status == 403 and "ValidatingAdmissionPolicy" in refused.body and why in refused.body, \
            refused.body
    pods = cluster.k8s.pods(cluster.namespace).values()
    assert not any(p["metadata"]["labels"].get("job-name") == name for p in pods)
    assert not cluster.marker.exists(), f"{attack}: a container ran"


def test_the_same_job_outside_the_agents_namespace_is_refused(cluster: Cluster, rendered: list[Doc]) -> None:
    """The orchestrator's own namespace (its Secrets, MongoDB's URL) and any other get no Job of it."""
    own = find(rendered, "Deployment", "jervis-orchestrator")["metadata"]["namespace"]
    for namespace in (own, "kube-system", "default"):
        body = cluster.runner_job(name=f"elsewhere-{namespace}")
        body["metadata"]["namespace"] = namespace
        refused = cluster.create(body, namespace)
        assert refused is not None and refused.status == 403, f"a Job was created in {namespace}"
    assert not cluster.marker.exists()


def test_the_token_opens_no_pod_secret_or_service_account(cluster: Cluster) -> None:
    """Only Jobs: no pod of its own making, no Secret to read, no token to mint or account to create."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "direct"},
           "spec": {"containers": [{"name": "x", "image": "busybox"}]}}
    calls: list[Callable[[], object]] = [
        lambda: cluster.core.create_namespaced_pod(cluster.namespace, pod),
        lambda: cluster.core.list_namespaced_secret(cluster.namespace),
        lambda: cluster.core.read_namespaced_secret("jervis-agent-secrets", cluster.namespace),
        lambda: cluster.core.create_namespaced_service_account(cluster.namespace, {"metadata": {"name": "x"}}),
        lambda: cluster.core.create_namespaced_service_account_token("jervis-agent", cluster.namespace, {"spec": {}}),
        lambda: cluster.core.list_namespaced_config_map(cluster.namespace),
    ]
    for call in calls:
        with pytest.raises(ApiException) as refused:
            call()
        assert refused.value.status == 403, refused.value.body
