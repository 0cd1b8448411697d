"""The one door to language models: litellm, streaming, and a token heartbeat instead of timeouts.

A local model may think for minutes, so there is no deadline on the call as a whole (spec §1,
§8.4); a model that sends no token for `heartbeat_dead_seconds` is dead and the call fails. A
local server that serves one request at a time (llama-cpp-python's; Ollama past its parallel
slots) accepts a call's connection and answers only when its turn comes: until the answer
starts, a local call waits up to `llm_queue_wait_seconds` for as long as the server still accepts
connections (checked every `llm_queue_check_seconds`), so two runs sharing one model queue.
What bounds a call is its output: every caller names a cap that fits its purpose, the JSON schema
bounds each string and list (a grammar-constrained local model stops there), and a stream that
repeats itself is cut as it streams (`app/llm/streaming.py`). A structured answer that ran to its
cap or looped is asked for once more, shorter, and never shown back to the model; then the caller
falls back. A call that only the user can let go on (budget spent in `ask` mode, a cloud tier not
yet allowed) raises an `ApprovalNeededError` (`app/llm/approval.py`); the graph asks. Callers only
see `complete*`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from app.config import Settings
from app.llm import queue_wait
from app.llm.approval import BudgetApprovalNeededError, CloudApprovalNeededError
from app.llm.breaker import CircuitBreaker, transient
from app.llm.budget import BudgetExceededError, Usage
from app.llm.errors import HeartbeatTimeoutError, LlmError, LlmJsonError, LlmOverflowError, QueueWaitTimeoutError
from app.llm.model_map import fit_model_map
from app.llm.parsing import JsonParseError, parse_json_object
from app.llm.prices import Prices
from app.llm.runaway import without_repetition
from app.llm.scope import LlmScope, current_scope
from app.llm.streaming import Finish, TokenSink, collect
from app.llm.tiers import CLOUD_PREFERENCE, Tier, TierSpec, local_capacity, select_local_tier, tier_specs
from app.observability.metrics import Metrics

log = logging.getLogger(__name__)
__all__ = ["HeartbeatTimeoutError", "LitellmProvider", "Llm", "LlmError", "LlmJsonError", "LlmOverflowError",
           "Message", "QueueWaitTimeoutError", "TokenSink", "count_tokens", "estimate_cost"]

#: Providers of the local tiers: servers that may make a call wait for its turn.
LOCAL_PROVIDERS = frozenset({"ollama", "local"})
#: litellm's own HTTP timeout is set this far beyond the heartbeat (or the queue wait), so that
#: ours, not litellm's (600 s when none is given), ends a call.
LITELLM_TIMEOUT_MARGIN = 60.0


@functools.cache
def _litellm() -> Any:
    """litellm, imported and configured once, on first use (not at import of this module)."""
    # The bundled price map instead of a download at import (no internet in production).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # litellm logs every call at INFO; at our call rate that is noise and measurable overhead.
    litellm.suppress_debug_info = True
    litellm.disable_streaming_logging = True  # no litellm callbacks are used; usage is counted by us
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm

Message = dict[str, str]
ModelT = TypeVar("ModelT", bound=BaseModel)


#: How much of an unusable answer the repair round shows the model (a runaway is never echoed whole).
REPAIR_ECHO_CHARS = 800


class Llm(Protocol):
    """What graph nodes need from a language model. Every call names its output cap: a cap that
    fits the call's purpose is what keeps a looping small model from stalling a run for minutes."""

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, json_mode: bool = False,
                       on_token: TokenSink | None = None) -> str: ...

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *, max_tokens: int,
                            on_token: TokenSink | None = None) -> ModelT: ...


class LitellmProvider:
    """Local tiers first (spec §8): a prompt that fits goes to the local model sized by its token
    count; a failed or too-large local call escalates to a cloud tier the run may use, or asks."""

    def __init__(self, settings: Settings, *, breaker: CircuitBreaker | None = None,
                 metrics: Metrics | None = None) -> None:
        _litellm()  # seconds of import: paid at start-up, not by the first run
        self._metrics = metrics or Metrics()
        self._specs = tier_specs(settings)
        fit_model_map(self._specs.values())
        self.prices = Prices(self._specs, settings.llm_tier_prices, estimate_cost)
        """Each tier's price (litellm's map, else `LLM_TIER_PRICES`, else none: said in `/health`)."""
        # The first count loads the tokenizer's vocabulary (0.2-0.3 s, blocking the event loop):
        # paid here, at start-up, instead of inside the first run's first call.
        count_tokens(self._specs[Tier.LOCAL_FAST].model, [{"role": "user", "content": "warm-up"}])
        self._heartbeat = settings.heartbeat_dead_seconds
        self._queue_wait = settings.llm_queue_wait_seconds
        self._queue_check = settings.llm_queue_check_seconds
        self._retries = settings.llm_retries
        self._retry_delay = settings.llm_retry_base_delay
        self._budget_mode = settings.budget_on_exceeded
        self.breaker = breaker or CircuitBreaker(settings.llm_breaker_failures, settings.llm_breaker_seconds)
        self.tokens_per_second: dict[str, float] = {}
        """Generation speed per model, measured on this pod's calls (`/health` shows it)."""

    @property
    def specs(self) -> dict[Tier, TierSpec]:
        return self._specs

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, json_mode: bool = False,
                       on_token: TokenSink | None = None, json_schema: dict[str, Any] | None = None) -> str:
        """`max_tokens` is this call's output cap (each caller's fits its purpose); the local
        tier must hold prompt + output. A JSON answer that hits the cap or repeats itself
        raises `LlmOverflowError`; a text answer is returned as far as it is usable."""
        scope = current_scope()
        self._check_budget(scope)
        prompt_tokens = count_tokens(self._specs[Tier.LOCAL_FAST].model, messages)
        output = max_tokens
        request = _Request(list(messages), json_mode, json_schema, on_token, prompt_tokens, output)
        needed = prompt_tokens + output
        capacity = local_capacity(self._specs)
        if needed > capacity:
            reason = LlmError(f"{prompt_tokens} prompt + {output} output tokens exceed every local tier ({capacity})")
            return await self._escalate(request, scope, reason, purpose="large")
        if scope.cloud_approved:
            return await self._escalate(request, scope, LlmError("cloud approved by the user"))
        try:
            return await self._call(select_local_tier(needed), request, scope)
        except LlmOverflowError:
            raise  # the model answered, too long: retried shorter or fallen back from, not escalated
        except LlmError as local_error:
            return await self._escalate(request, scope, local_error)

    def _check_budget(self, scope: LlmScope) -> None:
        if scope.budget is None:
            return
        try:
            scope.budget.check()
        except BudgetExceededError as exc:
            if self._budget_mode != "ask" or not scope.can_ask:
                raise
            raise BudgetApprovalNeededError(cause=exc, task_id=scope.task_id) from exc

    async def _escalate(self, request: _Request, scope: LlmScope, cause: LlmError, purpose: str = "default") -> str:
        tiers = CLOUD_PREFERENCE[purpose]
        allowed = [tier for tier in tiers if scope.allows(self._specs[tier].provider)]
        for tier in allowed:
            spec = self._specs[tier]
            if not spec.api_key:
                continue
            try:
                return await self._call(tier, request, scope)
            except LlmOverflowError:
                raise
            except LlmError as exc:
                cause = exc
        if allowed:
            offline = [f"{t} ({self._specs[t].model})" for t in allowed if not self._specs[t].api_key]
            if offline and len(offline) == len(allowed):
                raise LlmError(f"{', '.join(offline)}: OFFLINE (no API key); local model: {cause}") from cause
            raise cause
        usable = [t for t in tiers if self._specs[t].api_key and not self.breaker.is_open(self._specs[t].provider)]
        if scope.can_ask and usable:  # asking makes sense only if approval could help
            tier = usable[0]
            spec = self._specs[tier]
            cost = self.prices.cost(tier, request.prompt_tokens, request.max_tokens // 4)
            raise CloudApprovalNeededError(cause=cause, task_id=scope.task_id, tier=tier.value, model=spec.model,
                                           estimated_cost_usd=round(cost, 6)) from cause
        raise cause

    async def _call(self, tier: Tier, request: _Request, scope: LlmScope) -> str:
        spec = self._specs[tier]
        if self.breaker.is_open(spec.provider):
            raise LlmError(f"{tier.value} ({spec.model}) skipped: the provider keeps failing")
        started = time.monotonic()
        for attempt in range(self._retries + 1):
            try:
                streamed = await self._stream(spec, request)
            except QueueWaitTimeoutError:  # the server is up and serving others: no provider failure
                self._metrics.llm_call(tier.value, "queue_timeout")
                raise
            except HeartbeatTimeoutError:
                self.breaker.failure(spec.provider)
                self._metrics.llm_call(tier.value, "heartbeat_timeout")
                raise
            except LlmError as exc:
                if transient(exc) and attempt < self._retries:
                    await asyncio.sleep(self._retry_delay * 2 ** attempt)
                    continue
                self.breaker.failure(spec.provider)
                self._metrics.llm_call(tier.value, "error")
                raise LlmError(f"{tier.value} ({spec.model}): {exc}") from exc
            self.breaker.success(spec.provider)
            text, finish = streamed
            completion = count_tokens(spec.model, [{"role": "assistant", "content": text}])
            usage = Usage(prompt_tokens=request.prompt_tokens, completion_tokens=completion,
                          cost_usd=self.prices.cost(tier, request.prompt_tokens, completion),
                          seconds=time.monotonic() - started, calls=1)
            if completion >= 16 and finish.generating > 0.2:
                speed = completion / finish.generating
                known = self.tokens_per_second.get(spec.model)
                self.tokens_per_second[spec.model] = speed if known is None else (
                    SPEED_WEIGHT * speed + (1 - SPEED_WEIGHT) * known)
            outcome = "ok" if finish.reason == "stop" else finish.reason
            self._metrics.llm_call(tier.value, outcome, seconds=usage.seconds, prompt_tokens=usage.prompt_tokens,
                                   completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd)
            if scope.budget is not None:
                scope.budget.record(scope.node, tier.value, usage)
            return self._finished(text, finish, request, spec, completion, usage.seconds)
        raise AssertionError("unreachable")

    def _finished(self, text: str, finish: Finish, request: _Request, spec: TierSpec, tokens: int,
                  seconds: float) -> str:
        """The answer, or the overflow of a structured one (a cut JSON object is no answer)."""
        if finish.reason == "stop":
            return text
        what = (f"repeated itself (a {finish.period}-character block)" if finish.reason == "repetition"
                else f"reached its cap of {request.max_tokens} output tokens")
        log.warning("LLM answer %s after %d tokens in %.0f s (%s)", what, tokens, seconds, spec.model)
        if request.json_mode:
            raise LlmOverflowError(f"the answer {what} after {tokens} tokens", reason=finish.reason, tokens=tokens)
        if finish.reason == "repetition" and finish.period:
            return without_repetition(text, finish.period) + " …"
        return text

    async def _stream(self, spec: TierSpec, request: _Request) -> tuple[str, Finish]:
        kwargs: dict[str, Any] = {**spec.call_kwargs(), "messages": request.messages, "stream": True,
                                  "max_tokens": request.max_tokens}
        if request.json_mode:  # structured answers (classification, plans, verdicts) should be reproducible
            kwargs["temperature"] = 0.0
        if request.json_mode and spec.provider in ("ollama", "local"):
            kwargs["response_format"] = {"type": "json_object"}
            if spec.provider == "local" and request.json_schema:
                kwargs["response_format"]["schema"] = request.json_schema  # grammar-constrained JSON
        queued = spec.provider in LOCAL_PROVIDERS and bool(spec.api_base)
        # litellm's own HTTP timeout (a read timeout: per chunk, and for the answer to start) only as a backstop.
        kwargs["timeout"] = max(self._heartbeat, self._queue_wait if queued else 0.0) + LITELLM_TIMEOUT_MARGIN
        try:
            if queued:
                stream = await self._taken(spec, _litellm().acompletion(**kwargs))
            else:
                async with asyncio.timeout(self._heartbeat):
                    stream = await _litellm().acompletion(**kwargs)
        except LlmError:
            raise
        except TimeoutError as exc:
            raise HeartbeatTimeoutError(self._dead_message(spec)) from exc
        except Exception as exc:  # litellm maps transport failures to its own exception types
            raise LlmError(f"LLM call failed: {exc}") from exc
        prompt = "\n".join(str(m.get("content") or "") for m in request.messages)
        return await collect(stream, heartbeat=self._heartbeat, on_token=request.on_token, prompt=prompt,
                             dead_message=self._dead_message(spec))

    async def _taken(self, spec: TierSpec, call: Coroutine[Any, Any, Any]) -> Any:
        """The stream of a local call once the server has taken it (`queue_wait.taken`): it waits up
        to `llm_queue_wait_seconds` while the server accepts connections; refused = `LlmError` at once."""

        def on_waiting(begins: bool, waited: float) -> None:
            self._metrics.llm_queue_wait(spec.tier.value, waiting=begins)
            if begins:
                log.info("waiting for the local model (busy): %s has not started answering after %.0f s "
                         "(serving another request, or reading a long prompt); waiting up to %g s while it "
                         "accepts connections", spec.model, waited, self._queue_wait)

        return await queue_wait.taken(
            call, api_base=spec.api_base or "", queue_wait=self._queue_wait, queue_check=self._queue_check,
            on_waiting=on_waiting,
            busy=lambda waited: QueueWaitTimeoutError(
                f"the local model was busy for {waited:.0f} s: it did not take the call ({spec.model}); "
                f"LLM_QUEUE_WAIT_SECONDS is {self._queue_wait:g}"),
            offline=lambda exc, waited: LlmError(
                f"the local model's server is offline ({spec.model} at {spec.api_base}): "
                f"{type(exc).__name__} after waiting {waited:.0f} s for it to take the call"))

    async def complete_json(self, messages: Sequence[Message], schema: type[ModelT], *, max_tokens: int,
                            on_token: TokenSink | None = None) -> ModelT:
        """JSON answer validated by `schema`, in at most two calls: an answer that overflowed
        (its cap, or a loop) is asked for again, shorter, without being shown back; an invalid
        one gets one repair round that shows the model its error and the start of its answer."""
        json_schema = _json_schema(schema)
        call = functools.partial(self.complete, json_mode=True, on_token=on_token, json_schema=json_schema,
                                 max_tokens=max_tokens)
        try:
            text = await call(messages)
        except LlmOverflowError as exc:
            shorter = [*messages, {"role": "user", "content": _SHORTER.format(error=exc)}]
            return _validated(schema, await call(shorter), "LLM answer overflowed, then was invalid")
        try:
            return schema.model_validate(parse_json_object(text))
        except (JsonParseError, ValidationError) as exc:
            log.warning("LLM JSON invalid, asking for a repair: %s", _short(exc))
            echoed = text if len(text) <= REPAIR_ECHO_CHARS else text[:REPAIR_ECHO_CHARS] + " …[cut]"
            repair = [
                *messages,
                {"role": "assistant", "content": echoed},
                {
                    "role": "user",
                    "content": f"Your answer was not valid JSON for the schema: {_short(exc)}. "
                    "Reply with the corrected JSON object only.",
                },
            ]
        return _validated(schema, await call(repair), "LLM returned invalid JSON twice")

    def _dead_message(self, spec: TierSpec) -> str:
        return f"LLM heartbeat: no token for {self._heartbeat:g} s ({spec.model})"


#: The second try of an answer that overflowed: the same request, asked for shorter.
_SHORTER = ("Your previous answer was cut: {error}. Answer the same request again with a much shorter JSON "
            "object: every text one or two sentences, lists with only the items that are needed, nothing repeated.")


#: Weight of the newest call in the measured generation speed (a moving average).
SPEED_WEIGHT = 0.3


@dataclass
class _Request:
    messages: list[Message]
    json_mode: bool
    json_schema: dict[str, Any] | None
    on_token: TokenSink | None
    prompt_tokens: int
    max_tokens: int


@functools.cache
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """Built once per model class (pydantic takes milliseconds per build)."""
    return schema.model_json_schema()


def count_tokens(model: str, messages: Sequence[Message]) -> int:
    try:
        return int(_litellm().token_counter(model=model, messages=list(messages)))
    except Exception:  # unknown tokenizer: a fair estimate beats failing the call
        return sum(len(m.get("content") or "") for m in messages) // 4


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD from litellm's (offline) price map; None when the map does not price the model (a tier's
    price then comes from `LLM_TIER_PRICES`, or is reported missing: `app/llm/prices.py`)."""
    try:
        prompt, completion = _litellm().cost_per_token(model=model, prompt_tokens=prompt_tokens,
                                                     completion_tokens=completion_tokens)
    except Exception as exc:  # litellm raises its own types (NotFoundError, BadRequestError) for an unknown model
        log.debug("litellm has no price for %s: %s", model, exc)
        return None
    return float(prompt + completion)


def _validated(schema: type[ModelT], text: str, failure: str) -> ModelT:
    """The last chance of a structured answer: valid for `schema`, or `LlmJsonError(failure)`."""
    try:
        return schema.model_validate(parse_json_object(text))
    except (JsonParseError, ValidationError) as exc:
        raise LlmJsonError(f"{failure}: {_short(exc)}") from exc


def _short(exc: Exception, limit: int = 300) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "…"
