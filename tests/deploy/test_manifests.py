"""k8s/: schema-valid (offline, strict), and the kustomize render is complete and consistent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.helpers import (
    AGENT_NAMESPACE,
    K8S_DIR,
    KUBERNETES_VERSIONS,
    NAMESPACE,
    Doc,
    dev_tool,
    find,
    kubectl,
    kustomization,
    load_docs,
    load_file,
    manifest_files,
    private_ips,
    render_kustomize,
    run,
    strings,
)

EXPECTED_KINDS = {"Namespace", "ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim", "ConfigMap",
                  "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
CLUSTER_SCOPED = {"Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
#: Objects of the agents' namespace; everything else namespaced is the orchestrator's (`jervis`).
AGENT_OBJECTS = {("ServiceAccount", "jervis-agent"), ("ConfigMap", "jervis-agent-policy"),
                 ("NetworkPolicy", "default-deny"),
                 ("NetworkPolicy", "jervis-agent-egress"), ("NetworkPolicy", "jervis-agent-git-push"),
                 ("Role", "jervis-orchestrator-role"), ("RoleBinding", "jervis-orchestrator")}


@pytest.fixture(scope="module")
def rendered() -> list[Doc]:
    return render_kustomize()


def validate(paths: list[Path], version: str) -> None:
    """kubernetes-validate --strict: every document must pass against a schema (an unknown kind or
    apiVersion only warns there, so it is a failure here)."""
    result = run([dev_tool("kubernetes-validate"), "--strict", "--kubernetes-version", version, *paths])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Couldn't find schema" not in output, output
    for path in paths:
        assert output.count(f"{path} passed for resource ") == len(load_file(path)), output


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_file_is_schema_valid(version: str) -> None:
    files = manifest_files()
    assert {f.name for f in files} >= {"namespace.yaml", "orchestrator-rbac.yaml", "pvc.yaml", "configmap.yaml",
                                       "secret.example.yaml", "app_orchestrator.yaml", "pdb.yaml", "networkpolicy.yaml",
                                       "agents-namespace.yaml", "agents-networkpolicy.yaml", "agents-admission.yaml"}
    validate(files, version)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_optional_manifests_are_schema_valid(version: str) -> None:
    files = sorted((K8S_DIR / "optional").glob("*.yaml"))
    assert [f.name for f in files] == ["cloud-agents-egress.yaml"]
    validate(files, version)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_rendered_kustomization_is_schema_valid(version: str, tmp_path: Path) -> None:
    result = run([kubectl(), "kustomize", K8S_DIR])
    assert result.returncode == 0, result.stderr
    out = tmp_path / "rendered.yaml"
    out.write_text(result.stdout)
    validate([out], version)


def test_validation_rejects_an_unknown_field(tmp_path: Path) -> None:
    """The strict mode really is strict (else the tests above would prove nothing)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((K8S_DIR / "app_orchestrator.yaml").read_text().replace(
        "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: true\n            readOnlyRootFileSystem: true"))
    result = run([dev_tool("kubernetes-validate"), "--strict", "--kubernetes-version", KUBERNETES_VERSIONS[0], bad])
    assert result.returncode != 0 and "readOnlyRootFileSystem" in result.stdout + result.stderr


def test_render_has_every_kind_in_its_namespace(rendered: list[Doc]) -> None:
    """Two namespaces, each object naming its own (the kustomization has no `namespace:`, which would
    move the agents' objects into the orchestrator's)."""
    assert "namespace" not in kustomization()
    assert {d["kind"] for d in rendered} == EXPECTED_KINDS
    find(rendered, "Namespace", NAMESPACE)
    find(rendered, "Namespace", AGENT_NAMESPACE)
    for doc in rendered:
        if doc["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in doc["metadata"], doc["metadata"]
        elif doc["kind"] == "PersistentVolumeClaim":  # the data volume, claimed in each namespace
            assert doc["metadata"]["namespace"] in (NAMESPACE, AGENT_NAMESPACE), doc["metadata"]
        else:
            agents = (doc["kind"], doc["metadata"]["name"]) in AGENT_OBJECTS
            assert doc["metadata"].get("namespace") == (AGENT_NAMESPACE if agents else NAMESPACE), doc["metadata"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "jervis"
    assert find(rendered, "RoleBinding")["subjects"][0]["namespace"] == NAMESPACE
    claims = [d for d in rendered if d["kind"] == "PersistentVolumeClaim"]
    assert sorted(d["metadata"]["namespace"] for d in claims) == [NAMESPACE, AGENT_NAMESPACE]


def test_secrets_are_templates_kept_out_of_the_kustomization(rendered: list[Doc]) -> None:
    """`kubectl apply -k` must never overwrite the real Secrets with the template's empty values."""
    listed = set(kustomization()["resources"])
    assert "secret.example.yaml" not in listed
    assert {p.name for p in manifest_files()} - listed == {"secret.example.yaml"}, "a manifest is not deployed"
    assert not any(d["kind"] == "Secret" for d in rendered)
    for secret in load_file(K8S_DIR / "secret.example.yaml"):
        assert secret["kind"] == "Secret" and "data" not in secret
        values = set(secret["stringData"].values())
        assert values <= {""}, f"{secret['metadata']['name']} holds values: a template carries none"


def test_image_comes_from_the_kustomization_and_is_not_latest(rendered: list[Doc]) -> None:
    [entry] = kustomization()["images"]
    [container] = find(rendered, "Deployment", "jervis-orchestrator")["spec"]["template"]["spec"]["containers"]
    assert entry["name"] == "jervis-orchestrator"
    assert container["image"] == f"{entry['newName']}:{entry['newTag']}"
    assert entry["newTag"] != "latest"


def test_selectors_survive_kustomize(rendered: list[Doc]) -> None:
    """Kustomize's labels must not leak into selectors (immutable on a Deployment, and they would
    make the Service and the NetworkPolicy miss pods labelled otherwise)."""
    deployment = find(rendered, "Deployment", "jervis-orchestrator")
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "jervis-orchestrator"}}
    assert find(rendered, "Service", "jervis-orchestrator")["spec"]["selector"] == {"app": "jervis-orchestrator"}
    policy = find(rendered, "NetworkPolicy", "jervis-orchestrator")
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app": "jervis-orchestrator"}}
    assert policy["spec"]["ingress"][0]["from"] == [{"podSelector": {"matchLabels": {"app": "jervis-server"}}}]
    budget = find(rendered, "PodDisruptionBudget", "jervis-orchestrator")
    assert budget["spec"]["selector"] == deployment["spec"]["selector"]
    [spread] = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["labelSelector"] == deployment["spec"]["selector"]


def test_no_private_ip_anywhere() -> None:
    for path in sorted(p for p in K8S_DIR.rglob("*") if p.is_file()):
        assert not private_ips(path.read_text()), f"{path.name}: use a service name, not a node IP"
    for doc in load_docs("\n---\n".join(p.read_text() for p in manifest_files())):
        assert not any(private_ips(s) for s in strings(doc))
    assert private_ips("http://192.168.100.117:11434 10.1.2.3 172.20.0.1") == ["192.168.100.117", "10.1.2.3",
                                                                               "172.20.0.1"]
    assert private_ips("http://172.15.0.1 8.8.8.8 1.10.0.0.1") == []
