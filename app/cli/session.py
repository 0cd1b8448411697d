"""Following one run from the terminal, as the Kotlin server would: wait for its next stop,
answer questions and gates, and say how it ended.

The SSE stream is the main channel; when it is gone (404: another pod, a restart) or cannot be
reopened, `/status` is polled every 2 s, and status pushes from the local receiver end a wait
early. Every wait has a deadline: a service unreachable for `lost_seconds` ends the client (the
run itself goes on; `jervis status` finds it later).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.cli import stops
from app.cli.client import (
    RequestRefusedError,
    RunStatus,
    ServiceClient,
    ServiceError,
    ServiceUnreachableError,
    StreamGoneError,
)
from app.cli.codes import ExitCode
from app.cli.events import EventStream, StreamLostError
from app.cli.receiver import PushReceiver
from app.cli.render import Renderer
from app.cli.stops import Interrupt, Stop
from app.cli.wire import AUTO_APPROVAL, AUTO_CLARIFICATION, approval_body, is_rejection
from app.cli.workspace import PlacedWorkspace, changes

POLL_SECONDS = 2.0
LOST_SECONDS = 120.0
#: How long `/status` may say "unknown" (no record, not running here) before the run counts as lost.
UNKNOWN_SECONDS = 30.0
#: After the end, how long to keep listening for the run's own status push (the service retries
#: a refused push and logs it as failed; Kotlin, whose role the client plays, is always there).
SETTLE_SECONDS = 2.0

Ask = Callable[[str, Callable[[], bool]], str | None]
"""Reads one answer; None when stdin is closed. Ctrl-C raises KeyboardInterrupt. While it waits it
calls the probe now and then: True means the question was answered elsewhere (the console,
Kotlin, another terminal), and it raises `AnsweredElsewhereError` instead of waiting on."""
Confirm = Callable[[str], bool]
"""Yes/no; raises KeyboardInterrupt or EOFError when the user wants out."""


class AnsweredElsewhereError(Exception):
    """The question the terminal asks was answered by someone else meanwhile."""


class ServiceLostError(ConnectionError):
    """The service stayed unreachable past the deadline while the client followed a run."""


@dataclass(frozen=True)
class Outcome:
    code: ExitCode
    stop: Stop | None = None
    rejected: str | None = None
    """The gate the user refused last (its action), if that refusal stands."""


class RunSession:
    def __init__(self, client: ServiceClient, renderer: Renderer, *, thread_id: str,
                 workspace: PlacedWorkspace | None = None, receiver: PushReceiver | None = None,
                 auto_yes: bool = False, ask: Ask, confirm: Confirm, poll_seconds: float = POLL_SECONDS,
                 lost_seconds: float = LOST_SECONDS, settle_seconds: float = SETTLE_SECONDS,
                 stream: EventStream | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._render = renderer
        self.thread_id = thread_id
        self._workspace = workspace
        self._receiver = receiver
        self._auto_yes = auto_yes
        self._ask = ask
        self._confirm = confirm
        self._poll_seconds = poll_seconds
        self._lost_seconds = lost_seconds
        self._settle_seconds = settle_seconds
        self._clock = clock
        self.stream = stream or EventStream(client, thread_id)
        self.streaming = True
        self.rejected: str | None = None
        self._unknown_since: float | None = None
        self._last_interrupt: Interrupt | None = None
        """The stream's richer view of the pending gate (branch, files), for a stop read from /status."""

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Until the run ends, the user stops it, or the client has to leave."""
        while True:
            try:
                stop = self._next_stop()
                if stop.status != "interrupted":
                    self._settle(stop)
                    return Outcome(self._code(stop), stop, self.rejected)
                left = self._answer(stop.interrupt or Interrupt("unknown", ""))
                if left is not None:
                    return left
            except KeyboardInterrupt:
                decided = self._offer_cancel()
                if decided is not None:
                    return decided
            except ServiceLostError as exc:
                self._render.pause()
                self._render.warn(f"{exc}\nThe run may go on in the service: jervis status {self.thread_id}")
                return Outcome(ExitCode.UNREACHABLE, None, self.rejected)

    def _settle(self, stop: Stop) -> None:
        """Take the run's terminal status push before the receiver closes (bounded; skipped when
        the service pushes elsewhere, i.e. nothing of this run arrived)."""
        if self._receiver is None or stop.source == "push" or not self._receiver.accepted:
            return
        deadline = self._clock() + self._settle_seconds
        while (left := deadline - self._clock()) > 0:
            push = self._receiver.get(left)
            if push is None or (push.status is not None and push.status.status == stop.status):
                return

    def _code(self, stop: Stop) -> ExitCode:
        if self.rejected is not None:
            return ExitCode.USER_STOPPED
        return ExitCode.DONE if stop.status == "done" else ExitCode.FAILED

    def _next_stop(self) -> Stop:
        while True:
            if self.streaming:
                stop = self._follow_stream()
                if stop is not None:
                    return self._completed(stop)
            # The stream ended without saying how the run stands, or is gone: ask the service.
            stop = self._check()
            if stop is not None:
                return self._completed(stop)

    def _follow_stream(self) -> Stop | None:
        try:
            for event in self.stream.events():
                self._render.on_event(event)
                if event.type == "suspended":  # a restarted service keeps no event log: poll from now on
                    self._to_polling("the service is shutting down; the run continues from its checkpoint")
                    return None
                stop = stops.from_event(event)
                if stop is not None:
                    return stop
        except StreamGoneError:
            self._to_polling(f"no event stream for {self.thread_id} (it lives in one pod's memory)")
        except (StreamLostError, ServiceError) as exc:
            self._to_polling(str(exc))
        return None

    def _to_polling(self, why: str) -> None:
        self.streaming = False
        self._render.warn(f"{why}: polling /status every {self._poll_seconds:g} s")

    def _completed(self, stop: Stop) -> Stop:
        """An error's full report is in /status only (the stream event may lack it); a gate read
        from /status gets the stream's details of the same gate."""
        if stop.status == "interrupted" and stop.interrupt is not None:
            known = self._last_interrupt
            if stop.source == "stream":
                self._last_interrupt = stop.interrupt
            elif known is not None and (known.action, known.description) == (
                    stop.interrupt.action, stop.interrupt.description):
                return replace(stop, interrupt=known)
        if stop.status != "error" or stop.report:
            return stop
        try:
            report = self._client.status(self.thread_id).report
        except ServiceError:
            return stop
        return replace(stop, report=report) if report else stop

    # --- polling -------------------------------------------------------------------------------

    def _check(self) -> Stop | None:
        """One look at /status, then a wait of one poll interval in which a status push for this
        run may end the wait early."""
        status = self._status()
        self._render.progress(status.percent_value)
        stop = stops.from_status(status)
        if stop is not None:
            return stop
        if status.status == "unknown":
            self._unknown_since = self._unknown_since or self._clock()
            if self._clock() - self._unknown_since > UNKNOWN_SECONDS:
                return Stop("error", error=f"the service does not know {self.thread_id} (its record is gone)",
                            source="status")
        else:
            self._unknown_since = None
        return self._wait_for_push(self._poll_seconds)

    def _wait_for_push(self, seconds: float) -> Stop | None:
        if self._receiver is None:
            time.sleep(seconds)
            return None
        deadline = self._clock() + seconds
        while (left := deadline - self._clock()) > 0:
            push = self._receiver.get(left)
            if push is None:
                return None
            if push.progress is not None:
                self._render.on_progress_push(push.progress)
            elif push.status is not None and (stop := stops.from_push(push.status)) is not None:
                confirmed = self._confirm_push(stop)
                if confirmed is not None:
                    return confirmed
        return None

    def _confirm_push(self, stop: Stop) -> Stop | None:
        """A push may be stale (the interrupt of a segment already answered): /status decides
        when it answers; when it cannot, the push is believed."""
        try:
            status = self._client.status(self.thread_id)
        except ServiceError:
            return stop
        return stops.from_status(status)

    def _status(self) -> RunStatus:
        deadline = self._clock() + self._lost_seconds
        while True:
            try:
                return self._client.status(self.thread_id)
            except (ServiceUnreachableError, ServiceError) as exc:
                if isinstance(exc, RequestRefusedError) or self._clock() >= deadline:
                    raise ServiceLostError(f"lost the service while following {self.thread_id}: {exc}") from exc
                time.sleep(min(self._poll_seconds, max(0.0, deadline - self._clock())))

    # --- answers ----------------------------------------------------------------------------------

    def _answer(self, interrupt: Interrupt) -> Outcome | None:
        """Ask the user (or answer for them with --yes) and resume the run; an Outcome when the
        client must leave instead (stdin closed)."""
        found = None if interrupt.is_clarification or self._workspace is None else changes(self._workspace)
        if not (self._auto_yes and self._render.quiet):
            self._render.interrupt(interrupt, found)
        if self._auto_yes:
            text = AUTO_CLARIFICATION if interrupt.is_clarification else AUTO_APPROVAL
            if not self._render.quiet:
                self._render.say(f"  → answered automatically (--yes): {text}")
        else:
            question = ("Your answer" if interrupt.is_clarification
                        else "Approve? (yes / no, optionally with a condition or a reason)")
            while True:
                try:
                    answer = self._ask(question, lambda: self._answered_elsewhere(interrupt))
                except AnsweredElsewhereError:
                    self._render.say("  answered elsewhere (the console or another client): following the run")
                    return None
                if answer is None:
                    self._render.warn(f"no answer (stdin closed): the run waits. Answer later with\n"
                                      f"  jervis approve {self.thread_id} \"yes\"   (or --no)")
                    return Outcome(ExitCode.WAITING, None, self.rejected)
                if answer.strip():
                    text = answer.strip()
                    break
                self._render.say("  please answer" + ("" if interrupt.is_clarification else " yes or no"))
        if not interrupt.is_clarification:
            self.rejected = interrupt.action if is_rejection(text) else None
        self._resume(approval_body(text, clarification=interrupt.is_clarification))
        return None

    def _answered_elsewhere(self, interrupt: Interrupt) -> bool:
        """The run no longer waits on this question (an unreachable service says nothing)."""
        try:
            now = self._client.status(self.thread_id)
        except ServiceError:
            return False
        return now.status != "interrupted" or (now.interrupt_action or interrupt.action) != interrupt.action

    def _resume(self, body: dict[str, object]) -> None:
        deadline = self._clock() + self._lost_seconds
        while True:
            try:
                self._client.approve(self.thread_id, body)
                return
            except RequestRefusedError as exc:  # resumed elsewhere, cancelled or ended: the run says which
                self._render.warn(f"the service did not take the answer: {exc.detail}")
                return
            except ServiceError as exc:
                if self._clock() >= deadline:
                    raise ServiceLostError(f"could not deliver the answer for {self.thread_id}: {exc}") from exc
                time.sleep(self._poll_seconds)

    def _offer_cancel(self) -> Outcome | None:
        """Ctrl-C: cancel the run (yes), go on following it (no), or leave it running (Ctrl-C again)."""
        self._render.pause()
        try:
            wanted = self._confirm("cancel the run?")
        except (KeyboardInterrupt, EOFError):
            self._render.warn(f"\nleft the run; it goes on in the service: jervis status {self.thread_id}")
            return Outcome(ExitCode.DETACHED, None, self.rejected)
        if not wanted:
            return None
        try:
            self._client.cancel(self.thread_id)
        except RequestRefusedError as exc:  # nothing running or waiting: it has just ended
            self._render.warn(f"nothing to cancel: {exc.detail}")
            return None
        except ServiceError as exc:
            self._render.warn(f"could not cancel: {exc}")
            return Outcome(ExitCode.UNREACHABLE, None, self.rejected)
        self._render.say(f"cancelled {self.thread_id}", fg="yellow")
        return Outcome(ExitCode.USER_STOPPED, None, self.rejected)
