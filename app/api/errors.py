"""Domain errors → HTTP, in one place. Bad input is a readable 422, never a 500."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.agents.workspace import WorkspaceError
from app.chat.compression import CompressionError
from app.correction.errors import CorrectionUpstreamError
from app.runs.errors import RunAnsweredError, RunBusyError, RunConflictError, RunNotFoundError

#: OpenAPI entry of routes whose answer depends on the LLM or the KB behind them (`_upstream`).
UPSTREAM_RESPONSES: dict[int | str, dict[str, object]] = {
    502: {"description": "The model or the Knowledge Base behind this route failed or answered nonsense ({detail})"},
}


def _readable(errors: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for error in errors:
        location = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{location}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def register_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": _readable(errors), "errors": errors})

    @app.exception_handler(WorkspaceError)
    async def _workspace(_: Request, exc: WorkspaceError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": f"workspace_path: {exc}"})

    @app.exception_handler(RunBusyError)
    async def _busy(request: Request, exc: RunBusyError) -> JSONResponse:
        # Counted here, where the 429 is made: a recovery round that finds no free slot is not one.
        request.app.state.services.metrics.rejections.inc()
        return JSONResponse(status_code=429, content={"detail": str(exc)})

    @app.exception_handler(RunNotFoundError)
    async def _not_found(_: Request, exc: RunNotFoundError) -> JSONResponse:
        return JSONResponse(status_code=404, content={"detail": str(exc.args[0] if exc.args else exc)})

    @app.exception_handler(CorrectionUpstreamError)
    @app.exception_handler(CompressionError)
    async def _upstream(request: Request, exc: Exception) -> JSONResponse:
        """The KB or the model failed: a clear 502, never a 500 traceback. The text may quote a
        provider's error, so it is redacted like every other outgoing text."""
        return JSONResponse(status_code=502, content={"detail": request.app.state.services.redact(str(exc))})

    @app.exception_handler(RunConflictError)
    async def _conflict(request: Request, exc: RunConflictError) -> JSONResponse:
        if isinstance(exc, RunAnsweredError):
            request.app.state.services.metrics.answers_refused.inc()
            return JSONResponse(status_code=409, content={"detail": str(exc), "answered": exc.answer})
        return JSONResponse(status_code=409, content={"detail": str(exc)})
