"""The documentation points only into the repository, and `docs/api.md` covers every route.

- Every relative Markdown link `[text](target)` in README.md, docs/*.md and agent-images/*.md
  names a file or folder of the repository (anchors stripped).
- Every backticked path that starts at a repository entry (`app/…`, `k8s/…`, `docs/api.md`, or,
  in agent-images/*.md, `entrypoint/…`) exists.
- Nothing in them climbs out of the repository with `../`.
- Every route of the service appears in `docs/api.md` as `METHOD /path`, so the API document
  cannot fall behind the code.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path, PurePosixPath

import pytest
from fastapi import FastAPI

from app.api.router import api_router

REPO = Path(__file__).resolve().parents[2]
API_DOC = REPO / "docs" / "api.md"


def _docs() -> list[Path]:
    found = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "agent-images").glob("*.md"))]
    return [path for path in found if path.is_file()]


DOCS = _docs()

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_PARENT = re.compile(r"(?:\.\./)+[^\s`'\")\]]*")
#: Schemes (and `#anchor`-only targets) that are not files of the repository.
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#)", re.IGNORECASE)
#: What cannot be a concrete path: placeholders, globs, shell, ellipses, spaces.
_NOT_A_PATH = re.compile(r"[\s<>{}*?$|…,;=()\[\]\"']")


@cache
def repository_files() -> frozenset[str]:
    """Tracked and new (not ignored) files, as repository-relative POSIX paths; without git,
    every file outside the usual ignored folders."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                             cwd=REPO, capture_output=True, check=True).stdout.decode()
        files = {name for name in out.split("\0") if name and (REPO / name).exists()}
        if files:
            return frozenset(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    skip = {".git", ".venv", ".cache", ".data", "__pycache__", ".pytest_cache"}
    return frozenset(p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                     if p.is_file() and not skip.intersection(p.relative_to(REPO).parts))


@cache
def repository_entries() -> frozenset[str]:
    """Every file and every folder that holds one."""
    entries: set[str] = set()
    for name in repository_files():
        parts = PurePosixPath(name).parts
        entries.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(entries)


def _exists(relative: str) -> bool:
    return relative.rstrip("/") in repository_entries()


def _inside(doc: Path, target: str) -> str | None:
    """`target` (relative to `doc`) as a repository path, or None when it leaves the repository."""
    resolved = (doc.parent / target).resolve()
    try:
        return resolved.relative_to(REPO).as_posix() if resolved != REPO else ""
    except ValueError:
        return None


def _prose(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


def _without_code_blocks(text: str) -> str:
    return _FENCE.sub("", text)


def links(doc: Path) -> list[str]:
    text = _without_code_blocks(_prose(doc))
    return [m.group(1) for pattern in (_LINK, _IMAGE) for m in pattern.finditer(text)]


def path_references(doc: Path) -> list[str]:
    """Backticked text that names a repository path: no spaces or placeholders, and its first
    segment is a top-level entry of the repository, or of the document's own folder."""
    base = doc.parent.relative_to(REPO).as_posix()
    found = []
    for match in _CODE_SPAN.finditer(_without_code_blocks(_prose(doc))):
        token = match.group(1).strip()
        if not token or _NOT_A_PATH.search(token) or _EXTERNAL.match(token) or token.startswith(("/", "~", "-")):
            continue
        first = token.split("/", 1)[0]
        top_level = first in repository_entries() and "/" not in first
        local = base not in ("", ".") and f"{base}/{first}" in repository_entries()
        if top_level or local:
            found.append(token)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    problems = []
    for target in links(doc):
        if _EXTERNAL.match(target):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path:
            continue
        relative = _inside(doc, path)
        if relative is None:
            problems.append(f"{target}: outside the repository")
        elif not _exists(relative) and relative != "":
            problems.append(f"{target}: no such file or folder in the repository")
    assert problems == [], f"{doc.relative_to(REPO)}: {problems}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_backticked_repository_paths_exist(doc: Path) -> None:
    base = doc.parent.relative_to(REPO).as_posix()
    missing = []
    for token in path_references(doc):
        path = token.split("#", 1)[0].split(":", 1)[0]
        candidates = [path] + ([f"{base}/{path}"] if base not in ("", ".") else [])
        if not any(_exists(candidate) for candidate in candidates):
            missing.append(token)
    assert missing == [], f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_nothing_points_outside_the_repository(doc: Path) -> None:
    outside = [m.group(0) for m in _PARENT.finditer(_prose(doc)) if _inside(doc, m.group(0)) is None]
    assert outside == [], f"{doc.relative_to(REPO)} points outside the repository: {outside}"


def test_the_checks_see_what_they_should() -> None:
    """The scanners find the references they exist for (so a regex slip cannot pass everything)."""
    readme = REPO / "README.md"
    assert "docs/api.md" in links(readme)
    assert {"app/dev/", "app/graph/builder.py", "k8s/"} <= set(path_references(readme))
    agent_readme = REPO / "agent-images" / "README.md"
    assert "entrypoint/jervis_entrypoint/" in path_references(agent_readme)
    assert _inside(readme, "../shared/spec/kotlin-contract.md") is None
    assert _inside(agent_readme, "../app/main.py") == "app/main.py"


def _routes() -> list[tuple[str, str]]:
    """Every method and path the service serves, from the OpenAPI schema of an app built like
    `app.main.create_app` builds it (it includes exactly `api_router`), without settings."""
    app = FastAPI()
    app.include_router(api_router)
    methods = {"get", "post", "put", "patch", "delete"}
    return sorted((method.upper(), path) for path, item in app.openapi()["paths"].items()
                  for method in item if method in methods)


@pytest.mark.parametrize(("method", "path"), _routes(), ids=lambda v: v)
def test_every_route_is_documented(method: str, path: str) -> None:
    doc = API_DOC.read_text(encoding="utf-8")
    # `POST /orchestrate` must be named for itself, not only as the start of `/orchestrate/stream`.
    assert re.search(re.escape(f"{method} {path}") + r"(?![\w/{-])", doc), f"{method} {path} is not in docs/api.md"


def test_the_router_is_what_the_app_serves() -> None:
    source = (REPO / "app" / "main.py").read_text(encoding="utf-8")
    assert "app.include_router(api_router)" in source
    assert len(re.findall(r"\.(?:include_router|add_api_route|add_route|get|post|put|delete|patch)\(", source)) == 1, (
        "app/main.py registers routes besides api_router: cover them in _routes()")
    routes = _routes()
    assert ("POST", "/orchestrate/stream") in routes and ("GET", "/status/{thread_id}") in routes
    assert ("POST", "/correction/correct-targeted") in routes and len(routes) >= 18
