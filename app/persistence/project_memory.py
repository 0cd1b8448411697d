"""What the service remembers about a project between runs: today, the command that runs its tests.

A user who answered "which command runs this project's tests?" (`require_tests` on a repository
where none could be found) is not asked again on the project's next run. One small document per
project, keyed by the client and Kotlin's project id (or the workspace path when the request
names no project), so two projects of one client never share an answer.
"""

from __future__ import annotations

import time
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

COLLECTION_NAME = "orchestrator_projects"
#: The longest command kept: a test command line, not a script.
MAX_COMMAND_CHARS = 500


def project_key(client_id: str, project_id: str | None, workspace_path: str) -> str:
    """One project's key: Kotlin's project id when the request has one, else its workspace."""
    return f"{client_id}|project:{project_id}" if project_id else f"{client_id}|workspace:{workspace_path}"


class ProjectMemory:
    """Per-project facts learnt from the user's answers, in MongoDB (every pod sees them)."""

    def __init__(self, collection: AsyncCollection[dict[str, Any]]) -> None:
        self._collection = collection

    async def test_command(self, key: str) -> str | None:
        """The test command the user gave for this project, if any."""
        document = await self._collection.find_one({"_id": key}, {"test_command": 1})
        command = document.get("test_command") if document else None
        return command if isinstance(command, str) and command.strip() else None

    async def remember_test_command(self, key: str, command: str, *, thread_id: str) -> None:
        """Keep the user's answer for the project's next runs (the newest answer wins)."""
        await self._collection.update_one(
            {"_id": key},
            {"$set": {"test_command": command[:MAX_COMMAND_CHARS], "test_command_at": time.time(),
                      "test_command_thread": thread_id}},
            upsert=True,
        )
