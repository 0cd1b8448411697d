"""A generative request's design document (app/graph/rules/design_doc.py, nodes/plan_epic.py design),
in-process with the scripted LLM and agent on a real git workspace: written into the workspace,
shown at the `generative_design` gate, rewritten after "ne, <reason>", committed first with the
work; removed when the design is refused for good."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from app.graph.context import RunContext
from app.graph.rules import design_doc
from app.schemas.domain import DesignPlan
from tests.fixtures.llm_server import RecordedRequest, Reply
from tests.support import classification, file_block, git, make_git_repo, node_marker
from tests.unit.graph.graph_support import start

pytestmark = pytest.mark.settings(response_language="en")

YES = {"approved": True, "reason": "yes", "modification": None}
GOALS = [{"id": "store", "title": "Add the store", "dependencies": []},
         {"id": "api", "title": "Add the API", "dependencies": ["store"]}]


def design(summary: str, storage: str) -> str:
    return json.dumps({"summary": summary, "context": "An empty repository; a notes service is asked for.",
                       "decisions": [{"decision": f"Keep notes in {storage}", "reason": "no server to run"}],
                       "interfaces": ["add_note(text: str) -> int"], "goals": GOALS})


def steps(request: RecordedRequest) -> str:
    title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
    path = {"Add the store": "store.py", "Add the API": "api.py"}[title]
    return json.dumps({"steps": [{"instructions": f"Write {path}\n{file_block(path, f'# {title}')}",
                                  "step_type": "code", "files": [path]}]})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "clients/c1/notes")


def script(llm: Any) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification("generative", "code", "complex")),
               Reply(match=node_marker("design"), content=design("Notes in a JSON file.", "a JSON file"), times=1,
                     name="design-1"),
               Reply(match=node_marker("design"), content=design("Notes in SQLite.", "SQLite"), name="design-2"),
               Reply(match=node_marker("plan_steps"), content=steps),
               Reply(match=node_marker("review_epic"),
                     content=json.dumps({"approved": True, "issues": [], "summary": "ok"})))


def gate(snapshot: Any) -> dict[str, Any]:
    value: dict[str, Any] = snapshot.tasks[0].interrupts[0].value
    return value


async def test_a_design_is_written_shown_revised_on_a_reason_and_committed_first(
        graph: Any, ctx: RunContext, llm: Any, workspace: Path) -> None:
    script(llm)
    state, config = start("Build a small notes service", workspace_path="clients/c1/notes")
    await graph.ainvoke(state, config, context=ctx)
    first = gate(await graph.aget_state(config))
    path = "docs/design/build-a-small-notes-service.md"
    assert first["action"] == "generative_design" and first["design_path"] == path
    assert first["description"].startswith(f"Design document {path}:\nNotes in a JSON file.")
    document = (workspace / path).read_text()
    assert document.startswith("# Build a small notes service\n\nNotes in a JSON file.")
    assert "- Keep notes in a JSON file — because no server to run" in document
    assert "- `add_note(text: str) -> int`" in document and "2. **Add the API** (after 1)" in document

    await graph.ainvoke(Command(resume={"approved": False, "reason": "use SQLite instead", "modification": None}),
                        config, context=ctx)
    second = gate(await graph.aget_state(config))
    assert second["action"] == "generative_design" and "Notes in SQLite." in second["description"]
    revision = next(r for r in llm.requests if r.matched == "design-2").last_user
    assert "## Earlier design\n# Build a small notes service" in revision
    assert "## The user refused it because\nuse SQLite instead" in revision
    assert "Keep notes in SQLite" in (workspace / path).read_text()  # rewritten in place
    assert not list((workspace / "docs/design").glob("*-2.md"))

    await graph.ainvoke(Command(resume=YES), config, context=ctx)  # the design: to the commit gate
    assert (await graph.aget_state(config)).next == ("git_operations",)
    await graph.ainvoke(Command(resume=YES), config, context=ctx)
    final = (await graph.aget_state(config)).values
    assert final["git_outcome"] == "committed"
    log = git(workspace, "log", "--format=%s", "-n", "3").splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["Add the API", "Add the store",
                                                       "Design: build-a-small-notes-service"]
    assert git(workspace, "show", "--format=", "--name-only", "HEAD~2").split() == [path]
    assert "Keep notes in SQLite" in git(workspace, "show", f"HEAD:{path}")


async def test_a_design_refused_for_good_leaves_no_document(graph: Any, ctx: RunContext, llm: Any,
                                                            workspace: Path) -> None:
    script(llm)
    state, config = start("Build a small notes service", workspace_path="clients/c1/notes")
    await graph.ainvoke(state, config, context=ctx)
    assert (workspace / "docs/design/build-a-small-notes-service.md").exists()

    await graph.ainvoke(Command(resume={"approved": False, "reason": None, "modification": None}), config,
                        context=ctx)

    final = (await graph.aget_state(config)).values
    assert final["design"] is None and final["goals"] == []
    assert not (workspace / "docs").exists()
    assert git(workspace, "status", "--porcelain") == ""


def test_the_document_goes_to_the_projects_own_design_folder_under_a_free_name(tmp_path: Path) -> None:
    (tmp_path / "docs/adr").mkdir(parents=True)
    (tmp_path / "docs/adr/přidej-notes.md").write_text("x")
    assert design_doc.place(tmp_path, "Přidej notes") == "docs/adr/pridej-notes.md"
    (tmp_path / "docs/adr/pridej-notes.md").write_text("taken")
    assert design_doc.place(tmp_path, "Přidej notes") == "docs/adr/pridej-notes-2.md"
    assert design_doc.place(tmp_path / "empty", "!!!") == "docs/design/design.md"


def test_the_document_lists_goals_with_what_they_wait_for_when_rendered() -> None:
    plan = DesignPlan.model_validate(json.loads(design("S.", "files")))
    text = design_doc.render(plan, title="T")
    assert text.splitlines()[-2:] == ["1. **Add the store**", "2. **Add the API** (after 1)"]
