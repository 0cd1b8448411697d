"""The workspace check of a dispatch (`POST /orchestrate/stream`, `/orchestrate`), before admission.

A project's workspace must be there: a wrong DATA_ROOT (a terminal client pointed at another
service), a wrong mount or a path Kotlin got wrong would otherwise start agents on an empty
directory that write a project from nothing. So the request is refused (422, `WorkspaceError`)
and nothing is created, stored or locked. Two requests are let through:

- `new_project: true`: the user asks for a new project; its directory is created empty here.
- A request without a project (`project_id` null or empty): Kotlin sends a chat with no project with
  `clients/<clientId>/default`, which need not exist, and a question needs no workspace. Nothing
  is created for it either: the first step that needs the workspace (an agent, a test run, a
  commit) ends the run with the same error (`WorkspaceManager.prepare`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from app.agents.workspace import WorkspaceError, WorkspaceManager, WorkspaceMissingError
from app.schemas.kotlin import OrchestrateRequest

log = logging.getLogger(__name__)

#: What a refused dispatch adds to the error: how to get past it.
HINT = ("clone or create the project there first, check that DATA_ROOT is the volume the "
        "workspaces are on, or send \"new_project\": true to start an empty project")


def check_workspace(workspaces: WorkspaceManager, request: OrchestrateRequest) -> Path:
    """The request's workspace, checked as above (WorkspaceError → 422)."""
    path = workspaces.resolve(request.workspace_path)
    there = os.path.lexists(path)  # False, never an error, for a name the system cannot even look up
    if request.new_project and not there:
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise WorkspaceError(f"the workspace {request.workspace_path} of the new project cannot be created "
                                 f"under DATA_ROOT ({workspaces.root}): {exc.strerror}") from None
        workspaces.resolve(request.workspace_path)  # nothing on the way was swapped for a link meanwhile
        log.info("created the empty workspace %s of a new project", request.workspace_path)
        return path
    if not request.project_id and not there:
        return path
    try:
        return workspaces.require(path)
    except WorkspaceMissingError as exc:
        raise WorkspaceMissingError(f"{exc}: {HINT}") from None
