"""The test command itself: what `.jervis/test.json` carries, and where it came from."""

from __future__ import annotations

import shlex
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

LABEL_LIMIT = 200


class TestCommand(BaseModel):
    """A test command: a shell command line or an argv (exactly one), and where it came from."""

    __test__: ClassVar[bool] = False  # a class named Test* is not a pytest test class
    model_config = ConfigDict(frozen=True, extra="forbid")

    argv: list[str] | None = None
    shell: str | None = None
    source: str

    @model_validator(mode="after")
    def _exactly_one_form(self) -> TestCommand:
        """The entrypoint needs one unambiguous command: `sh -c <shell>` or the argv as given."""
        if (self.argv is None) == (self.shell is None):
            raise ValueError("exactly one of argv and shell must be set")
        if self.shell is not None and not self.shell.strip():
            raise ValueError("shell must not be empty")
        if self.argv is not None and not (self.argv and self.argv[0]):
            raise ValueError("argv must name a program")
        return self

    def json_command(self) -> str | list[str]:
        """The value of `command` in `.jervis/test.json` (a string runs through `sh -c`)."""
        return self.shell if self.shell is not None else list(self.argv or [])

    def label(self) -> str:
        """The command on one short line, for summaries and logs."""
        text = " ".join(self.shell.split()) if self.shell is not None else shlex.join(self.argv or [])
        return text if len(text) <= LABEL_LIMIT else text[: LABEL_LIMIT - 1] + "…"
