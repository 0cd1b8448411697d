"""Aider's command line, and the model files that keep it offline and its answers bounded."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..common import JERVIS_DIR, log
from ..config import Config, Step
from ..result import own_dir


def aider_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """Aider never commits (the orchestrator does, after approval) and keeps its history in .jervis/.
    `--no-gitignore`: it must not edit the repository's .gitignore; `--no-git` outside a repository,
    or `--yes-always` would let it run `git init`. With `--yes-always` it would also run the shell
    commands it suggests and fetch URLs it sees in the instructions: both off (the orchestrator runs
    the tests). It streams: a stopped agent then closes its connection, and the model server stops
    generating (a non-streamed request runs to its end on a local server, holding it for the next
    caller). One message per process, so the chat history is never summarised: past
    `--max-chat-history-tokens` (2,048 by default for a 32k model) Aider summarises it with the model
    after the answer, and waits for that before it exits (two minutes per attempt on the embedded
    model, holding its only slot). The tests covering the step are given read-only (`--read`). Edit
    format and repository map come from AGENT_EXTRA_ARGS (the service's AIDER_ARGS). The message is
    the instructions with no line able to start one of Aider's commands (`aider_message`)."""
    message = aider_message_file(config.workspace, step.instructions)
    argv = ["aider", "--message-file", message, "--yes-always", "--no-auto-commits",
            "--no-dirty-commits", "--no-pretty", "--no-check-update", "--no-analytics",
            "--no-show-model-warnings", "--no-show-release-notes", "--no-gitignore", "--no-fancy-input",
            "--no-suggest-shell-commands", "--no-detect-urls", "--no-restore-chat-history",
            "--chat-history-file", f"{JERVIS_DIR}/aider.chat.history.md",
            "--input-history-file", f"{JERVIS_DIR}/aider.input.history",
            "--max-chat-history-tokens", str(SUMMARY_NEVER_TOKENS)]
    if not in_git:
        argv.append("--no-git")
    if config.model:
        argv += ["--model", config.model,
                 "--model-metadata-file", str(aider_model_metadata(config.workspace, config.model)),
                 "--model-settings-file", str(aider_model_settings(config.workspace, step))]
    for path in step.read_files:
        if path not in step.files and (config.workspace / path).is_file():
            argv += ["--read", path]
    return [*argv, *step.files]


#: What Aider reads as a command when a message starts with it (aider/commands.py `is_command`).
COMMAND_PREFIXES = ("/", "!")


def aider_message(instructions: str) -> str:
    """The instructions as Aider's message, none of their lines able to run one of its commands.

    Aider 0.86.2 reads `--message-file` whole (aider/main.py: `io.read_text(args.message_file)`,
    then `coder.run(with_message=...)`) and hands it to `preproc_user_input`
    (aider/coders/base_coder.py), which runs it as a command when `commands.is_command(inp)`:
    `inp[0] in "/!"` (aider/commands.py). The whole message is then the command's argument:
    `/run …` (or `!…`) runs every line of it in a shell, `/add`, `/read-only`, `/load` and the rest
    act as the text says, and the model is never asked. Instruction text quotes the user's request
    and files the model or the user wrote, so it must never start a command.

    Every line whose first character is `/` or `!` gets one leading space: the message then never
    starts with either, and a Markdown reader (the model) sees the same text, since up to three
    spaces before a line change nothing in Markdown. A line already indented (`  /run x`) is left
    as it is: Aider tests the first character only, without stripping, so it cannot start a
    command, and a fourth space would make it a code block."""
    return "".join(f" {line}" if line.startswith(COMMAND_PREFIXES) else line
                   for line in instructions.splitlines(keepends=True))


#: Aider's message, beside the instructions the service wrote (which stay as they are).
MESSAGE_FILE = "aider.message.md"


def aider_message_file(workspace: Path, instructions: str) -> str:
    """Write `aider_message(instructions)` to our own `.jervis/`; its path for `--message-file`."""
    path = own_dir(workspace, JERVIS_DIR) / MESSAGE_FILE
    path.unlink(missing_ok=True)  # a link planted there is removed, not written through
    path.write_text(aider_message(instructions), encoding="utf-8")
    return f"{JERVIS_DIR}/{MESSAGE_FILE}"


#: A chat-history budget no single step's conversation reaches: Aider never summarises it.
SUMMARY_NEVER_TOKENS = 1_000_000
#: What Aider is told of the model when nothing else knows it: a context that holds a step, no price.
AIDER_CONTEXT_TOKENS = 32768


def aider_model_metadata(workspace: Path, model: str) -> Path:
    """A model-metadata file naming the agent's model, in our own `.jervis/`. Aider otherwise looks
    the model up in litellm's price list, which it downloads from GitHub on every start when its
    cache holds nothing (offline: a 5 s timeout, or a hang where a firewall drops the packets)."""
    context = os.environ.get("AGENT_CONTEXT_TOKENS", "").strip()
    tokens = int(context) if context.isdigit() else AIDER_CONTEXT_TOKENS
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    metadata = {model: {"max_input_tokens": tokens, "max_tokens": tokens, "max_output_tokens": min(tokens, 8192),
                        "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                        "litellm_provider": provider, "mode": "chat"}}
    path = own_dir(workspace, JERVIS_DIR) / "aider.model-metadata.json"
    path.write_text(json.dumps(metadata), encoding="utf-8")
    return path


#: Bounds of one Aider answer, in tokens: the answer to a one-line change still needs room for the
#: edit format's fences and a sentence; the upper one is Aider's own default cap.
AIDER_MIN_OUTPUT_TOKENS = 1536
AIDER_MAX_OUTPUT_TOKENS = 8192
#: Bytes of source per token (code in a BPE vocabulary: 3-4), and room for what is added.
BYTES_PER_TOKEN = 3


def aider_output_cap(workspace: Path, files: Sequence[str]) -> int:
    """How long one answer may be: twice the files it edits (the whole-file format repeats each
    file, a change adds to it) plus 1,024 tokens for a new file or an explanation, within the
    bounds. A small model that loops on a 98-line file otherwise writes for its whole default cap
    (8,192 tokens, ten minutes here) before anything can judge it; AGENT_MAX_OUTPUT_TOKENS overrides."""
    override = os.environ.get("AGENT_MAX_OUTPUT_TOKENS", "").strip()
    if override.isdigit() and int(override) > 0:
        return int(override)
    size = 0
    for name in files:
        with contextlib.suppress(OSError):
            size += (workspace / name).stat().st_size
    cap = 2 * (size // BYTES_PER_TOKEN) + 1024
    return max(AIDER_MIN_OUTPUT_TOKENS, min(AIDER_MAX_OUTPUT_TOKENS, cap))


def aider_model_settings(workspace: Path, step: Step) -> Path:
    """Aider's model settings for every model (`aider/extra_params`): the answer's cap
    (`aider_output_cap`), which Aider passes to the model as `max_tokens`. An answer cut there is
    not applied (Aider reports the output limit), so the step fails and is retried, told why."""
    cap = aider_output_cap(workspace, step.files)
    path = own_dir(workspace, JERVIS_DIR) / "aider.model-settings.yml"
    path.write_text(f"- name: aider/extra_params\n  extra_params:\n    max_tokens: {cap}\n", encoding="utf-8")
    log(f"aider: answers capped at {cap} tokens ({len(step.files)} file(s) to edit)")
    return path
