"""Pure builders of agent Jobs (spec §10.2): names, labels and the V1Job itself.

Names are deterministic per thread, goal, step, mode and attempt, so that an orchestrator that
restarts mid-step finds the Job it already created instead of starting a second one.

Every Job runs in `AGENT_NAMESPACE` under Pod Security's `restricted` profile (non-root, no privilege
escalation, every capability dropped, `RuntimeDefault` seccomp, a read-only root filesystem with
emptyDirs for HOME and /tmp), without a service account token, and sees of the data volume only its
own workspace (`job_mounts`). The namespace enforces the same (k8s/agents-namespace.yaml,
k8s/agents-admission.yaml): a Job that asked for more would be refused, not run.
"""

from __future__ import annotations

import hashlib
import json
import re

from kubernetes import client

from app.agents.agent_env import agent_secret_keys, job_variables
from app.agents.base import AgentJob
from app.agents.job_mounts import AGENT_HOME, data_mounts, scratch_mounts, volumes
from app.agents.worktrees import WORKTREES_SUFFIX
from app.config import Settings

APP_LABEL = "jervis-agent"
MAX_NAME = 63
#: The images' user (agent-images/*/Dockerfile: uid 1000, the orchestrator's too, so both write the volume).
AGENT_UID = 1000
_INVALID = re.compile(r"[^a-z0-9-]+")


def _slug(value: str, limit: int) -> str:
    return _INVALID.sub("-", value.lower()).strip("-")[:limit].strip("-") or "x"


def job_name(job: AgentJob) -> str:
    """`jervis-<task>-g<goal>-s<step>-a<attempt>[-test]-<digest>`: readable, DNS-1123, ≤ 63
    characters. Every attempt (and every plan revision, in the digest) has its own name, so a
    retry never meets the failed Job and a restart re-attaches to exactly the running attempt."""
    key = f"{job.thread_id}:{job.goal_index}:{job.step_index}:{job.revision}:{job.mode}:{job.attempt}"
    if job.workspace.parent.name.endswith(WORKTREES_SUFFIX):  # a goal of a wave, in its worktree: never the
        key += f":{job.workspace.name}"                        # same Job as the goal run again alone
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    step = f"g{job.goal_index}-s{job.step_index}" + (f"-r{job.revision}" if job.revision else "")
    where = {"agent": f"{step}-a{job.attempt}", "test": f"{step}-a{job.attempt}-test"}.get(job.mode, job.mode)
    head = f"jervis-{_slug(job.task_id, 24)}-{where}"
    return f"{head[: MAX_NAME - 9].rstrip('-')}-{digest}"


def step_label(job: AgentJob) -> str:
    """Which step a Job works on: every attempt of one step shares it (see `job_labels`)."""
    return f"g{job.goal_index}-s{job.step_index}-r{job.revision}"


def label_value(value: str) -> str:
    """Label values: ≤ 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", value)[:63]
    return cleaned.strip("-_.") or "none"


def job_labels(job: AgentJob) -> dict[str, str]:
    """`jervis-thread` + `jervis-step` select every attempt of one step (the runner retires a
    stale attempt before starting the next); `jervis-attempt` tells them apart."""
    return {"app": APP_LABEL, "agent-type": label_value(job.agent_type), "task-id": label_value(job.task_id),
            "jervis-mode": job.mode, "jervis-thread": label_value(job.thread_id), "jervis-step": step_label(job),
            "jervis-attempt": str(job.attempt)}


def agent_image(settings: Settings, agent_type: str) -> str:
    name = settings.agent_images.get(agent_type, f"jervis-{agent_type}")
    return f"{settings.container_registry.rstrip('/')}/{name}:{settings.agent_image_tag}"


def _env(settings: Settings, job: AgentJob) -> list[client.V1EnvVar]:
    """The job's variables and the agent secrets (`agent_env`, shared with the local runner): no
    service secret (MONGODB_URL, API_TOKEN, the service's own keys) is ever named here."""
    plain = job_variables(settings, job) | {"AGENT_MODEL": settings.agent_models.get(job.agent_type, "")}
    if job.agent_type == "aider" and job.entrypoint_mode == "agent":
        plain["AGENT_EXTRA_ARGS"] = json.dumps(settings.aider_args)
    env = [client.V1EnvVar(name=key, value=value) for key, value in plain.items()]
    # API keys by reference only: the values never appear in the Job object (none for test runs).
    env += [
        client.V1EnvVar(name=key, value_from=client.V1EnvVarSource(
            secret_key_ref=client.V1SecretKeySelector(name=settings.agent_secret_name, key=key, optional=True)))
        for key in agent_secret_keys(settings, job)
    ]
    return env


def restricted_context() -> client.V1SecurityContext:
    """The container's side of Pod Security's `restricted` profile, and a read-only root filesystem."""
    return client.V1SecurityContext(
        run_as_non_root=True, run_as_user=AGENT_UID, run_as_group=AGENT_UID, allow_privilege_escalation=False,
        capabilities=client.V1Capabilities(drop=["ALL"]), read_only_root_filesystem=True,
        seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault"))


def build_job(settings: Settings, job: AgentJob) -> client.V1Job:
    labels = job_labels(job)
    container = client.V1Container(
        name="agent",
        image=agent_image(settings, job.agent_type),
        image_pull_policy="IfNotPresent",
        # HOME on its emptyDir (the images' HOME is on the read-only root); /tmp is TMPDIR's default.
        env=[*_env(settings, job), client.V1EnvVar(name="HOME", value=AGENT_HOME)],
        working_dir=str(job.workspace),
        volume_mounts=[*data_mounts(settings.data_root, job), *scratch_mounts()],
        resources=client.V1ResourceRequirements(
            requests={"cpu": settings.agent_cpu_request, "memory": settings.agent_memory_request},
            limits={"cpu": settings.agent_cpu_limit, "memory": settings.agent_memory_limit},
        ),
        security_context=restricted_context(),
    )
    pod = client.V1PodSpec(
        restart_policy="Never",
        containers=[container],
        volumes=volumes(settings.pvc_claim_name, settings.agent_scratch_size_limit),
        service_account_name=settings.agent_service_account,
        # Agents need no Kubernetes API: no token in the pod, whichever account it runs as.
        automount_service_account_token=False,
        security_context=client.V1PodSecurityContext(
            run_as_non_root=True, run_as_user=AGENT_UID, run_as_group=AGENT_UID, fs_group=AGENT_UID,
            fs_group_change_policy="OnRootMismatch", seccomp_profile=client.V1SeccompProfile(type="RuntimeDefault")),
    )
    return client.V1Job(
        api_version="batch/v1",
        kind="Job",
        metadata=client.V1ObjectMeta(
            name=job_name(job), namespace=settings.agent_namespace, labels=labels,
            annotations={"jervis/thread-id": job.thread_id, "jervis/goal-index": str(job.goal_index),
                         "jervis/step-index": str(job.step_index), "jervis/attempt": str(job.attempt)},
        ),
        spec=client.V1JobSpec(
            backoff_limit=0,
            ttl_seconds_after_finished=settings.job_ttl_seconds,
            active_deadline_seconds=max(1, int(job.timeout_seconds)),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels), spec=pod),
        ),
    )
