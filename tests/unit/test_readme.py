"""The documentation's generated sections (graph, metrics, settings) match the code, and the
README stays a page a newcomer reads: short, with every moved section reachable from its index."""

from __future__ import annotations

import pytest

from app.config import Settings
from tools import readme


def test_generated_sections_are_up_to_date() -> None:
    for path, sections in readme.DOCUMENTS.items():
        current = path.read_text()
        assert readme.render(current, sections) == current, f"{path.name}: run `.venv/bin/python -m tools.readme`"


def test_the_readme_fits_on_a_screen_and_indexes_every_document() -> None:
    text = (readme.REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert max(len(line) for line in text.splitlines() if not line.startswith(("Kotlin ", "   ", "    "))) <= 140
    for doc in sorted((readme.REPO / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in text, f"the README's index lacks docs/{doc.name}"


def test_every_setting_is_documented_with_its_default() -> None:
    table = readme.settings_section()
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} has no docstring"
        assert f"| `{name.upper()}` |" in table
    assert "| `MAX_CONCURRENT_ORCHESTRATIONS` | `1` |" in table
    assert '| `AGENT_TIMEOUTS` | `{"aider":600,"openhands":1800,"claude":1800,"junie":1200}` |' in table
    assert "| `POD_ID` | `<POD_NAME, else persisted>` |" in table  # not this machine's id


def test_the_graph_is_drawn_from_the_compiled_graph() -> None:
    mermaid = readme.graph_section()
    assert mermaid.startswith("```mermaid\n") and "graph TD;" in mermaid
    for edge in ("__start__ --> intake;", "execute_step -.-> evaluate;", "evaluate -.-> git_operations;",
                 "evaluate -.-> reflect;", "reflect -.-> execute_step;", "reflect -.-> ask_user;",
                 "ask_user -.-> replan;", "replan -.-> approve_plan;", "finalize --> __end__;"):
        assert edge in mermaid


def test_a_missing_section_is_reported() -> None:
    with pytest.raises(ValueError, match=r"graph.*metrics.*settings"):
        readme.render("no markers here")
