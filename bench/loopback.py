"""The loopback stack every in-machine benchmark starts: nx-27017 and the scripted LLM, fake
Kotlin and fake KB servers (the tests' own fixtures), stopped again however the benchmark ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.dev.embedded_mongo import EmbeddedMongo
from tests.fixtures.kb_server import FakeKbServer
from tests.fixtures.kotlin_server import FakeKotlinServer
from tests.fixtures.llm_server import ScriptedLlmServer


@dataclass(frozen=True)
class Loopback:
    mongo: EmbeddedMongo
    llm: ScriptedLlmServer
    kotlin: FakeKotlinServer
    kb: FakeKbServer


@contextlib.contextmanager
def loopback(work: Path, kotlin: FakeKotlinServer | None = None) -> Iterator[Loopback]:
    """The stack, its MongoDB data under `work`; `kotlin` replaces the plain fake Kotlin server
    (a subclass that also indexes the pushes, bench/pod.py)."""
    with EmbeddedMongo(data_dir=work / "mongo", work_dir=work) as mongo:
        stack = Loopback(mongo, ScriptedLlmServer(), kotlin or FakeKotlinServer(), FakeKbServer())
        servers = (stack.llm, stack.kotlin, stack.kb)
        for server in servers:
            server.start()
        try:
            yield stack
        finally:
            for server in servers:
                server.stop()
