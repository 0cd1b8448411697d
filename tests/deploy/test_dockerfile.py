"""The orchestrator's Dockerfile and .dockerignore, statically (no Docker engine here).

Parsed with the shared parser (tests/dockerfile_parser.py); the build context is the repository
root filtered by `.dockerignore`, matched the way Docker matches it (tests/deploy/dockerignore.py).
"""

from __future__ import annotations

import ast
import posixpath
import re

import pytest

from app.agents.aider_install import AIDER_SPEC
from app.agents.local import ENTRYPOINT
from app.runtime.installs import MARKER
from tests.deploy import dockerignore
from tests.deploy.helpers import REPO_ROOT
from tests.dockerfile_parser import KEYWORDS, Instruction, copy_sources, env_pairs, exec_form, parse_dockerfile, stages

DOCKERFILE = REPO_ROOT / "Dockerfile"
#: An exact version tag (3.11.14-slim-bookworm, 8.0.15) or a digest: neither `latest` nor a moving `3.11`.
EXACT_VERSION = re.compile(r"^[^:@/]+(?:/[^:@/]+)*(?::\d+\.\d+\.\d+[\w.-]*)?(?:@sha256:[0-9a-f]{64})?$")


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def final(instructions: list[Instruction]) -> list[Instruction]:
    return stages(instructions)[-1]


@pytest.fixture(scope="module")
def ignore() -> list[dockerignore.Pattern]:
    return dockerignore.parse((REPO_ROOT / ".dockerignore").read_text())


def args_of(stage: list[Instruction], keyword: str) -> list[str]:
    return [i.args for i in stage if i.keyword == keyword]


def env_of(stage: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for args in args_of(stage, "ENV"):
        env |= env_pairs(args)
    return env


def pinned_exactly(image: str) -> bool:
    return ("@sha256:" in image or re.search(r":\d+\.\d+\.\d+", image) is not None) and bool(EXACT_VERSION.match(image))


def test_multi_stage_with_exactly_pinned_bases(instructions: list[Instruction]) -> None:
    assert {i.keyword for i in instructions} <= KEYWORDS
    froms = args_of(instructions, "FROM")
    assert len(froms) >= 2, "a builder stage and a slim runtime stage"
    for args in froms:
        image = args.split()[0]
        assert pinned_exactly(image), f"FROM {image}: pin an exact version tag (or a digest)"
    assert pinned_exactly("python:3.11.14-slim-bookworm") and pinned_exactly("x/y:1.2.3@sha256:" + "a" * 64)
    assert not pinned_exactly("python:3.11-slim") and not pinned_exactly("python:latest")
    assert not pinned_exactly("python")


def test_builder_makes_the_venv_from_the_pinned_requirements(instructions: list[Instruction],
                                                             final: list[Instruction]) -> None:
    *builders, _ = stages(instructions)
    builder = next(s for s in builders if any("-r /" in a or "-r requirements" in a for a in args_of(s, "RUN")))
    name = builder[0].args.split()[-1]
    runs = " ".join(args_of(builder, "RUN"))
    assert re.search(r"pip install [^&]*-r \S*requirements\.txt", runs)
    assert "--no-cache-dir" in runs or env_of(builder).get("PIP_NO_CACHE_DIR") == "1"
    copied = [copy_sources(a) for a in args_of(final, "COPY") if f"--from={name}" in a]
    [([venv], destination)] = copied
    assert venv == destination and env_of(final)["PATH"].startswith(f"{venv}/bin:")
    copies = [copy_sources(a)[0] for a in args_of(builder, "COPY")]
    assert ["requirements.txt"] in copies


def test_runtime_stage(final: list[Instruction]) -> None:
    users = args_of(final, "USER")
    assert users, "the final stage sets a USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "numeric and non-root, so runAsNonRoot can verify it"
    assert args_of(final, "EXPOSE") == ["8090"]
    assert args_of(final, "STOPSIGNAL") in ([], ["SIGTERM"])
    assert not args_of(final, "ENTRYPOINT"), "the launcher must be PID 1"
    [cmd] = args_of(final, "CMD")
    # exec form: no shell between Docker and the launcher, SIGTERM reaches it. app.serve takes HOST and
    # PORT from the settings (a CLI --host would bypass the refusal to listen without a token) and
    # believes forwarded headers from TRUSTED_PROXIES only.
    assert exec_form(cmd) == ["python", "-m", "app.serve"]
    env = env_of(final)
    assert env["HOST"] == "0.0.0.0" and env["PORT"] == "8090"
    assert "FORWARDED_ALLOW_IPS" not in env and "TRUSTED_PROXIES" not in env, "no proxy is believed by default"
    assert "API_TOKEN" not in env and "ALLOW_NO_TOKEN" not in env, "without a token the image refuses to start"
    runs = " ".join(args_of(final, "RUN"))
    assert re.search(r"apt-get install [^&]*\bgit\b", runs), "the workspace manager and local runner run git"
    assert env["HOME"] == "/tmp" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    labels = " ".join(args_of(final, "LABEL"))
    for key in ("title", "version", "revision"):
        assert f"org.opencontainers.image.{key}=" in labels


def test_healthcheck_uses_python_against_the_readiness_route(final: list[Instruction]) -> None:
    [check] = args_of(final, "HEALTHCHECK")
    command = check[check.index("CMD"):]
    argv = exec_form(command[len("CMD"):].strip())
    assert argv[:2] == ["python", "-c"]
    assert "http://127.0.0.1:8090/health/ready" in argv[2]
    assert "curl" not in check and "wget" not in check
    compile(argv[2], "<healthcheck>", "exec")


def test_image_keeps_the_repository_layout(final: list[Instruction]) -> None:
    """The CMD runs in the directory holding app/, and the local runner finds the entrypoint at
    parents[2] of app/agents/local.py, so the files land at the same relative paths."""
    workdir = "/"
    placed: dict[str, str] = {}
    for instruction in final:
        if instruction.keyword == "WORKDIR":
            workdir = posixpath.join(workdir, instruction.args)
        elif instruction.keyword == "COPY" and "--from=" not in instruction.args:
            sources, destination = copy_sources(instruction.args)
            for source in sources:
                placed[source.rstrip("/")] = posixpath.normpath(posixpath.join(workdir, destination))
    needed = ["app/main.py", "app/agents/local.py", (ENTRYPOINT / "__main__.py").relative_to(REPO_ROOT).as_posix(),
              "agent-images/entrypoint/openhands_agent.py",  # the entrypoint runs it from beside its package
              "agent-images/kb_mcp/kb_server.py"]
    for file in needed:
        source = next((s for s in placed if file == s or file.startswith(s + "/")), None)
        assert source is not None, f"{file} is not copied into the image"
        in_image = posixpath.join(placed[source], posixpath.relpath(file, source))
        assert in_image == posixpath.join(workdir, file), f"{file} lands at {in_image}"


def test_every_copy_source_is_in_the_build_context(instructions: list[Instruction],
                                                   ignore: list[dockerignore.Pattern]) -> None:
    for instruction in instructions:
        if instruction.keyword not in ("COPY", "ADD") or "--from=" in instruction.args:
            continue
        for source in copy_sources(instruction.args)[0]:
            assert (REPO_ROOT / source).exists(), f"line {instruction.line}: {source} does not exist"
            included, dropped = dockerignore.context_files(REPO_ROOT, source, ignore)
            assert included, f"line {instruction.line}: .dockerignore drops all of {source}"
            real = [f for f in dropped if "__pycache__" not in f and not f.endswith(".pyc")
                    and not f.startswith(NOT_THE_SERVICE)]
            assert not real, f"line {instruction.line}: .dockerignore drops {real}"


#: Programs of their own beside the service: the terminal client and the embedded-default launchers.
NOT_THE_SERVICE = ("app/cli/", "app/dev/")


def test_the_image_ships_the_service_only(instructions: list[Instruction], ignore: list[dockerignore.Pattern]) -> None:
    """What the runtime stage copies holds no terminal client and no launcher of embedded servers,
    and the service itself is all there: every module `app.main` imports, transitively, and the
    console's page and assets (read from the package at run time)."""
    copied: list[str] = []
    for instruction in stages(instructions)[-1]:
        if instruction.keyword == "COPY" and "--from=" not in instruction.args:
            for source in copy_sources(instruction.args)[0]:
                copied += dockerignore.context_files(REPO_ROOT, source, ignore)[0]
    assert not [f for f in copied if f.startswith(NOT_THE_SERVICE)]
    shipped = {f for f in copied if f.endswith(".py")}
    for module in imported_app_modules("app.main"):
        path = module.replace(".", "/")
        assert f"{path}.py" in shipped or f"{path}/__init__.py" in shipped, f"{module} is not in the image"
    console = sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "app/api/console").iterdir())
    assert "app/api/console/console.js" in console and set(console) <= set(copied)


def imported_app_modules(root: str) -> set[str]:
    """`app.*` modules `root` imports, transitively, read from the sources (nothing is imported)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        base = REPO_ROOT / module.replace(".", "/")
        path = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            todo += [n for n in names if n and n.startswith("app.")]
    return seen


def test_dockerignore_keeps_local_state_and_secrets_out(ignore: list[dockerignore.Pattern]) -> None:
    for path in (".venv/bin/python", ".git/HEAD", "tests/conftest.py", ".cache/llm/model.gguf", ".data/mongo/x",
                 ".env", ".env.local", "bench/usage.py", "app/__pycache__/main.cpython-311.pyc", "app/x.pyc"):
        assert dockerignore.excluded(path, ignore), f"{path} would be sent to the builder"
    for path in ("requirements.txt", "app/main.py", "agent-images/entrypoint/jervis_entrypoint/__main__.py",
                 "agent-images/entrypoint/jervis_entrypoint/main.py",
                 "agent-images/entrypoint/jervis_entrypoint/agents/aider.py",
                 "agent-images/entrypoint/openhands_agent.py", "agent-images/kb_mcp/kb_server.py"):
        assert not dockerignore.excluded(path, ignore), f"{path} is needed"


def test_dockerignore_matcher_follows_docker() -> None:
    patterns = dockerignore.parse("# c\n/.git\n**/__pycache__\n*.md\n!README.md\ndocs/*/tmp\na?c\n")
    assert dockerignore.excluded(".git/objects/ab", patterns)
    assert dockerignore.excluded("x/y/__pycache__/m.pyc", patterns) and dockerignore.excluded("__pycache__/m", patterns)
    assert dockerignore.excluded("NOTES.md", patterns) and not dockerignore.excluded("README.md", patterns)
    assert not dockerignore.excluded("sub/NOTES.md", patterns), "* stays within one segment"
    assert dockerignore.excluded("docs/v1/tmp/f", patterns) and not dockerignore.excluded("docs/tmp", patterns)
    assert dockerignore.excluded("abc", patterns) and not dockerignore.excluded("abbc", patterns)
    assert not dockerignore.excluded("app/main.py", patterns)


def test_the_local_aider_is_built_in_only_when_asked_and_with_the_service_pin(instructions: list[Instruction],
                                                                           final: list[Instruction]) -> None:
    """`LOCAL_AIDER=true` (docker-compose) bakes the local runner's Aider in at AIDER_VENV, marked
    as installed with the pin the service checks (so the read-only container never installs);
    the cluster image gets an empty directory. The agent image pins the same version."""
    [aider] = [s for s in stages(instructions) if s[0].args.split()[-1] == "aider"]
    assert "LOCAL_AIDER=false" in args_of(aider, "ARG")
    [run] = args_of(aider, "RUN")
    assert f'pip install --no-cache-dir "{AIDER_SPEC}"' in run
    assert f'echo "{AIDER_SPEC}" > /opt/aider-venv/{MARKER}' in run and "else mkdir -p /opt/aider-venv" in run
    assert "--from=aider /opt/aider-venv /opt/aider-venv" in args_of(final, "COPY")
    assert env_of(final)["AIDER_VENV"] == "/opt/aider-venv"
    agent_image = parse_dockerfile((REPO_ROOT / "agent-images" / "aider" / "Dockerfile").read_text())
    assert f"AIDER_VERSION={AIDER_SPEC.partition('==')[2]}" in args_of(agent_image, "ARG")


def test_the_local_runner_in_the_image_never_runs_an_agent_unconfined(final: list[Instruction]) -> None:
    """bubblewrap is installed and required: without a working sandbox the local runner refuses
    every agent, Aider included (AGENT_SANDBOX=bwrap), instead of running it unconfined."""
    runs = " ".join(args_of(final, "RUN"))
    assert re.search(r"apt-get install [^&]*\bbubblewrap\b", runs)
    assert env_of(final)["AGENT_SANDBOX"] == "bwrap"
