"""`POST /v1/messages` and `POST /v1/messages/count_tokens`: Anthropic's Messages API answered by the
local model, for Claude Code on the local runner when no Anthropic key is configured
(app/agents/programs/claude.py points it here; app/llm/local_messages.py makes the call).

With `API_TOKEN` set, these two routes take the key the local runner hands to agents (`x-api-key`
or a bearer token, derived from the token: app/api/auth.py), besides the token itself. Errors are
Anthropic's shape (`{"type": "error", "error": {"type", "message"}}`), which Claude Code reads.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from app.api.deps import MetricsDep, SettingsDep
from app.llm.anthropic_messages import MessagesError
from app.llm.local_messages import LocalMessages

router = APIRouter(tags=["agents"])

_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "Not a Messages request, or a prompt too long for the local model's context"},
    502: {"description": "The local model failed or is offline"},
    529: {"description": "The local model stayed busy past LLM_QUEUE_WAIT_SECONDS"},
}


@router.post("/v1/messages", responses=_RESPONSES)
async def create_message(request: Request, settings: SettingsDep, metrics: MetricsDep) -> Response:
    """One turn of the local model; streamed (`"stream": true`) as Anthropic's server-sent events."""
    messages = LocalMessages(settings, metrics=metrics)
    try:
        prepared = messages.prepare(await _body(request))
    except MessagesError as exc:
        return JSONResponse(exc.body(), status_code=exc.status)
    reply = await messages.reply(prepared)
    if reply.events is not None:
        return StreamingResponse(reply.events, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    return JSONResponse(reply.body, status_code=reply.status)


@router.post("/v1/messages/count_tokens", responses={400: _RESPONSES[400]})
async def count_message_tokens(request: Request, settings: SettingsDep) -> JSONResponse:
    """`{"input_tokens": n}`: the prompt as the local model would get it."""
    try:
        tokens = LocalMessages(settings).count_tokens(await _body(request))
    except MessagesError as exc:
        return JSONResponse(exc.body(), status_code=exc.status)
    return JSONResponse({"input_tokens": tokens})


async def _body(request: Request) -> object:
    try:
        return await request.json()
    except ValueError as exc:
        raise MessagesError(400, "invalid_request_error", f"the body is not JSON: {exc}") from exc
