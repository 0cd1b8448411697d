"""`python -m app.cli` / `scripts/jervis`: the commands. Each one parses its options, calls the
modules that do the work, and turns the result into an exit code (app/cli/codes.py)."""

from __future__ import annotations

import io
import json
import os
import select
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from app.cli.client import (
    DEFAULT_URL,
    RequestRefusedError,
    RunStatus,
    ServiceBusyError,
    ServiceClient,
    ServiceError,
    ServiceUnreachableError,
)
from app.cli.codes import HELP, ExitCode
from app.cli.receiver import DEFAULT_ADDRESS, PortTakenError, PushReceiver, parse_address
from app.cli.render import Renderer
from app.cli.session import POLL_SECONDS, AnsweredElsewhereError, RunSession
from app.cli.wire import RuleOverrides, approval_body, new_task_id, orchestrate_request, request_body, rules_with
from app.cli.workspace import PlacementError, claim, fetch_back
from app.schemas.kotlin import StreamStartResponse

REPO_ROOT = Path(__file__).resolve().parents[2]
AGENTS = ("auto", "aider", "openhands", "claude", "junie")
BUSY_RETRY_SECONDS = 15.0
#: How often a question at the terminal checks whether it was answered elsewhere (the console).
ELSEWHERE_POLL_SECONDS = 2.0
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def default_data_root() -> Path:
    """Where `app.dev` keeps workspaces: DATA_ROOT, else `$JERVIS_DEV_HOME/workspaces`, else
    `<this repository>/.data/workspaces` (a relative JERVIS_DEV_HOME is taken from the repository
    root, where `scripts/run.sh` starts the service)."""
    if os.environ.get("DATA_ROOT"):
        return Path(os.environ["DATA_ROOT"])
    home = Path(os.environ.get("JERVIS_DEV_HOME") or ".data")
    return (home if home.is_absolute() else REPO_ROOT / home) / "workspaces"


def fail(message: str, code: ExitCode) -> NoReturn:
    click.echo(f"jervis: {message}", err=True)
    sys.exit(int(code))


def url_option(function: F) -> F:
    return click.option("--url", envvar="JERVIS_URL", default=DEFAULT_URL, show_default=True,
                        help="The service (env JERVIS_URL).")(function)


#: The service's `API_TOKEN`, when it requires one (read from the environment only, never an
#: option: a command line is visible to every user of the machine).
TOKEN_VARIABLE = "JERVIS_API_TOKEN"


def open_client(url: str) -> ServiceClient:
    return ServiceClient(url, token=os.environ.get(TOKEN_VARIABLE) or None)


def connect(url: str) -> ServiceClient:
    """A client for a service that answers `/health` with status ok; exit 3 otherwise."""
    client = open_client(url)
    try:
        problem = client.health().problem()
    except ServiceUnreachableError:
        fail(f"the service at {url} is not reachable; start it with ./scripts/run.sh or pass --url",
             ExitCode.UNREACHABLE)
    except ServiceError as exc:
        fail(f"the service at {url} does not answer /health properly: {exc}", ExitCode.UNREACHABLE)
    if problem is not None:
        fail(f"the service at {url} is not healthy: {problem}", ExitCode.UNREACHABLE)
    return client


def service_call(call: Callable[[], T]) -> T:
    """One request of a short command: 4xx → exit 2 with the service's detail, no answer → 3."""
    try:
        return call()
    except RequestRefusedError as exc:
        fail(exc.detail, ExitCode.REJECTED_REQUEST)
    except ServiceUnreachableError as exc:
        fail(str(exc), ExitCode.UNREACHABLE)
    except ServiceError as exc:
        fail(str(exc), ExitCode.FAILED)


def ask_terminal(prompt: str, answered_elsewhere: Callable[[], bool] = lambda: False, *,
                 poll_seconds: float = ELSEWHERE_POLL_SECONDS) -> str | None:
    """One line from stdin; None when it is closed (a pipe that ran out). While nothing is typed,
    `answered_elsewhere` is asked every few seconds: the question may be answered in the console."""
    click.echo(f"{prompt}: ", nl=False)
    while not _typed_within(poll_seconds):
        if answered_elsewhere():
            click.echo("")
            raise AnsweredElsewhereError
    line = sys.stdin.readline()
    if not line:
        click.echo("")
        return None
    answer = line.rstrip("\n")
    if not sys.stdin.isatty():  # piped: show what was read, so the transcript reads like a dialogue
        click.echo(answer)
    return answer


def _typed_within(seconds: float) -> bool:
    """Whether stdin has a line (or its end) to read within `seconds`; a stream that cannot be
    waited on (no file descriptor: a test runner's, some IDEs') is simply read."""
    try:
        return bool(select.select([sys.stdin], [], [], seconds)[0])
    except (io.UnsupportedOperation, ValueError, OSError):
        return True


def confirm_terminal(prompt: str) -> bool:
    try:
        return click.confirm(prompt, default=False)
    except click.Abort as exc:  # Ctrl-C or EOF at the question: the caller leaves the run alone
        raise EOFError from exc


@click.group(epilog=HELP)
def cli() -> None:
    """Jervis terminal client: runs the orchestrator on a local repository, in place of the Kotlin server.

    A service started with API_TOKEN needs the same token in JERVIS_API_TOKEN."""


@cli.command(epilog=HELP)
@click.option("--repo", "repo", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The repository (or plain directory) to work on.")
@click.argument("request", nargs=-1, required=True)
@url_option
@click.option("--data-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The service's DATA_ROOT (env DATA_ROOT; default: .data/workspaces in this Jervis checkout).")
@click.option("--client", "client_id", default="cli", show_default=True, help="client_id of the request.")
@click.option("--agent", type=click.Choice(AGENTS), default="auto", show_default=True,
              help="agent_preference of the request.")
@click.option("--auto-push/--no-auto-push", default=False, show_default=True,
              help="Push the branch to the repository's origin after the commit.")
@click.option("--require-tests/--no-require-tests", default=False, show_default=True,
              help="Run the project's tests after each code step.")
@click.option("--require-review/--no-require-review", default=False, show_default=True,
              help="Have each code step reviewed by the LLM.")
@click.option("--max-changed-files", type=click.IntRange(min=0), default=20, show_default=True)
@click.option("--branch-prefix", default="task/", show_default=True,
              help="The branch is <prefix><task id> (the prefix is also allowed as a branch pattern).")
@click.option("--wait-busy", type=click.FloatRange(min=0), default=0, show_default=True, metavar="SECONDS",
              help="While the service is busy (HTTP 429), retry every 15 s for this long.")
@click.option("--receive", default=DEFAULT_ADDRESS, show_default=True, metavar="HOST:PORT|off",
              help="Listen for the service's status pushes (its KOTLIN_SERVER_URL) here.")
@click.option("--yes", "-y", "auto_yes", is_flag=True,
              help="Approve every gate; answer questions with 'Pokračuj podle svého uvážení (continue with "
                   "your best judgement)'.")
@click.option("--quiet", "-q", is_flag=True, help="Print only questions and the final result.")
@click.option("--poll-seconds", type=click.FloatRange(min=0.01), default=POLL_SECONDS, hidden=True)
def run(repo: Path, request: tuple[str, ...], url: str, data_root: Path | None, client_id: str, agent: str,
        auto_push: bool, require_tests: bool, require_review: bool, max_changed_files: int, branch_prefix: str,
        wait_busy: float, receive: str, auto_yes: bool, quiet: bool, poll_seconds: float) -> None:
    """Run REQUEST on the repository at --repo and follow it to the end.

    The repository is cloned under the service's DATA_ROOT (your working tree, index and
    branches stay untouched); when the run is done, its branch is fetched back into your
    repository, never checked out. Ctrl-C offers to cancel the run.
    """
    query = " ".join(request).strip()
    if not query:
        raise click.UsageError("REQUEST is empty")
    receive_at = None if receive.strip().lower() == "off" else _address(receive)
    renderer = Renderer(quiet=quiet)
    client = connect(url)
    with ExitStack() as stack:
        stack.callback(client.close)
        try:
            placed = stack.enter_context(claim(repo, data_root or default_data_root()))
        except PlacementError as exc:
            fail(f"workspace: {exc}", ExitCode.REJECTED_REQUEST)
        for note in placed.notes:
            renderer.warn(f"warning: {note}")
        if not quiet:
            origin = f"clone of {placed.source} at {placed.base[:12]}" if placed.base else f"copy of {placed.source}"
            renderer.line(f"workspace: {placed.path} ({origin})")
        task_id = new_task_id()
        rules = rules_with(RuleOverrides(auto_push=auto_push, require_tests=require_tests,
                                         require_review=require_review, max_changed_files=max_changed_files,
                                         branch_prefix=branch_prefix))
        body = request_body(orchestrate_request(
            task_id=task_id, client_id=client_id, project=placed.source.name, workspace_path=placed.relative,
            query=query, agent=agent, rules=rules))
        receiver = None
        if receive_at is not None:
            try:
                receiver = PushReceiver(*receive_at, task_id=task_id).start()
                stack.callback(receiver.stop)
            except PortTakenError:
                renderer.warn("status pushes: port taken, polling /status instead")
        started = _start(client, body, wait_busy, renderer, placed=placed.path)
        if receiver is not None:
            receiver.thread_id = started.thread_id
        if not quiet:
            renderer.line(f"thread: {started.thread_id}")
        session = RunSession(client, renderer, thread_id=started.thread_id, workspace=placed, receiver=receiver,
                             auto_yes=auto_yes, ask=ask_terminal, confirm=confirm_terminal, poll_seconds=poll_seconds)
        outcome = session.run()
        stop = outcome.stop
        if stop is not None:
            fetched = None
            if stop.status == "done" and placed.is_git and stop.branch:
                fetched = fetch_back(placed, stop.branch)
            location = None
            if not placed.is_git:
                location = f"result: {placed.path} (replaced by the next run on {placed.source})"
            elif stop.status != "done":
                location = f"workspace (what the run left): {placed.path}"
            renderer.final(stop, thread_id=started.thread_id, fetched=fetched, location=location)
            renderer.time_spent(_final_status(client, started.thread_id))
            if stop.status == "done" and placed.is_git and not stop.branch:
                renderer.say("no branch was created (nothing committed)")
        renderer.close()
        if outcome.rejected is not None:
            renderer.say(f"you refused the {outcome.rejected} gate")
    sys.exit(int(outcome.code))


def _final_status(client: ServiceClient, thread_id: str) -> RunStatus | None:
    """The ended run's /status (its time per node), or None when the service is gone meanwhile."""
    try:
        return client.status(thread_id)
    except ServiceError:
        return None


def _address(text: str) -> tuple[str, int]:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--receive") from exc


def _start(client: ServiceClient, body: dict[str, Any], wait_busy: float, renderer: Renderer, *,
           placed: Path) -> StreamStartResponse:
    """POST /orchestrate/stream; 429 is retried every 15 s (as Kotlin does) while --wait-busy lasts.
    A workspace the service does not find (422) is where this client placed it under another
    DATA_ROOT than the service's: the refusal says so (the service creates no workspace)."""
    deadline = time.monotonic() + wait_busy
    while True:
        try:
            return client.start(body)
        except ServiceBusyError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                fail(f"the service is busy with another run ({exc}); try again later or pass --wait-busy SECONDS",
                     ExitCode.BUSY)
            pause = min(BUSY_RETRY_SECONDS, left)
            renderer.warn(f"busy, retrying in {pause:.2g} s")
            try:
                time.sleep(pause)
            except KeyboardInterrupt:
                fail("interrupted before the run started", ExitCode.DETACHED)
        except RequestRefusedError as exc:
            hint = (f"\nthis client placed the workspace at {placed}: is --data-root (or DATA_ROOT) the "
                    f"service's DATA_ROOT?" if "under DATA_ROOT" in exc.detail else "")
            fail(f"the service refused the request: {exc.detail}{hint}", ExitCode.REJECTED_REQUEST)
        except ServiceUnreachableError as exc:
            fail(str(exc), ExitCode.UNREACHABLE)
        except ServiceError as exc:
            fail(f"the service could not start the run: {exc}", ExitCode.UNREACHABLE)


@cli.command(epilog=HELP)
@click.argument("thread_id")
@url_option
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
def status(thread_id: str, url: str, as_json: bool) -> None:
    """Show a run's /status; exit 1 when it failed or is unknown."""
    with open_client(url) as client:
        reply = service_call(lambda: client.status(thread_id))
    data = reply.model_dump(exclude_none=True)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        for key, value in data.items():
            text = str(value)
            if key == "artifacts":
                text = ", ".join(reply.artifact_list)
            lines = text.splitlines() or [""]
            click.echo(f"{key}: {lines[0]}")
            for line in lines[1:]:
                click.echo(f"    {line}")
    sys.exit(int(ExitCode.FAILED if reply.status in ("error", "unknown") else ExitCode.DONE))


@cli.command(epilog=HELP)
@click.argument("thread_id")
@click.argument("text", nargs=-1)
@url_option
@click.option("--no", "reject", is_flag=True, help="Refuse the gate (TEXT, if given, is the reason).")
def approve(thread_id: str, text: tuple[str, ...], url: str, reject: bool) -> None:
    """Answer a waiting run: TEXT goes to the service as Kotlin sends it (default "yes", or "no" with --no)."""
    answer = " ".join(text).strip() or ("no" if reject else "yes")
    with open_client(url) as client:
        waiting = service_call(lambda: client.status(thread_id))
        clarification = waiting.interrupt_action == "clarify"
        body = approval_body(answer, clarification=clarification)
        if reject and clarification:
            click.echo("jervis: --no does not apply to a question; the text is sent as the answer", err=True)
        elif reject:
            body["approved"] = False
        reply = service_call(lambda: client.approve(thread_id, body))
    click.echo(f"{reply.get('status', 'sent')}: {thread_id}")


@cli.command(epilog=HELP)
@click.argument("thread_id")
@url_option
def cancel(thread_id: str, url: str) -> None:
    """Cancel a running or waiting run."""
    with open_client(url) as client:
        service_call(lambda: client.cancel(thread_id))
    click.echo(f"cancelled: {thread_id}")


@cli.command(name="list", epilog=HELP)
@url_option
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
def list_runs(url: str, limit: int, as_json: bool) -> None:
    """Recent runs, newest first."""
    with open_client(url) as client:
        reply = service_call(lambda: client.runs(limit))
    if as_json:
        click.echo(json.dumps(reply.model_dump(), ensure_ascii=False, indent=2))
        return
    if not reply.runs:
        click.echo("no runs yet")
        return
    for item in reply.runs:
        when = datetime.fromisoformat(item.updated_at).astimezone().strftime("%Y-%m-%d %H:%M")
        about = (item.summary if item.status == "done" else item.error) or item.summary or ""
        about = " ".join(about.split())
        about = about if len(about) <= 60 else about[:59] + "…"
        click.echo(f"{when}  {item.status:<11} {item.percent:>5.0f}%  {item.thread_id}  {item.branch or '-'}  {about}")


if __name__ == "__main__":
    cli(prog_name="jervis")
