"""Self-tests of the fake Kubernetes API's security checks (tests/fixtures/k8s/: Pod Security,
RBAC, the admission policy): each check refuses what it must, and only that, so the security tests
built on them can fail."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.deploy.helpers import K8S_DIR, load_file
from tests.fixtures.k8s import FakeKubernetesApi
from tests.fixtures.k8s.admission import CHECKS
from tests.fixtures.k8s.pod_security import restricted_violations
from tests.fixtures.k8s.rbac import authorize

Obj = dict[str, Any]


def restricted_pod() -> Obj:
    return {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "t", "emptyDir": {}}],
            "containers": [{"name": "a", "image": "i", "securityContext": {
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}


def _container(pod: Obj) -> Obj:
    context: Obj = pod["containers"][0]["securityContext"]
    return context


BREAKS: dict[str, Callable[[Obj], None]] = {
    "privileged": lambda p: _container(p).update(privileged=True),
    "host namespaces": lambda p: p.update(hostIPC=True),
    "hostPath": lambda p: p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
    "restricted volume types": lambda p: p["volumes"].append({"name": "g", "gitRepo": {"repository": "x"}}),
    "hostPort": lambda p: p["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
    "capabilities": lambda p: _container(p).update(capabilities={"drop": ["NET_RAW"]}),
    "allowPrivilegeEscalation": lambda p: _container(p).pop("allowPrivilegeEscalation"),
    "runAsNonRoot": lambda p: p["securityContext"].pop("runAsNonRoot"),
    "runAsUser=0": lambda p: _container(p).update(runAsUser=0),
    "seccompProfile": lambda p: p["securityContext"].pop("seccompProfile"),
}


def test_a_restricted_pod_passes_the_fakes_pod_security() -> None:
    assert restricted_violations(restricted_pod()) == []


@pytest.mark.parametrize("control", sorted(BREAKS))
def test_each_restricted_control_refuses_its_breach(control: str) -> None:
    pod = restricted_pod()
    BREAKS[control](pod)
    found = restricted_violations(pod)
    assert len(found) == 1 and control in found[0], found


def test_rbac_grants_a_role_in_its_binding_namespace_only() -> None:
    docs = load_file(K8S_DIR / "orchestrator-rbac.yaml")
    objects = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}
    me = "system:serviceaccount:jervis:jervis-orchestrator"
    assert authorize(objects, me, "jervis-agents", ("batch", "jobs", "create"))
    assert not authorize(objects, me, "jervis", ("batch", "jobs", "create"))
    assert not authorize(objects, me, "jervis-agents", ("", "secrets", "get"))
    assert not authorize(objects, "system:serviceaccount:jervis:other", "jervis-agents", ("batch", "jobs", "create"))


def test_every_validation_of_the_policy_has_a_check_in_the_fake() -> None:
    [policy] = [d for d in load_file(K8S_DIR / "agents-admission.yaml") if d["kind"] == "ValidatingAdmissionPolicy"]
    assert {v["message"] for v in policy["spec"]["validations"]} == set(CHECKS)


def test_a_validation_the_fake_cannot_evaluate_fails_the_create(k8s: FakeKubernetesApi, tmp_path: Path) -> None:
    """Never admitted unchecked: an unknown validation answers 500."""
    docs = load_file(K8S_DIR / "agents-namespace.yaml") + load_file(K8S_DIR / "agents-admission.yaml")
    policy = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy")
    changed = copy.deepcopy(policy)
    changed["spec"]["validations"].append({"expression": "true", "message": "something new"})
    k8s.apply([*docs, changed])
    batch = client.BatchV1Api(client.ApiClient(_configuration(k8s, tmp_path)))
    body = {"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        **restricted_pod(), "restartPolicy": "Never", "automountServiceAccountToken": False}}}}
    with pytest.raises(ApiException) as refused:
        batch.create_namespaced_job("jervis-agents", body)
    assert refused.value.status == 500 and "something new" in refused.value.body


def _configuration(k8s: FakeKubernetesApi, tmp_path: Path) -> client.Configuration:
    from kubernetes import config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(k8s.kubeconfig(tmp_path / "kubeconfig")),
                            client_configuration=configuration)
    return configuration
