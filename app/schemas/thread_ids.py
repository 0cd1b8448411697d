"""Thread ids: `thread-{task_id}-{8 hex}`, so a thread id alone names its task (logs, resume)."""

from __future__ import annotations

import re
import uuid

_THREAD_ID = re.compile(r"^thread-(?P<task>.+)-[0-9a-f]{8}$")


def new_thread_id(task_id: str) -> str:
    return f"thread-{task_id}-{uuid.uuid4().hex[:8]}"


def task_id_of(thread_id: str) -> str | None:
    match = _THREAD_ID.match(thread_id)
    return match.group("task") if match else None
