"""Regenerates the documentation's generated sections from the code, so they cannot drift:

- `graph`: the orchestration graph as Mermaid, drawn from the compiled `StateGraph`;
- `settings`: every environment variable with its default and meaning, from `Settings`'
  field docstrings;
- `metrics`: every Prometheus series `/metrics` exposes, from `Metrics`.

Each lives in the document that owns it (`DOCUMENTS`). `python -m tools.readme` rewrites them;
`--check` exits 1 when one is out of date (a test runs the check).
"""

from __future__ import annotations

import json
import re
import sys
from enum import Enum
from pathlib import Path
from typing import Any

from prometheus_client.metrics import MetricWrapperBase
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from app.config import Settings
from app.graph.builder import build_graph
from app.observability.metrics import Metrics

REPO = Path(__file__).resolve().parents[1]
#: Which generated sections each document holds.
DOCUMENTS = {REPO / "docs" / "architecture.md": {"graph"}, REPO / "docs" / "configuration.md": {"settings"},
             REPO / "docs" / "operations.md": {"metrics"}}
_SECTION = re.compile(r"(<!-- BEGIN GENERATED: (?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- END GENERATED: (?P=name) -->)",
                      re.DOTALL)


def graph_section() -> str:
    mermaid = build_graph().compile().get_graph().draw_mermaid()
    return f"```mermaid\n{mermaid.rstrip()}\n```\n"


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "doc_default" in extra:
        return f"`{extra['doc_default']}`"
    value: Any = field.get_default(call_default_factory=True)
    if value is None:
        return "*(none)*"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, (dict, list)):
        text = json.dumps(to_jsonable_python(value), separators=(",", ":"))  # models inside: their fields
    else:
        text = str(value)
    return f"`{text}`" if text else "`\"\"`"


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def settings_section() -> str:
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        meaning = _cell(field.description or "")
        rows.append(f"| `{name.upper()}` | {_cell(_default(field))} | {meaning} |")
    return "\n".join(rows) + "\n"


def metrics_section() -> str:
    rows = ["| Metric | Type | Labels | Meaning |", "|---|---|---|---|"]
    for metric in vars(Metrics()).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        suffix = "_total" if metric._type == "counter" else ""
        labels = ", ".join(f"`{label}`" for label in metric._labelnames) or "—"
        rows.append(f"| `{metric._name}{suffix}` | {metric._type} | {labels} | {_cell(metric._documentation)} |")
    return "\n".join(rows) + "\n"


GENERATORS = {"graph": graph_section, "settings": settings_section, "metrics": metrics_section}


def render(text: str, wanted: set[str] | None = None) -> str:
    """`text` with its generated sections written afresh; each of `wanted` (default: every
    section) must be there."""
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        seen.add(name)
        return match.group(1) + GENERATORS[name]() + match.group(4)

    result = _SECTION.sub(replace, text)
    missing = (set(GENERATORS) if wanted is None else wanted) - seen
    if missing:
        raise ValueError(f"the document lacks the generated sections {sorted(missing)}")
    return result


def main(argv: list[str]) -> int:
    stale = []
    for path, sections in DOCUMENTS.items():
        current = path.read_text()
        wanted = render(current, sections)
        if wanted == current:
            continue
        if "--check" in argv:
            stale.append(path.relative_to(REPO).as_posix())
        else:
            path.write_text(wanted)
    if stale:
        print(f"{', '.join(stale)} out of date: run `python -m tools.readme`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
