"""Self-tests of the fake Kubernetes API (tests/fixtures/k8s/), through the real client.

The orchestrator's Job runner is tested against this fake, so each test pins one
behaviour it relies on, over real HTTP with the official ``kubernetes`` client
configured from the fake's kubeconfig: every answer must also survive the
client's strict pydantic models, so the typed objects are asserted, not just JSON.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from tests.fixtures.k8s import FakeKubernetesApi

NS = "jervis"
IMAGE = "registry.local/jervis-agent:test"
SLEEP = ["sh", "-c", "sleep 30"]


@dataclass(frozen=True)
class Kube:
    """The real client's APIs, pointed at the fake by its kubeconfig."""

    batch: client.BatchV1Api
    core: client.CoreV1Api


@pytest.fixture
def kube(k8s: FakeKubernetesApi, tmp_path: Path) -> Iterator[Kube]:
    """Load the fake's kubeconfig exactly as the orchestrator does; restore the global default afterwards."""
    config.load_kube_config(config_file=str(k8s.kubeconfig(tmp_path / "kubeconfig")))
    yield Kube(client.BatchV1Api(), client.CoreV1Api())
    client.Configuration.set_default(None)


def job(
    name: str,
    *,
    command: list[str] | None = None,
    env: list[client.V1EnvVar] | None = None,
    labels: dict[str, str] | None = None,
    working_dir: str | None = None,
    deadline: int | None = None,
    ttl: int | None = None,
) -> client.V1Job:
    """A V1Job shaped like the orchestrator's: one container, restartPolicy Never, no retries, labels on both."""
    container = client.V1Container(name="agent", image=IMAGE, command=command, env=env, working_dir=working_dir)
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1JobSpec(
            backoff_limit=0, active_deadline_seconds=deadline, ttl_seconds_after_finished=ttl,
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
                                              spec=client.V1PodSpec(restart_policy="Never", containers=[container])),
        ),
    )


def create(kube: Kube, name: str, **kwargs: Any) -> client.V1Job:
    created = kube.batch.create_namespaced_job(NS, job(name, **kwargs))
    assert isinstance(created, client.V1Job)
    return created


def the_pod(kube: Kube, job_name: str) -> client.V1Pod:
    """The single pod of a Job, found the way the orchestrator finds it (label ``job-name``)."""
    pods = kube.core.list_namespaced_pod(NS, label_selector=f"job-name={job_name}").items
    assert len(pods) == 1, [p.metadata.name for p in pods]
    return pods[0]


def waiting_reason(k8s: FakeKubernetesApi, kube: Kube, job_name: str) -> str:
    """Block until the Job's container waits for a reason other than ContainerCreating; return it."""
    def probe() -> str | None:
        reason = the_pod(kube, job_name).status.container_statuses[0].state.waiting.reason
        return reason if reason != "ContainerCreating" else None

    return k8s.wait_until(probe, 5, lambda: f"{job_name} to leave ContainerCreating")


def api_error(call: Any, *args: Any, **kwargs: Any) -> ApiException:
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    return caught.value


def secret_env(name: str, secret: str, key: str, optional: bool | None = None) -> client.V1EnvVar:
    selector = client.V1SecretKeySelector(name=secret, key=key, optional=optional)
    return client.V1EnvVar(name=name, value_from=client.V1EnvVarSource(secret_key_ref=selector))


def condition(job_obj: client.V1Job, kind: str) -> client.V1JobCondition:
    [found] = [c for c in job_obj.status.conditions or [] if c.type == kind and c.status == "True"]
    return found


# --------------------------------------------------------------- happy path
def test_watch_sees_job_complete_and_log_has_env(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """A Job runs its mapped command with plain and secret env; a field-selected watch ends on Complete."""
    k8s.configure(image_commands={IMAGE: ["sh", "-c", "echo hello; echo $GREETING; echo $TOKEN"]},
                  secrets={"agent-keys": {"token": "s3cret"}})
    create(kube, "hello", env=[client.V1EnvVar(name="GREETING", value="hi there"),
                               secret_env("TOKEN", "agent-keys", "token")])
    create(kube, "other", command=["true"])  # must not show up in the field-selected watch

    seen: list[tuple[str, client.V1Job]] = []
    stream = watch.Watch()
    for event in stream.stream(kube.batch.list_namespaced_job, NS, field_selector="metadata.name=hello",
                               timeout_seconds=10):
        seen.append((event["type"], event["object"]))
        if any(c.type == "Complete" for c in event["object"].status.conditions or []):
            stream.stop()

    assert {o.metadata.name for _, o in seen} == {"hello"} and seen[0][0] == "ADDED"
    final = seen[-1][1]
    assert isinstance(final, client.V1Job) and final.status.succeeded == 1 and final.status.completion_time
    assert condition(final, "Complete").reason == "CompletionsReached"
    pod = the_pod(kube, "hello")
    terminated = pod.status.container_statuses[0].state.terminated
    assert pod.status.phase == "Succeeded" and terminated.exit_code == 0 and terminated.reason == "Completed"
    assert kube.core.read_namespaced_pod_log(pod.metadata.name, NS, container="agent") == "hello\nhi there\ns3cret\n"
    assert k8s.created == ["hello", "other"]


def test_followed_log_streams_lines_before_the_process_ends(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """``follow=true`` hands out each line as it is written and ends when the container does."""
    create(kube, "chatty", command=["sh", "-c", "echo first; sleep 1; echo second"])
    k8s.wait_for_job("chatty", "Active")
    response = kube.core.read_namespaced_pod_log(the_pod(kube, "chatty").metadata.name, NS, follow=True,
                                                 _preload_content=False)
    lines = iter_resp_lines(response)

    assert next(lines) == "first"
    assert k8s.processes_alive("chatty") and "conditions" not in k8s.jobs()["chatty"]["status"]
    assert list(lines) == ["second"]  # then the stream ends by itself
    response.release_conn()


def test_nonzero_exit_fails_the_job_with_the_exit_code(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "broken", command=["sh", "-c", "echo oops; exit 3"])
    k8s.wait_for_job("broken", "Failed")

    failed = kube.batch.read_namespaced_job_status("broken", NS)
    assert failed.status.failed == 1 and failed.status.succeeded is None and failed.status.active is None
    assert condition(failed, "Failed").reason == "BackoffLimitExceeded"
    pod = the_pod(kube, "broken")
    terminated = pod.status.container_statuses[0].state.terminated
    assert (pod.status.phase, terminated.exit_code, terminated.reason) == ("Failed", 3, "Error")


def test_active_deadline_kills_the_process_and_fails_the_job(k8s: FakeKubernetesApi, kube: Kube) -> None:
    started = time.monotonic()
    create(kube, "slow", command=SLEEP, deadline=1)

    k8s.wait_for_job("slow", "Failed", timeout=5)

    assert time.monotonic() - started < 3
    assert condition(kube.batch.read_namespaced_job("slow", NS), "Failed").reason == "DeadlineExceeded"
    k8s.wait_until(lambda: not k8s.processes_alive("slow") or None, 3, lambda: "the process to die")
    k8s.wait_until(lambda: the_pod(kube, "slow").status.phase == "Failed" or None, 3, lambda: "pod Failed")


# ------------------------------------------------------------------ deletes
@pytest.mark.parametrize("how", ["query-Background", "body-Foreground"])
def test_cascading_delete_kills_the_process_and_removes_pods(k8s: FakeKubernetesApi, kube: Kube, how: str) -> None:
    """Background (query parameter) and Foreground (DeleteOptions body) both take the agent down with the Job."""
    create(kube, "doomed", command=SLEEP)
    k8s.wait_for_job("doomed", "Active")
    where, policy = how.split("-")
    if where == "query":
        kube.batch.delete_namespaced_job("doomed", NS, propagation_policy=policy)
    else:
        kube.batch.delete_namespaced_job("doomed", NS, body=client.V1DeleteOptions(propagation_policy=policy))

    assert k8s.deletes == [("doomed", policy)]
    k8s.wait_until(lambda: not k8s.processes_alive("doomed") or None, 3, lambda: "the process to die")
    assert kube.core.list_namespaced_pod(NS, label_selector="job-name=doomed").items == []
    assert api_error(kube.batch.read_namespaced_job, "doomed", NS).status == 404


def test_delete_without_policy_orphans_pod_and_process(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """The real-world bug: no propagationPolicy deletes only the Job; the agent keeps running."""
    create(kube, "orphan", command=SLEEP)
    k8s.wait_for_job("orphan", "Active")

    kube.batch.delete_namespaced_job("orphan", NS)

    assert k8s.deletes == [("orphan", None)] and "orphan" not in k8s.jobs()
    pod = the_pod(kube, "orphan")
    assert pod.status.phase == "Running" and not pod.metadata.owner_references
    assert k8s.processes_alive("orphan")
    kube.core.delete_namespaced_pod(pod.metadata.name, NS)  # clean up: deleting the pod kills it
    k8s.wait_until(lambda: not k8s.processes_alive("orphan") or None, 3, lambda: "the orphan to die")


def test_refused_deletes_answer_403_and_keep_the_job_and_its_agent(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """`fail_deletes(n)`: the next n deletes are refused as RBAC would refuse them; the one after goes through."""
    create(kube, "kept", command=SLEEP)
    k8s.wait_for_job("kept", "Active")
    k8s.fail_deletes(1)

    error = api_error(kube.batch.delete_namespaced_job, "kept", NS, propagation_policy="Background")

    assert error.status == 403 and "Forbidden" in error.body and 'cannot delete resource \\"jobs\\"' in error.body
    assert k8s.refused_deletes == ["kept"] and k8s.deletes == [] and "kept" in k8s.jobs()
    assert k8s.processes_alive("kept")
    kube.batch.delete_namespaced_job("kept", NS, propagation_policy="Background")
    assert k8s.deletes == [("kept", "Background")]
    k8s.wait_until(lambda: not k8s.processes_alive("kept") or None, 3, lambda: "the process to die")


def test_ttl_after_finished_deletes_job_and_pods(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "shortlived", command=["true"], ttl=1)

    last = k8s.wait_for_job("shortlived", "Deleted", timeout=5)

    assert any(c["type"] == "Complete" for c in last["status"]["conditions"])
    assert k8s.deletes == []  # the TTL controller deleted it, not a client
    assert kube.core.list_namespaced_pod(NS, label_selector="job-name=shortlived").items == []


# --------------------------------------------------------------- API errors
def test_duplicate_create_conflicts_and_keeps_one_job(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "once", command=["true"])
    error = api_error(create, kube, "once", command=["true"])
    assert error.status == 409 and "AlreadyExists" in error.body
    assert k8s.created == ["once"] and len(k8s.pods()) == 1


def test_reading_missing_objects_is_not_found(kube: Kube) -> None:
    assert api_error(kube.batch.read_namespaced_job, "ghost", NS).status == 404
    assert api_error(kube.core.read_namespaced_pod, "ghost-abcde", NS).status == 404
    assert api_error(kube.batch.delete_namespaced_job, "ghost", NS, propagation_policy="Background").status == 404


@pytest.mark.parametrize("name", ["Upper-case", "a" * 64, "under_score", "-dash"])
def test_invalid_job_names_are_rejected(k8s: FakeKubernetesApi, kube: Kube, name: str) -> None:
    error = api_error(create, kube, name, command=["true"])
    assert error.status == 422 and '"reason":"Invalid"' in error.body.replace(" ", "")
    assert k8s.created == []


def test_longest_valid_name_is_accepted(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "a" * 63, command=["true"])
    assert k8s.created == ["a" * 63]


# ---------------------------------------------------------------- selectors
def test_label_selectors_pick_jobs_and_pods(kube: Kube) -> None:
    uid = create(kube, "step-2", command=["true"], labels={"app": "jervis", "step": "2"}).metadata.uid
    create(kube, "step-1", command=["true"], labels={"app": "jervis", "step": "1"})
    create(kube, "unlabelled", command=["true"])

    names = [j.metadata.name for j in kube.batch.list_namespaced_job(NS, label_selector="app=jervis,step=2").items]
    assert names == ["step-2"]
    everything = kube.batch.list_namespaced_job(NS, label_selector="app=jervis").items
    assert sorted(j.metadata.name for j in everything) == ["step-1", "step-2"]
    pod = the_pod(kube, "step-2")
    assert pod.metadata.labels["controller-uid"] == uid and pod.metadata.labels["step"] == "2"
    assert pod.metadata.name.startswith("step-2-") and len(pod.metadata.name) == len("step-2-") + 5


def test_watch_resumes_after_resource_version(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """A watch from a list's resourceVersion gets only later events: nothing of the older Job."""
    create(kube, "before", command=["true"])
    k8s.wait_for_job("before", "Complete")
    version = kube.batch.list_namespaced_job(NS).metadata.resource_version
    create(kube, "after", command=["true"])
    k8s.wait_for_job("after", "Complete")

    events = list(watch.Watch().stream(kube.batch.list_namespaced_job, NS, resource_version=version,
                                       timeout_seconds=1))

    assert {e["object"].metadata.name for e in events} == {"after"}
    assert events[0]["type"] == "ADDED" and all(int(e["object"].metadata.resource_version) > int(version)
                                                 for e in events)


def test_watch_from_before_a_reset_is_gone(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """History does not survive reset(): an older resourceVersion gets 410 Gone, as after etcd compaction."""
    create(kube, "first", command=["true"])
    version = kube.batch.list_namespaced_job(NS).metadata.resource_version
    create(kube, "second", command=["true"])
    k8s.reset()

    stream = watch.Watch().stream(kube.batch.list_namespaced_job, NS, resource_version=version, timeout_seconds=1)
    assert api_error(next, stream).status == 410


# ----------------------------------------------------------- start failures
def test_unmapped_image_without_command_waits_in_err_image_pull(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "nopull")
    assert waiting_reason(k8s, kube, "nopull") == "ErrImagePull"
    status = kube.batch.read_namespaced_job("nopull", NS).status
    assert status.active == 1 and not status.conditions and not k8s.processes_alive("nopull")
    error = api_error(kube.core.read_namespaced_pod_log, the_pod(kube, "nopull").metadata.name, NS)
    assert error.status == 400 and "is waiting to start: ErrImagePull" in error.body


def test_missing_secret_is_a_container_config_error(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "nosecret", command=["true"], env=[secret_env("TOKEN", "absent", "token")])
    assert waiting_reason(k8s, kube, "nosecret") == "CreateContainerConfigError"
    assert not k8s.processes_alive("nosecret")


def test_missing_optional_secret_is_skipped(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "optional", command=["sh", "-c", 'echo "${TOKEN-unset}"'],
           env=[secret_env("TOKEN", "absent", "token", optional=True)])
    k8s.wait_for_job("optional", "Complete")
    assert kube.core.read_namespaced_pod_log(the_pod(kube, "optional").metadata.name, NS) == "unset\n"


def test_mount_map_rewrites_env_argv_and_working_dir(k8s: FakeKubernetesApi, kube: Kube, tmp_path: Path) -> None:
    host = Path(os.path.realpath(tmp_path)) / "volume"
    (host / "repo").mkdir(parents=True)
    k8s.configure(mount_map={"/data": str(host)})
    create(kube, "mapped", command=["sh", "-c", 'pwd; echo "$REPO"; echo "$1"', "sh", "/data/repo/file.txt"],
           env=[client.V1EnvVar(name="REPO", value="/data/repo"), client.V1EnvVar(name="OTHER", value="/database")],
           working_dir="/data/repo")

    k8s.wait_for_job("mapped", "Complete")

    log = kube.core.read_namespaced_pod_log(the_pod(kube, "mapped").metadata.name, NS).splitlines()
    assert log == [str(host / "repo"), str(host / "repo"), str(host / "repo/file.txt")]


# ---------------------------------------------------- discovery and plumbing
def test_discovery_endpoints_deserialize(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """What clients ask first (with trailing slashes) is schema-complete for their models."""
    assert client.VersionApi().get_code().major == "1"
    assert client.CoreApi().get_api_versions().versions == ["v1"]
    assert [g.name for g in client.ApisApi().get_api_versions().groups] == ["batch"]
    assert "jobs" in [r.name for r in kube.batch.get_api_resources().resources]
    assert "pods" in [r.name for r in kube.core.get_api_resources().resources]
    assert ("GET", "/version/") in k8s.requests and ("GET", "/api/") in k8s.requests  # the client's own paths


def test_requests_without_the_token_are_refused(k8s: FakeKubernetesApi) -> None:
    """Only a client really configured from the kubeconfig gets in (as on a real cluster)."""
    assert httpx.get(f"{k8s.url}/apis/batch/v1/namespaces/{NS}/jobs").status_code == 401
    assert httpx.get(f"{k8s.url}/version").status_code == 200


def test_reset_kills_running_processes(k8s: FakeKubernetesApi, kube: Kube) -> None:
    create(kube, "leftover", command=SLEEP)
    k8s.wait_for_job("leftover", "Active")
    pid = int(the_pod(kube, "leftover").status.container_statuses[0].container_id.removeprefix("fake://"))

    k8s.reset()

    assert k8s.jobs() == {} and k8s.created == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# ------------------------------------------------- modes for deadline tests
def test_unschedulable_pods_stay_pending_without_a_node(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """What a real cluster shows for a pod no node fits: Pending, PodScheduled False, no container status."""
    k8s.configure(unschedulable=True)
    create(kube, "unfit", command=["true"], deadline=1)
    pod = the_pod(kube, "unfit")
    [scheduled] = pod.status.conditions
    assert pod.status.phase == "Pending" and pod.spec.node_name is None and pod.status.container_statuses is None
    assert (scheduled.type, scheduled.status, scheduled.reason) == ("PodScheduled", "False", "Unschedulable")
    error = api_error(kube.core.read_namespaced_pod_log, pod.metadata.name, NS)
    assert error.status == 400 and "does not have a host assigned" in error.body
    assert kube.batch.read_namespaced_job("unfit", NS).status.active == 1
    # activeDeadlineSeconds still counts from the Job's start, as on a real cluster
    k8s.wait_for_job("unfit", "Failed", timeout=5)
    assert condition(kube.batch.read_namespaced_job("unfit", NS), "Failed").reason == "DeadlineExceeded"
    assert not k8s.processes_alive("unfit")


def test_without_finishing_jobs_a_job_stays_active_after_its_pod_ends(k8s: FakeKubernetesApi, kube: Kube) -> None:
    """(That activeDeadlineSeconds is not enforced either shows in the runner's never-finished test.)"""
    k8s.configure(finish_jobs=False)
    create(kube, "forever", command=["true"])
    k8s.wait_until(lambda: the_pod(kube, "forever").status.phase == "Succeeded" or None, 5, lambda: "pod Succeeded")
    status = kube.batch.read_namespaced_job("forever", NS).status
    assert status.conditions is None and status.active == 1


def test_a_finalizer_keeps_a_deleted_job_while_its_pods_go(k8s: FakeKubernetesApi, kube: Kube) -> None:
    k8s.configure(finalizer="example.com/hold")
    create(kube, "held", command=SLEEP)
    k8s.wait_for_job("held", "Active")
    kube.batch.delete_namespaced_job("held", NS, propagation_policy="Background")
    kept = kube.batch.read_namespaced_job("held", NS)
    assert kept.metadata.deletion_timestamp is not None and kept.metadata.finalizers == ["example.com/hold"]
    assert k8s.pods() == {}
    k8s.wait_until(lambda: not k8s.processes_alive("held") or None, 5, lambda: "the process to die")
