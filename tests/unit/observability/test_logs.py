"""JSON log lines: run ids from context, redaction of configured and recognisable secrets."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from app.config import Settings
from app.observability.logs import REDACTED, QuietPolls, Redactor, build_handler, configure_logging, run_context
from app.observability.redaction import secret_values


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    logger = logging.getLogger("tests.observability")
    handler = build_handler(secrets=["configured-secret-value", "p@ss\"word\\x"], stream=stream)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_each_record_is_one_json_object_with_the_run_ids(capture) -> None:
    logger, stream = capture
    logger.info("outside")
    with run_context(thread_id="thread-t1-0a0b0c0d", task_id="t1"):
        logger.warning("inside %s", "a run")
    outside, inside = lines(stream)
    assert outside["thread_id"] is None and outside["task_id"] is None and outside["message"] == "outside"
    assert inside["thread_id"] == "thread-t1-0a0b0c0d" and inside["task_id"] == "t1"
    assert inside["message"] == "inside a run" and inside["level"] == "WARNING"
    assert inside["logger"] == "tests.observability" and str(inside["ts"]).endswith("+00:00")


async def test_tasks_started_inside_a_run_inherit_its_ids(capture) -> None:
    logger, stream = capture

    async def child() -> None:
        await asyncio.sleep(0)
        logger.info("from a child task")

    with run_context(thread_id="thread-t2-00000000", task_id="t2"):
        task = asyncio.create_task(child())
    await task
    assert lines(stream)[0]["task_id"] == "t2"


def test_configured_secrets_are_redacted_in_message_arguments_and_traceback(capture) -> None:
    logger, stream = capture
    logger.info("key is configured-secret-value and password p@ss\"word\\x")
    try:
        raise RuntimeError("auth failed for configured-secret-value")
    except RuntimeError:
        logger.exception("call failed: %s", "configured-secret-value")
    text = stream.getvalue()
    assert "configured-secret-value" not in text and "p@ss" not in text
    first, second = lines(stream)
    assert first["message"] == f"key is {REDACTED} and password {REDACTED}"
    assert second["message"] == f"call failed: {REDACTED}"
    assert f"auth failed for {REDACTED}" in str(second["exception"])


@pytest.mark.parametrize(("text", "kept"), [
    ("Incorrect API key provided: sk-proj-abcdefghijklmnop1234", "sk-proj-"),
    ("anthropic said sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "sk-ant-"),
    ("push with ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_"),
    ("token github_pat_11ABCDEFG0123456789_abcdefghij", "github_pat_"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Bearer "),
    ("google key AIzaSyA1234567890abcdefghijklmnopqrstu", "AIza"),
    ("connecting to mongodb://orchestrator:hunter2hunter2@db:27017/x", "mongodb://orchestrator:"),
    ('{"x-api-key": "abcdef0123456789abcdef"}', '"x-api-key": "'),
])
def test_recognisable_tokens_are_redacted_even_when_not_configured(text: str, kept: str) -> None:
    redacted = Redactor()(text)
    assert REDACTED in redacted and kept in redacted
    assert redacted.count(REDACTED) == 1 and len(redacted) < len(text)


def test_short_or_empty_configured_values_do_not_redact_ordinary_words() -> None:
    assert Redactor(["", "ab", "to"])("ab to be or not to be") == "ab to be or not to be"


def test_access_log_lines_name_the_run_of_the_request_path(capture) -> None:
    _, stream = capture
    access = logging.getLogger("uvicorn.access")
    handler = build_handler(stream=stream)
    access.addHandler(handler)
    level = access.level
    access.setLevel(logging.INFO)
    try:
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "POST", "/approve/thread-ab-12-c0ffee00", "1.1", 200)
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "POST", "/orchestrate/stream", "1.1", 200)
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    run, other = lines(stream)
    assert run["thread_id"] == "thread-ab-12-c0ffee00" and run["task_id"] == "ab-12"
    assert other["thread_id"] is None


def test_answered_polls_leave_no_access_line_but_failed_polls_and_commands_do(capture) -> None:
    _, stream = capture
    access = logging.getLogger("tests.observability.access")  # its lines reach the captured handler
    access.filters = [QuietPolls()]
    line = '%s - "%s %s HTTP/%s" %d'
    for method, path, status in [("GET", "/status/thread-ab-12-c0ffee00", 200), ("GET", "/health/ready", 200),
                                 ("GET", "/metrics", 200), ("GET", "/runs?limit=5", 200),
                                 ("GET", "/status/thread-ab-12-c0ffee00", 404), ("GET", "/health/ready", 503),
                                 ("POST", "/cancel/thread-ab-12-c0ffee00", 200), ("GET", "/ui", 200)]:
        access.info(line, "127.0.0.1:5", method, path, "1.1", status)
    access.info("not an access line")
    kept = [entry["message"] for entry in lines(stream)]
    assert kept == ['127.0.0.1:5 - "GET /status/thread-ab-12-c0ffee00 HTTP/1.1" 404',
                    '127.0.0.1:5 - "GET /health/ready HTTP/1.1" 503',
                    '127.0.0.1:5 - "POST /cancel/thread-ab-12-c0ffee00 HTTP/1.1" 200',
                    '127.0.0.1:5 - "GET /ui HTTP/1.1" 200', "not an access line"]


def test_settings_name_every_secret_they_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_TOKEN", "git-token-from-env")
    settings = Settings(openai_api_key="sk-openai-key-1", mongodb_url="mongodb://u:mongo-pass@db:27017",
                        knowledgebase_url="http://kb:kb-pass@kb:8080", anthropic_api_key=None)
    assert set(secret_values(settings)) == {"sk-openai-key-1", "mongo-pass", "kb-pass", "git-token-from-env"}


def test_configure_logging_takes_over_library_handlers() -> None:
    """uvicorn and litellm install their own stream handlers; after configuration every record
    leaves through the one JSON handler on the root logger."""
    library = logging.getLogger("tests.observability.library")
    library.addHandler(logging.StreamHandler(io.StringIO()))
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging(level="debug", fmt="json")
        assert library.handlers == []
        assert len(root.handlers) == 1 and root.level == logging.DEBUG
        assert logging.getLogger("httpx").level == logging.WARNING
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        logging.captureWarnings(False)
