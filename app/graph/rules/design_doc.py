"""The design document of a generative request: where it goes, what it says, writing it.

The model answers a `DesignPlan` (context, decisions with reasons, interfaces, goals); the
document is rendered from it here, so its shape never depends on a small model's formatting, and
written into the workspace: into the project's own place for designs when it has one
(`docs/design`, `doc/design`, `docs/adr`, `docs/decisions`, `design`), else `docs/design/`. The
user approves it at the `generative_design` gate, a refusal with a reason rewrites it in place,
and it is committed with the work (its own commit first).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from pathlib import Path

from app.agents import confinement
from app.graph.rules import agent_files
from app.schemas.domain import DesignPlan

log = logging.getLogger(__name__)

PLACES = ("docs/design", "doc/design", "docs/adr", "docs/decisions", "design")
DEFAULT_PLACE = "docs/design"
EARLIER_CHARS = 3000
#: The largest earlier document read at all (a rendered design is a few KiB).
MAX_DOCUMENT_BYTES = 256 * 1024
#: What the revision prompt gets instead of a document that is a symlink (or not a regular file).
NOT_READ = ("(The earlier document {path} is a symbolic link or not a regular file now; it was not read. "
            "Write the design anew.)")


def slug(text: str, *, words: int = 6, limit: int = 48) -> str:
    """A file name from the request: ASCII, lower case, its first words joined by dashes."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", ascii_text.lower())[:words]
    return "-".join(parts)[:limit].strip("-") or "design"


def place(workspace: Path, query: str) -> str:
    """The document's path in the workspace: the project's design folder, a name free there."""
    folder = next((p for p in PLACES if (workspace / p).is_dir()), DEFAULT_PLACE)
    name, n = slug(query), 1
    while (workspace / folder / f"{name}{'' if n == 1 else f'-{n}'}.md").exists():
        n += 1
    return f"{folder}/{name}{'' if n == 1 else f'-{n}'}.md"


def render(plan: DesignPlan, *, title: str) -> str:
    """The document: context, decisions with reasons, interfaces, goals with what they wait for."""
    number = {g.id: n for n, g in enumerate(plan.goals, 1)}
    lines = [f"# {title}", ""]
    if plan.summary:
        lines += [plan.summary, ""]
    if plan.context:
        lines += ["## Context", "", plan.context, ""]
    if plan.decisions:
        lines += ["## Decisions", ""]
        lines += [f"- {d.decision}" + (f" — because {d.reason}" if d.reason else "") for d in plan.decisions]
        lines.append("")
    if plan.interfaces:
        lines += ["## Interfaces", "", *(f"- `{i}`" if "`" not in i else f"- {i}" for i in plan.interfaces), ""]
    lines += ["## Goals", ""]
    for goal in plan.goals:
        after = ", ".join(str(number[d]) for d in goal.dependencies if d in number)
        lines.append(f"{number[goal.id]}. **{goal.title}**" + (f" (after {after})" if after else "")
                     + (f": {goal.description}" if goal.description else ""))
    return "\n".join(lines).rstrip() + "\n"


def write(workspace: Path, path: str, text: str) -> None:
    """Write the document inside the workspace (never through a link that leads out of it)."""
    confinement.write_text(workspace, path, text)


def read(workspace: Path, path: str) -> str:
    """The document as it is now (the earlier design a revision starts from), bounded. It is the
    workspace's, and the LLM reads it: a symlink standing there (an agent's, a commit's) is not
    followed, and the model is told the document was not read instead."""
    document = agent_files.read(workspace, path, max_bytes=MAX_DOCUMENT_BYTES)
    if document.refused:
        log.warning("the earlier design document was not read: %s", document.refused)
        return NOT_READ.format(path=path)
    return (document.text or "")[:EARLIER_CHARS]


def discard(workspace: Path, path: str) -> None:
    """The design was refused for good: the document goes, with the folders it alone needed."""
    confinement.remove_file(workspace, path)
    folder = Path(path).parent
    while folder != Path("."):
        confinement.remove_empty_dir(workspace, str(folder))
        folder = folder.parent
