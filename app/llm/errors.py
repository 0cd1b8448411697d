"""What can go wrong with a model call, as the callers of `app.llm.provider` see it."""

from __future__ import annotations


class LlmError(RuntimeError):
    """The model could not produce an answer."""


class LlmJsonError(LlmError):
    """The model answered, but not with JSON for the schema, even after the repair round."""


class HeartbeatTimeoutError(LlmError, TimeoutError):
    """No token arrived for the heartbeat window: the model or its server is dead."""


class QueueWaitTimeoutError(HeartbeatTimeoutError):
    """A local model server kept the call waiting for its turn (busy with other requests, while still
    accepting connections) past `LLM_QUEUE_WAIT_SECONDS`. The server is up, so this is no failure
    of the provider: the circuit breaker does not count it."""


class LlmOverflowError(LlmJsonError):
    """A structured answer ran to its output cap or repeated itself: the call is cut, the
    generation stopped, and the caller retries it shorter or falls back."""

    def __init__(self, message: str, *, reason: str, tokens: int) -> None:
        super().__init__(message)
        self.reason = reason
        """"length" (the cap) or "repetition"."""
        self.tokens = tokens
