"""The optional API token (`API_TOKEN`, app/api/auth.py) on a real service process: every route
needs it, the probes and a minimal `/health` do not, and the terminal client sends it. The console's
sessions end at sign-out, token rotation, idle timeout and expiry (times moved in MongoDB instead of
waited for), and its sign-in is throttled per client, the forwarded one only from a trusted proxy."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pymongo import MongoClient

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
        for n, (method, path) in enumerate(sorted(routes - OPEN)):
            url = path.replace("{thread_id}", UNKNOWN)
            client = {"X-Forwarded-For": f"198.18.0.{n}"}  # one wrong token per client: none throttled
            for headers in ({}, bearer("wrong-token") | client, {"Authorization": f"Basic {TOKEN}"}):
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
        assert http.get("/runs", cookies=jar).status_code == 401  # signed out on the server, not only in the browser
        again = http.post("/ui/login", data={"token": TOKEN}).cookies["jervis_console"]
        assert again != cookie  # a new random session per sign-in


def sign_in(http: Any, token: str = TOKEN, **headers: str) -> dict[str, str]:
    signed = http.post("/ui/login", data={"token": token}, headers=headers)
    assert signed.status_code == 303, signed.text
    http.cookies.clear()  # each request names its session itself
    return {"jervis_console": signed.cookies["jervis_console"]}


def session_times(proc: ServiceProcess, mongo_url: str, jar: dict[str, str], **shift: float) -> None:
    """Moves a session's stored times (`created_at`, `last_seen`, `expires_at`) by seconds: time passes for it."""
    with MongoClient[dict[str, Any]](mongo_url) as client:
        sessions = client[proc.env["MONGODB_DATABASE"]]["console_sessions"]
        key = hashlib.sha256(jar["jervis_console"].encode()).hexdigest()  # stored by digest only
        assert sessions.update_one({"_id": key}, {"$inc": shift}).matched_count == 1


def test_a_session_ends_after_an_hour_unused_and_twelve_hours_after_sign_in(guarded: ServiceProcess,
                                                                            mongo_server: Any) -> None:
    with guarded.client() as http:
        idle, busy, fresh = sign_in(http), sign_in(http), sign_in(http)
        session_times(guarded, mongo_server.url, idle, last_seen=-3590)
        assert http.get("/runs", cookies=idle).status_code == 200  # 59 min 50 s unused: still good, and used now
        session_times(guarded, mongo_server.url, idle, last_seen=-3601)
        assert http.get("/runs", cookies=idle).status_code == 401
        assert http.get("/ui", cookies=idle).headers["location"] == "/ui/login"
        # In use all along (last seen a minute ago), but signed in 12 hours ago
        session_times(guarded, mongo_server.url, busy, created_at=-43_200, expires_at=-43_200 + 60, last_seen=-60)
        assert http.get("/runs", cookies=busy).status_code == 200
        session_times(guarded, mongo_server.url, busy, expires_at=-61)
        assert http.get("/runs", cookies=busy).status_code == 401
        assert http.get("/runs", cookies=fresh).status_code == 200


def test_the_cookie_is_secure_when_a_trusted_proxy_says_the_request_came_over_https(guarded: ServiceProcess) -> None:
    """uvicorn as these tests start it believes X-Forwarded-Proto from loopback (its own default); the
    launchers (`app.serve`) from TRUSTED_PROXIES only (tests/security/test_expose_forwarded.py)."""
    with guarded.client() as http:
        plain = http.post("/ui/login", data={"token": TOKEN}).headers["set-cookie"].lower()
        proxied = http.post("/ui/login", data={"token": TOKEN},
                            headers={"X-Forwarded-Proto": "https"}).headers["set-cookie"].lower()
    assert "; secure" not in plain and "; secure" in proxied
    assert "max-age=43200" in plain  # the browser drops it at the session's end too


def test_a_rotated_token_ends_every_console_session(mongo_server: Any, llm_server: Any, kotlin_server: Any,
                                                    kb_server: Any, data_root: Path, tmp_path: Path) -> None:
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, api_token=TOKEN)
    first = ServiceProcess(env=env, log_path=tmp_path / "first.log").start()
    try:
        with first.client() as http:
            jar = sign_in(http)
            assert http.get("/runs", cookies=jar).status_code == 200
    finally:
        first.stop()
    rotated = ServiceProcess(env=env | {"API_TOKEN": TOKEN + "-rotated"}, log_path=tmp_path / "rotated.log").start()
    try:
        with rotated.client() as http:
            assert http.get("/runs", cookies=jar).status_code == 401
            assert http.get("/runs", headers=bearer(TOKEN + "-rotated")).status_code == 200
            assert http.get("/runs", cookies=sign_in(http, TOKEN + "-rotated")).status_code == 200
    finally:
        rotated.stop()


def test_the_eleventh_wrong_token_in_a_minute_is_answered_429_per_forwarded_client(guarded: ServiceProcess) -> None:
    """The test's requests come from loopback, the trusted proxy: each X-Forwarded-For is a client of its own."""
    client: dict[str, str] = {"X-Forwarded-For": "198.51.100.7"}
    neighbour = {"X-Forwarded-For": "198.51.100.8"}
    with guarded.client() as http:
        tries = [http.post("/ui/login", data={"token": f"guess-{n}"}, headers=client) for n in range(11)]
        right = http.post("/ui/login", data={"token": TOKEN}, headers=client)
        assert http.post("/ui/login", data={"token": TOKEN}, headers=neighbour).status_code == 303
    assert [t.status_code for t in tries] == [401] * 10 + [429]
    assert "not the service's API token" in tries[0].text and "Too many wrong tokens" in tries[10].text
    assert right.status_code == 429 and 50 <= int(right.headers["retry-after"]) <= 60  # the right token too
    assert "Too many wrong tokens from your address: try again in" in right.text


def test_the_eleventh_wrong_bearer_token_in_a_minute_is_answered_429_and_then_the_right_one_too(
        guarded: ServiceProcess) -> None:
    """The API's bearer tokens count against the console's throttle: a guesser gets ten tries a minute,
    then nothing, not even a right guess; a neighbour is not affected."""
    client = {"X-Forwarded-For": "198.51.100.21"}
    neighbour = {"X-Forwarded-For": "198.51.100.22"}
    with guarded.client() as http:
        tries = [http.get("/runs", headers=bearer(f"guess-{n}") | client) for n in range(11)]
        right = http.get("/runs", headers=bearer() | client)
        agent_key = http.post("/v1/messages", headers={"x-api-key": "guess"} | client, json={})
        login = http.post("/ui/login", data={"token": TOKEN}, headers=client)
        other = http.get("/runs", headers=bearer() | neighbour)
    assert [t.status_code for t in tries] == [401] * 10 + [429]
    assert "Too many wrong API tokens from your address" in tries[10].json()["detail"]
    assert right.status_code == 429 and 50 <= int(right.headers["retry-after"]) <= 60  # the right token too
    assert agent_key.status_code == 429  # the agents' key is a token like any other
    assert login.status_code == 429  # one count per client, whichever door the guesses came through
    assert other.status_code == 200


def test_forwarded_headers_from_an_untrusted_address_are_ignored(mongo_server: Any, llm_server: Any,
                                                                  kotlin_server: Any, kb_server: Any,
                                                                  data_root: Path, tmp_path: Path) -> None:
    """Trusting only another proxy: a client cannot pass for https, nor escape the throttle by naming other
    addresses in X-Forwarded-For."""
    env = service_env(mongo_url=mongo_server.url, llm_url=llm_server.url, kotlin_url=kotlin_server.url,
                      kb_url=kb_server.url, data_root=data_root, api_token=TOKEN, forwarded_allow_ips="192.0.2.1")
    proc = ServiceProcess(env=env, log_path=tmp_path / "untrusted.log").start()
    try:
        with proc.client() as http:
            cookie = http.post("/ui/login", data={"token": TOKEN}, headers={"X-Forwarded-Proto": "https"})
            assert "; secure" not in cookie.headers["set-cookie"].lower()
            answers = [http.post("/ui/login", data={"token": f"guess-{n}"},
                                 headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code for n in range(11)]
    finally:
        proc.stop()
    assert answers == [401] * 10 + [429]


def test_csrf_header_and_session_are_both_needed_for_a_change(guarded: ServiceProcess) -> None:
    with guarded.client() as http:
        jar = sign_in(http)
        assert http.post(f"/cancel/{UNKNOWN}", cookies=jar).status_code == 401
        assert http.post(f"/cancel/{UNKNOWN}", cookies={"jervis_console": "made-up"},
                         headers={"X-Jervis-Console": "1"}).status_code == 401
        assert http.post(f"/cancel/{UNKNOWN}", cookies=jar, headers={"X-Jervis-Console": "1"}).status_code == 404
