"""Regenerates the README's generated sections from the code, so they cannot drift:

- `graph`: the orchestration graph as Mermaid, drawn from the compiled `StateGraph`;
- `settings`: every environment variable with its default and meaning, from `Settings`'
  field docstrings;
- `metrics`: every Prometheus series `/metrics` exposes, from `Metrics`.

`python -m tools.readme` rewrites README.md; `--check` exits 1 when it is out of date (a test
runs the check).
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

from app.config import Settings
from app.graph.builder import build_graph
from app.observability.metrics import Metrics

README = Path(__file__).resolve().parents[1] / "README.md"
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
        text = json.dumps(value, separators=(",", ":"))
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


def render(text: str) -> str:
    seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        seen.add(name)
        return match.group(1) + GENERATORS[name]() + match.group(4)

    result = _SECTION.sub(replace, text)
    missing = set(GENERATORS) - seen
    if missing:
        raise ValueError(f"README lacks the generated sections {sorted(missing)}")
    return result


def main(argv: list[str]) -> int:
    current = README.read_text()
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print("README.md is out of date: run `python -m tools.readme`", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
