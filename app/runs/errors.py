"""Domain errors of the run manager; `app/api/errors.py` maps them to HTTP once."""


class RunBusyError(RuntimeError):
    """Every orchestration slot is taken (this pod's semaphore or the cluster-wide lock)."""


class RunNotFoundError(LookupError):
    """No such thread, or nothing to act on for it."""


class RunConflictError(RuntimeError):
    """The thread exists but is not in a state that allows the action."""
