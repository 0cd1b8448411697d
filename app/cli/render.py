"""What the terminal shows: a progress bar (stderr) and the run's own lines above it (stdout).

The bar follows the service's `percent` and names where the run is (`execute_step · goal 1/1 ·
step 2/3 · attempt 2`); agent output, verification and reflection lines are written above it
with `tqdm.write`, so they never tear the bar. Questions and the final result are printed even
with `--quiet`, because the user has to read them.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import click
from tqdm import tqdm

from app.cli.client import RunStatus
from app.cli.events import SseEvent
from app.cli.stops import Interrupt, Stop
from app.cli.workspace import Changes, FetchBack
from app.schemas.kotlin import ProgressPush
from app.texts.clip import clip

BAR_FORMAT = "{percentage:3.0f}%|{bar:30}| {elapsed} {desc}"
AGENT_LINE_LIMIT = 400


def describe(node: str, *, goal_index: int = 0, total_goals: int = 0, step_index: int = 0, total_steps: int = 0,
             attempt: int = 1) -> str:
    """`execute_step · goal 1/1 · step 2/3 · attempt 2` (indices are 0-based on the wire)."""
    parts = [node]
    if total_goals:
        parts.append(f"goal {goal_index + 1}/{total_goals}")
    if total_steps:
        parts.append(f"step {step_index + 1}/{total_steps}")
    if attempt > 1:
        parts.append(f"attempt {attempt}")
    return " · ".join(parts)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class Renderer:
    def __init__(self, *, quiet: bool = False, color: bool | None = None, out: TextIO | None = None,
                 err: TextIO | None = None) -> None:
        self.quiet = quiet
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._color = self._out.isatty() if color is None else color
        self._bar: tqdm[Any] | None = None
        self.percent = 0.0
        self.description = ""

    # --- low level ------------------------------------------------------------------------

    def _style(self, text: str, **style: Any) -> str:
        return click.style(text, **style) if self._color else text

    def line(self, text: str, **style: Any) -> None:
        """A line above the bar (skipped with --quiet)."""
        if self.quiet:
            return
        self.say(text, **style)

    def say(self, text: str, **style: Any) -> None:
        """A line that is shown even with --quiet."""
        text = self._style(text, **style)
        if self._bar is not None:
            tqdm.write(text, file=self._out)
        else:
            click.echo(text, file=self._out)

    def warn(self, text: str) -> None:
        """Client-side notices (a port taken, a fallback): stderr, even with --quiet."""
        if self._bar is not None:
            tqdm.write(text, file=self._err)
        else:
            click.echo(text, file=self._err)

    def progress(self, percent: float | None = None, description: str | None = None) -> None:
        """Move the bar; it never goes back (the service's percent is monotonic per run)."""
        if percent is not None:
            self.percent = max(self.percent, min(100.0, float(percent)))
        if description:
            self.description = description
        if self.quiet:
            return
        if self._bar is None:
            self._bar = tqdm(total=100, initial=round(self.percent, 1), desc=self.description, file=self._err,
                             bar_format=BAR_FORMAT, dynamic_ncols=True, leave=True, mininterval=0)
        self._bar.n = round(self.percent, 1)
        self._bar.set_description_str(self.description, refresh=False)
        self._bar.refresh()

    def pause(self) -> None:
        """Close the bar before prompting (a later `progress` opens a new one)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    close = pause

    # --- the run's events ----------------------------------------------------------------

    def on_event(self, event: SseEvent) -> None:
        data = event.data
        match event.type:
            case "node_start":
                self.progress(data.get("percent"), describe(
                    str(data.get("node", "?")), goal_index=_int(data.get("goal_index")),
                    total_goals=_int(data.get("total_goals")), step_index=_int(data.get("step_index")),
                    total_steps=_int(data.get("total_steps")), attempt=_int(data.get("attempt"), 1)))
            case "node_end" if data.get("error"):
                self.line(f"✗ {data.get('node')}: {data['error']}", fg="red")
            case "agent_start":
                runs = data.get("agent") if data.get("program") in (None, data.get("agent")) else \
                    f"{data.get('agent')} → {data.get('program')}"
                self.line(f"▶ {runs} · goal {_int(data.get('goal_index')) + 1} · step "
                          f"{_int(data.get('step_index')) + 1} · attempt {_int(data.get('attempt'), 1)}", bold=True)
            case "agent_log":
                self.line(f"  {data.get('agent', 'agent')}│ {clip(str(data.get('line', '')), AGENT_LINE_LIMIT)}",
                          dim=True)
            case "tests_start":
                self.line(f"▶ tests: {data.get('command')}", bold=True)
            case "verification":
                self._verification(data)
            case "reflection":
                self._reflection(data)
            case "warning" | "budget_warning" | "suspended" | "gap":
                self.line(f"! {data.get('message')}", fg="yellow")
            case _:
                pass

    def on_progress_push(self, push: ProgressPush) -> None:
        """Progress from the push receiver (while polling: no stream to read it from)."""
        self.progress(push.percent or None, describe(push.node, goal_index=push.goal_index,
                                                     total_goals=push.total_goals, step_index=push.step_index,
                                                     total_steps=push.total_steps))

    def _verification(self, data: dict[str, Any]) -> None:
        ok = bool(data.get("acceptable"))
        self.line(f"{'✓' if ok else '✗'} verification {'passed' if ok else 'failed'}", fg="green" if ok else "red")
        for check in data.get("checks") or []:
            if isinstance(check, dict):
                self.line(f"    {check.get('name')}: {check.get('status')}"
                          + (f" — {clip(str(check['message']), 300)}" if check.get("message") else ""))

    def _reflection(self, data: dict[str, Any]) -> None:
        cause = data.get("root_cause") or data.get("analysis") or ""
        self.line(f"↻ reflection: {data.get('action')} (by {data.get('source', '?')})"
                  + (f" — {clip(str(cause), 200)}" if cause else ""), fg="magenta")
        if data.get("failure"):
            self.line(f"    failure: {clip(' '.join(str(data['failure']).split()), 300)}")
        if data.get("hint"):
            self.line(f"    next: {clip(str(data['hint']), 300)}")
        if data.get("note"):
            self.line(f"    note: {data['note']}")

    # --- questions and the end ---------------------------------------------------------------

    def interrupt(self, interrupt: Interrupt, changes: Changes | None) -> None:
        """The question or gate, with what an approval needs: branch, files, diff stat."""
        self.pause()
        if interrupt.is_clarification:
            self.say("? The run asks:", fg="cyan", bold=True)
        else:
            self.say(f"? Approval needed: {interrupt.action}", fg="cyan", bold=True)
        for text in (interrupt.description or "(no description)").splitlines():
            self.say(f"  {text}")
        if interrupt.is_clarification:
            return
        if interrupt.branch:
            self.say(f"  branch: {interrupt.branch}")
        files = list(interrupt.changed_files) or (changes.files if changes else [])
        if files:
            self.say(f"  changed files ({len(files)}): {', '.join(files)}")
        if changes is not None and changes.stat:
            self.say("  git diff --stat (workspace against your HEAD):")
            for text in changes.stat.splitlines():
                self.say(f"   {text}")

    def time_spent(self, status: RunStatus | None) -> None:
        """Where the run's time went: per node, and the model's share (from /status)."""
        extra = (status.model_extra or {}) if status is not None else {}
        if by_node := extra.get("time_by_node"):
            self.say(f"time by node: {by_node}", dim=True)
        if extra.get("llm_calls") not in (None, ""):
            self.say(f"model: {extra['llm_calls']} calls, {extra.get('llm_tokens', 0)} tokens, "
                     f"{float(extra.get('llm_seconds') or 0):.0f} s of run time", dim=True)

    def final(self, stop: Stop, *, thread_id: str, fetched: FetchBack | None = None,
              location: str | None = None) -> None:
        """The end: summary, branch and files, or the error and its report; then where the
        result is (the fetched branch, or the workspace directory)."""
        if stop.status == "done":
            self.progress(100.0)
        self.pause()
        if stop.status == "done":
            self.say(f"✔ done ({thread_id})", fg="green", bold=True)
            if stop.summary:
                self.say(stop.summary)
            if stop.branch:
                self.say(f"branch: {stop.branch}")
            if stop.artifacts:
                self.say(f"changed files: {', '.join(stop.artifacts)}")
        else:
            self.say(f"✘ error ({thread_id})", fg="red", bold=True)
            self.say(stop.error or "unknown error")
            if stop.report and stop.report.strip() not in (stop.error or ""):
                self.say("report:")
                self.say(stop.report)
        if fetched is not None:
            self.say(fetched.message, fg="green" if fetched.fetched else "yellow")
            if fetched.command:
                self.say(f"  to take the run's branch anyway (replaces yours): {fetched.command}")
        if location:
            self.say(location)
