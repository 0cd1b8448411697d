"""Claude Code's command line: print mode with a JSON result, which is how its success is judged."""

from __future__ import annotations

from ..config import Config, Step
from ..mcp import mcp_config_path
from .prompt import prompt_arg

#: Claude Code's built-in tools an agent step gets: reading, editing, writing files and a shell.
#: The rest (web, subagents, notebooks, to-do lists) add ~60 KB of tool descriptions to every
#: request (measured: 76 KB → 13 KB a request) that a local model has to read each turn.
CLAUDE_TOOLS = "Bash,Read,Edit,Write"


def claude_argv(config: Config, step: Step, in_git: bool) -> list[str]:
    """Claude Code in print mode with a JSON result (its `is_error`, cost and usage are read from
    it), with `CLAUDE_TOOLS` unless AGENT_EXTRA_ARGS names its own `--tools`."""
    argv = ["claude", "-p", prompt_arg(step), "--output-format", "json", "--permission-mode", "bypassPermissions"]
    if not any(arg == "--tools" or arg.startswith("--tools=") for arg in config.extra_args):
        argv += ["--tools", CLAUDE_TOOLS]
    mcp = mcp_config_path(config.workspace, step)
    if mcp is not None:
        argv += ["--mcp-config", str(mcp)]
    if config.model:
        argv += ["--model", config.model]
    return argv
