"""The orchestrator's Role grants exactly what its Job runner uses, found by observation.

The real KubernetesJobRunner, through the real `kubernetes` client, drives a full step lifecycle
against the fake API server (tests/fixtures/k8s/), which is given the deployment's manifests and
authenticates the runner as the orchestrator's service account, so RBAC and the agents'
namespace's admission checks apply to every request: a step that runs to completion
(create, get, list, watch, the pod list, the followed log) and a step that is cancelled (delete).
Every recorded request is mapped to (apiGroup, resource, verb) the way the API server's request
info resolver does it, and the set must equal the Role's grants: a missing grant would fail in the
cluster with 403, an extra one is privilege the service never uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob
from app.agents.job_spec import job_name
from app.agents.k8s_client import KubernetesApi, load_api_client
from app.agents.kubernetes import KubernetesJobRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.deploy.helpers import AGENT_NAMESPACE, K8S_DIR, NAMESPACE, REPO_ROOT, find, load_file, resource_docs
from tests.fixtures.k8s.rbac import Grant, request_grant
from tests.fixtures.service import configure_cluster
from tests.support import file_block, make_git_repo

#: Spec §19.3: resources [jobs, pods, pods/log] × verbs [get, list, watch, create, delete].
SPEC_19_3 = {(group, resource, verb) for group, resource in (("batch", "jobs"), ("", "pods"), ("", "pods/log"))
             for verb in ("get", "list", "watch", "create", "delete")}


def role_grants(role: dict[str, Any]) -> set[Grant]:
    grants = set()
    for rule in role["rules"]:
        assert not rule.get("resourceNames") and not rule.get("nonResourceURLs")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    grants.add((group, resource, verb))
    return grants


class ObservedApi(KubernetesApi):
    """The service's own facade with a note of which of its operations ran (the `kubernetes`
    client underneath is untouched)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.used: set[str] = set()
        for name in operations():
            original = getattr(self, name)
            if inspect.iscoroutinefunction(original):
                async def wrapper(*a: Any, _name: str = name, _fn: Any = original, **k: Any) -> Any:
                    self.used.add(_name)
                    return await _fn(*a, **k)
            else:
                def wrapper(*a: Any, _name: str = name, _fn: Any = original, **k: Any) -> Any:  # type: ignore[misc]
                    self.used.add(_name)
                    return _fn(*a, **k)
            setattr(self, name, wrapper)


def operations() -> list[str]:
    """Public methods of KubernetesApi: every way the service reaches the API."""
    return [name for name, _ in inspect.getmembers(KubernetesApi, inspect.isfunction) if not name.startswith("_")]


def test_request_mapping_follows_the_api_servers_rules() -> None:
    ns = "/apis/batch/v1/namespaces/jervis/jobs"
    assert request_grant("POST", ns) == ("jervis", ("batch", "jobs", "create"))
    assert request_grant("GET", ns + "?labelSelector=app=x") == ("jervis", ("batch", "jobs", "list"))
    assert request_grant("GET", ns + "?fieldSelector=metadata.name=j&watch=True") == ("jervis",
                                                                                    ("batch", "jobs", "watch"))
    assert request_grant("GET", "/apis/batch/v1/watch/namespaces/jervis/jobs") == ("jervis", ("batch", "jobs", "watch"))
    assert request_grant("GET", ns + "/j") == ("jervis", ("batch", "jobs", "get"))
    assert request_grant("DELETE", ns + "/j") == ("jervis", ("batch", "jobs", "delete"))
    assert request_grant("DELETE", ns) == ("jervis", ("batch", "jobs", "deletecollection"))
    log = "/api/v1/namespaces/jervis/pods/p/log?follow=True&container=agent"
    assert request_grant("GET", log) == ("jervis", ("", "pods/log", "get"))
    assert request_grant("GET", "/api/v1/pods") == ("", ("", "pods", "list"))
    for discovery in ("/version/", "/api/", "/api/v1", "/apis", "/apis/batch/v1/"):
        assert request_grant("GET", discovery) is None


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    return root


def _step(data_root: Path, name: str, instructions: str) -> tuple[AgentJob, Any]:
    repo = make_git_repo(data_root / name)
    job = AgentJob(thread_id=f"thread-{name}-rbac0000", task_id=name, client_id="c1", agent_type="aider",
                   workspace=repo, timeout_seconds=60, expect_changes=True)
    brief = StepBrief(agent_type="command", instructions=instructions, task={"id": name})
    async def prepare() -> None:
        WorkspaceManager(data_root).prepare(repo, brief)
    return job, prepare


async def test_role_grants_exactly_what_the_job_runner_uses(k8s: Any, data_root: Path, tmp_path: Path) -> None:
    configure_cluster(k8s)
    k8s.apply(resource_docs())
    k8s.act_as(f"system:serviceaccount:{NAMESPACE}:jervis-orchestrator")
    settings = Settings(data_root=data_root, k8s_namespace=NAMESPACE, agent_namespace=AGENT_NAMESPACE,
                        agent_service_account="jervis-agent", k8s_poll_seconds=0.3)
    api = ObservedApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig"))), AGENT_NAMESPACE)
    runner = KubernetesJobRunner(api, WorkspaceManager(data_root), settings)

    # A step that runs to completion, long enough for the runner to watch and follow its log.
    job, prepare = _step(data_root, "rbac-done", "@@SLEEP 1\n" + file_block("src/a.py", "a = 1"))
    lines: list[str] = []
    result = await runner.run(job, prepare=prepare, on_log=lines.append)
    assert result.success and result.changed_files == ["src/a.py"], result.summary
    assert lines, "the followed log reached the runner"

    # A step cancelled while its agent runs: the runner deletes the Job.
    job, prepare = _step(data_root, "rbac-cancel", "@@SLEEP 60")
    task = asyncio.create_task(runner.run(job, prepare=prepare))
    await asyncio.to_thread(k8s.wait_for_job, job_name(job), "Active", namespace=AGENT_NAMESPACE)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert (job_name(job), "Background") in k8s.deletes

    # The lifecycle reached every operation of the facade, so nothing the service can ask is unseen.
    assert api.used == set(operations()), f"not exercised: {set(operations()) - api.used}"

    observed = {request_grant(method, target) for method, target in k8s.requests}
    observed.discard(None)
    namespaces = {namespace for namespace, _ in observed}
    used = {grant for _, grant in observed}
    assert namespaces == {AGENT_NAMESPACE}, "a namespaced Role covers only requests in its namespace"
    assert k8s.refusals == [] and k8s.refused_pods == [], "RBAC and admission let the runner's own Jobs through"

    role = find(load_file(K8S_DIR / "orchestrator-rbac.yaml"), "Role", "jervis-orchestrator-role")
    assert role["metadata"]["namespace"] == AGENT_NAMESPACE
    granted = role_grants(role)
    assert used <= granted, f"the runner would be refused: {sorted(used - granted)}"
    assert granted == used, f"granted but never used: {sorted(granted - used)}"
    assert granted <= SPEC_19_3, f"beyond spec §19.3: {sorted(granted - SPEC_19_3)}"


def test_only_the_facade_talks_to_the_kubernetes_api() -> None:
    """The observation above covers the service only if every API call goes through KubernetesApi."""
    pattern = re.compile(r"\b(?:\w+V\d\w*Api|ApiClient|DynamicClient|CustomObjectsApi)\(|\bwatch\.Watch\(")
    offenders = [str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "app").rglob("*.py")
                 if path.name != "k8s_client.py" and pattern.search(path.read_text())]
    assert offenders == []
    assert pattern.search((REPO_ROOT / "app" / "agents" / "k8s_client.py").read_text())


def test_role_binding_gives_the_role_to_the_orchestrators_service_account() -> None:
    docs = load_file(K8S_DIR / "orchestrator-rbac.yaml")
    binding = find(docs, "RoleBinding")
    assert binding["metadata"]["namespace"] == AGENT_NAMESPACE, "the Job rights are in the agents' namespace only"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "jervis-orchestrator-role"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "jervis-orchestrator", "namespace": NAMESPACE}]
    assert find(docs, "ServiceAccount", "jervis-orchestrator").get("automountServiceAccountToken", True) is True
    assert not any(d["kind"] in ("ClusterRole", "ClusterRoleBinding") for d in docs)
    role = find(docs, "Role", "jervis-orchestrator-role")
    assert not any(resource.startswith("secrets") for _, resource, _ in role_grants(role))
