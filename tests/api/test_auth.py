"""The optional API token (`API_TOKEN`, app/api/auth.py) on a real service process: every route
needs it, the probes and a minimal `/health` do not, and the terminal client sends it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from app.cli.__main__ import cli
from app.cli.codes import ExitCode
from tests.fixtures.service import ServiceProcess, service_env

TOKEN = "orchestrator-api-token-0123456789"
UNKNOWN = "thread-unknown-00000000"
OPEN = {("get", "/health/live"), ("get", "/health/ready"), ("get", "/health")}


@pytest.fixture(scope="module")
def guarded(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, api_token=TOKEN)
    proc = ServiceProcess(env=env, log_path=tmp_path_factory.mktemp("svc") / "service-auth.log").start()
    yield proc
    proc.stop()


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_every_route_but_the_probes_answers_401_without_the_token(guarded: ServiceProcess) -> None:
    with guarded.client() as http:
        assert http.get("/openapi.json").status_code == 401
        schema = http.get("/openapi.json", headers=bearer()).json()
        routes = {(method, path) for path, item in schema["paths"].items() for method in item}
        assert ("get", "/stream/{thread_id}") in routes and ("post", "/orchestrate/stream") in routes
        refused = {}
        for method, path in sorted(routes - OPEN):
            url = path.replace("{thread_id}", UNKNOWN)
            for headers in ({}, bearer("wrong-token"), {"Authorization": f"Basic {TOKEN}"}):
                response = http.request(method.upper(), url, headers=headers)
                refused[(method, path, headers.get("Authorization", "")[:5])] = response.status_code
            assert http.request(method.upper(), url, headers=bearer()).status_code != 401, (method, path)
        assert set(refused.values()) == {401}, refused
        unknown = http.get("/no-such-route")
        assert unknown.status_code == 401 and "JERVIS_API_TOKEN" in unknown.json()["detail"]
        assert unknown.headers["www-authenticate"].startswith("Bearer")


def test_probes_and_a_minimal_health_answer_without_the_token(guarded: ServiceProcess) -> None:
    with guarded.client() as http:
        assert http.get("/health").json() == {"status": "ok", "busy": False}
        assert "dependencies" in http.get("/health", headers=bearer()).json()
        assert http.get("/health/live").json() == {"status": "alive"}
        ready = http.get("/health/ready")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        assert "mongodb" in http.get("/health/ready", headers=bearer()).json()
        assert http.get(f"/stream/{UNKNOWN}", headers=bearer()).status_code == 404


def test_the_terminal_client_sends_the_token_from_its_environment(guarded: ServiceProcess) -> None:
    args = ["status", UNKNOWN, "--url", guarded.url]
    refused = CliRunner().invoke(cli, args, env={"JERVIS_API_TOKEN": None})
    assert refused.exit_code == ExitCode.REJECTED_REQUEST and "JERVIS_API_TOKEN" in refused.output
    answered = CliRunner().invoke(cli, [*args, "--json"], env={"JERVIS_API_TOKEN": TOKEN})
    assert answered.exit_code == ExitCode.FAILED and '"status": "unknown"' in answered.output


def test_the_console_signs_in_with_the_token_and_keeps_a_cookie_not_the_token(guarded: ServiceProcess) -> None:
    with guarded.client() as http:
        page = http.get("/ui")
        assert page.status_code == 303 and page.headers["location"] == "/ui/login"
        assert http.get("/ui/runs/thread-x-1").headers["location"] == "/ui/login"
        assert http.get("/ui/login").status_code == 200 and 'name="token"' in http.get("/ui/login").text
        assert http.get("/ui/assets/console.css").status_code == 200  # the login page's stylesheet
        assert http.get("/runs", cookies={"jervis_console": TOKEN}).status_code == 401  # the token is not the key
        wrong = http.post("/ui/login", data={"token": "wrong-token"})
        assert wrong.status_code == 401 and "not the service's API token" in wrong.text
        signed = http.post("/ui/login", data={"token": TOKEN})
        assert signed.status_code == 303 and signed.headers["location"] == "/ui"
        cookie = signed.cookies["jervis_console"]
        assert TOKEN not in cookie and "httponly" in signed.headers["set-cookie"].lower()
        assert "samesite=strict" in signed.headers["set-cookie"].lower()
        jar = {"jervis_console": cookie}
        assert http.get("/ui", cookies=jar).status_code == 200
        assert http.get("/runs", cookies=jar).status_code == 200
        # A change on the strength of the cookie needs the console's header (no other site can send it)
        assert http.post(f"/cancel/{UNKNOWN}", cookies=jar).status_code == 401
        assert http.post(f"/cancel/{UNKNOWN}", cookies=jar, headers={"X-Jervis-Console": "1"}).status_code == 404
        out = http.post("/ui/logout", cookies=jar)
        assert out.status_code == 303 and 'jervis_console=""' in out.headers["set-cookie"]
