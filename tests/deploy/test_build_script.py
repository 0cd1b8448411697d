"""k8s/build_orchestrator.sh: syntax, help, and a dry run that renders without touching anything."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.deploy.helpers import K8S_DIR, find, kubectl, load_docs, run

SCRIPT = K8S_DIR / "build_orchestrator.sh"
REGISTRY = "registry.example.test/jervis"
IMAGE = f"{REGISTRY}/jervis-orchestrator:v7"


def script_env(tmp_path: Path, *, cluster: bool = False, **extra: str) -> dict[str, str]:
    """A clean environment whose `docker` and `kubectl` come first on PATH and log their calls
    (to `calls` in tmp_path). `kubectl kustomize` runs the real one. Without `cluster` docker
    fails and nothing else is expected; with it docker succeeds, `kubectl apply -k DIR` saves
    the render of DIR as applied.yaml, and the rest (rollout status) succeeds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls"
    (bin_dir / "docker").write_text(f'#!/bin/sh\necho "docker $*" >> "{log}"\nexit {0 if cluster else 97}\n')
    real = shutil.which("kubectl") or "false"
    apply = f'"{real}" kustomize "$3" > "{tmp_path}/applied.yaml"; exit $?' if cluster else "exit 97"
    (bin_dir / "kubectl").write_text(
        f'#!/bin/sh\necho "kubectl $*" >> "{log}"\n'
        f'if [ "$1" = kustomize ]; then exec "{real}" "$@"; fi\n'
        f'if [ "$1 $2" = "apply -k" ]; then {apply}; fi\n'
        f'exit {0 if cluster else 97}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    path = f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {"PATH": path, "HOME": str(tmp_path), "TMPDIR": str(tmp_path), **extra}


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


def snapshot() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(K8S_DIR.iterdir()) if p.is_file()}


def test_syntax_and_strict_mode() -> None:
    assert run(["bash", "-n", SCRIPT]).returncode == 0
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    assert os.access(SCRIPT, os.X_OK)
    assert "damek" not in text, "no default registry from the spec's example"


def test_help(tmp_path: Path) -> None:
    for flag in ("-h", "--help"):
        result = run([SCRIPT, flag], env=script_env(tmp_path))
        assert result.returncode == 0 and "--dry-run" in result.stdout and "CONTAINER_REGISTRY" in result.stdout


def test_registry_is_required(tmp_path: Path) -> None:
    result = run([SCRIPT, "--dry-run"], env=script_env(tmp_path))
    assert result.returncode != 0 and "CONTAINER_REGISTRY is not set" in result.stderr
    assert calls(tmp_path) == []
    bad = run([SCRIPT, "--dry-run"], env=script_env(tmp_path, CONTAINER_REGISTRY="https://x|y"))
    assert bad.returncode != 0 and "not a registry path" in bad.stderr


def test_dry_run_prints_the_commands_and_renders_the_new_image(tmp_path: Path) -> None:
    kubectl()  # skips when kubectl is absent
    before = snapshot()
    result = run([SCRIPT, "--dry-run"], env=script_env(tmp_path, CONTAINER_REGISTRY=REGISTRY, TAG="v7"))
    assert result.returncode == 0, result.stderr
    commands = [line.removeprefix("would run: ") for line in result.stderr.splitlines()
                if line.startswith("would run: ")]
    [build] = [c for c in commands if c.startswith("docker build ")]
    assert "--platform linux/amd64" in build and f"-t {IMAGE}" in build
    assert f"docker push {IMAGE}" in commands
    assert any(c.startswith("kubectl -n jervis rollout status deployment/jervis-orchestrator") for c in commands)

    docs = load_docs(result.stdout)
    [container] = find(docs, "Deployment", "jervis-orchestrator")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert find(docs, "ConfigMap", "jervis-orchestrator-config")["data"]["CONTAINER_REGISTRY"] == REGISTRY
    assert not any(d["kind"] == "Secret" for d in docs)
    assert snapshot() == before, "the dry run changed files in k8s/"
    assert calls(tmp_path) and all(c.startswith("kubectl kustomize ") for c in calls(tmp_path)), calls(tmp_path)
    assert list(tmp_path.glob("jervis-k8s.*")) == [], "temporary copy left behind"


def test_default_tag_and_platform_option(tmp_path: Path) -> None:
    kubectl()
    result = run([SCRIPT, "-n", "--registry", "localhost:5000/jervis", "--platform", "linux/arm64"],
                 env=script_env(tmp_path))
    assert result.returncode == 0, result.stderr
    [build] = [line for line in result.stderr.splitlines() if "docker build" in line]
    assert "--platform linux/arm64" in build
    [image] = [d for d in load_docs(result.stdout) if d["kind"] == "Deployment"]
    tag = image["spec"]["template"]["spec"]["containers"][0]["image"].rsplit(":", 1)[1]
    assert tag.startswith("v") and tag[1:].isdigit() and len(tag) == 15


@pytest.mark.parametrize("tag", ["bad tag", "-x", "a" * 129])
def test_invalid_tag_is_refused(tmp_path: Path, tag: str) -> None:
    result = run([SCRIPT, "--dry-run"], env=script_env(tmp_path, CONTAINER_REGISTRY=REGISTRY, TAG=tag))
    assert result.returncode != 0 and "not a valid image tag" in result.stderr


def test_deploy_builds_pushes_applies_and_waits(tmp_path: Path) -> None:
    """The real path, against stand-ins for docker and the cluster: the steps of spec §19.4 in order."""
    kubectl()
    before = snapshot()
    result = run([SCRIPT], env=script_env(tmp_path, cluster=True, CONTAINER_REGISTRY=REGISTRY, TAG="v7"))
    assert result.returncode == 0, result.stderr
    steps = [c.split()[:3] for c in calls(tmp_path) if not c.startswith("kubectl kustomize")]
    assert steps == [["docker", "build", "--platform"], ["docker", "push", IMAGE],
                     ["kubectl", "apply", "-k"], ["kubectl", "-n", "jervis"]]
    assert "rollout status deployment/jervis-orchestrator" in calls(tmp_path)[-1]
    applied = load_docs((tmp_path / "applied.yaml").read_text())
    [container] = find(applied, "Deployment", "jervis-orchestrator")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert snapshot() == before


def test_a_failed_push_stops_the_deploy(tmp_path: Path) -> None:
    kubectl()
    env = script_env(tmp_path, cluster=True, CONTAINER_REGISTRY=REGISTRY, TAG="v7")
    (tmp_path / "bin" / "docker").write_text(f'#!/bin/sh\necho "docker $*" >> "{tmp_path}/calls"\n'
                                             '[ "$1" = push ] && exit 1\nexit 0\n')
    result = run([SCRIPT], env=env)
    assert result.returncode != 0
    assert not any(c.startswith("kubectl apply") for c in calls(tmp_path))
