"""Domain errors of the run manager; `app/api/errors.py` maps them to HTTP once."""


class RunBusyError(RuntimeError):
    """Every orchestration slot is taken (this pod's semaphore or the cluster-wide lock)."""


class RunNotFoundError(LookupError):
    """No such thread, or nothing to act on for it."""


class RunConflictError(RuntimeError):
    """The thread exists but is not in a state that allows the action."""


class RunAnsweredError(RunConflictError):
    """An answer to a question that was already answered (or is being answered right now): 409
    with the answer that won, so a retrying client knows not to try again (not 429, "busy")."""

    def __init__(self, message: str, answer: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.answer = answer or {}
