"""Console sessions in a real browser: a session that expires, a cookie refused after sign-out,
and sign-in throttled at the eleventh wrong token in a minute (app/persistence/console_sessions.py,
app/persistence/sign_in_throttle.py)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.fixtures.service import ServiceProcess, local_service_process
from tests.ui.conftest import screenshot

TOKEN = "console-session-token-0123456789"
#: Session lifetime and idle timeout of the browser tests' service, in seconds (the settings take hours and minutes).
LIFETIME = 8.0
IDLE = 4.0
LOGIN = re.compile(r"/ui/login$")


def guarded(tmp_path_factory: pytest.TempPathFactory, name: str, servers: tuple[Any, ...],
            data_root: Path) -> ServiceProcess:
    mongo, llm, kotlin, kb = servers
    return local_service_process(mongo, llm, kotlin, kb, data_root, tmp_path_factory.mktemp("svc") / f"{name}.log",
                                 api_token=TOKEN, console_session_hours=LIFETIME / 3600,
                                 console_idle_minutes=IDLE / 60)


@pytest.fixture(scope="module")
def service(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = guarded(tmp_path_factory, "sessions", (mongo_server, llm_server, kotlin_server, kb_server), data_root)
    yield proc
    proc.stop()


def open_page(browser: Browser, service: ServiceProcess) -> Page:
    page = browser.new_context(base_url=service.url, viewport={"width": 1100, "height": 700}).new_page()
    page.set_default_timeout(20_000)
    return page


def sign_in(page: Page, token: str = TOKEN) -> None:
    page.goto("/ui")
    expect(page).to_have_url(LOGIN)
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")


def test_a_session_in_use_expires_at_its_lifetime_and_the_console_asks_to_sign_in_again(
        browser: Browser, service: ServiceProcess, tmp_path: Path) -> None:
    page = open_page(browser, service)
    sign_in(page)
    expect(page.locator(".sign-out button")).to_be_visible()
    signed_in = time.monotonic()
    screenshot(page, "console-signed-in.png", tmp_path)

    deadline = signed_in + LIFETIME + 15
    while True:
        page.goto("/ui")
        if page.url.endswith("/ui/login"):
            break
        assert time.monotonic() < deadline, "the session outlived its lifetime"
        page.wait_for_timeout(500)
    assert time.monotonic() - signed_in >= LIFETIME - 0.5  # not before its time
    expect(page.locator("input[name=token]")).to_be_visible()
    screenshot(page, "console-session-expired.png", tmp_path)
    page.context.close()


def test_a_session_left_unused_ends_before_its_lifetime(browser: Browser, service: ServiceProcess,
                                                        tmp_path: Path) -> None:
    page = open_page(browser, service)
    sign_in(page)
    expect(page.locator(".sign-out button")).to_be_visible()
    page.goto("about:blank")  # the console closed: no more requests on the session
    page.wait_for_timeout((IDLE + 1.5) * 1000)
    page.goto("/ui")
    expect(page).to_have_url(LOGIN)  # idle for longer than IDLE, well within LIFETIME
    screenshot(page, "console-session-idle.png", tmp_path)
    page.context.close()


def test_a_cookie_copied_before_sign_out_is_refused_after_it(browser: Browser, service: ServiceProcess,
                                                             tmp_path: Path) -> None:
    page = open_page(browser, service)
    sign_in(page)
    expect(page.locator(".sign-out button")).to_be_visible()
    copied = page.context.cookies()
    assert [c["name"] for c in copied] == ["jervis_console"] and TOKEN not in copied[0]["value"]

    page.click(".sign-out button")
    expect(page).to_have_url(LOGIN)

    other = open_page(browser, service)
    other.context.add_cookies([{"name": "jervis_console", "value": copied[0]["value"], "url": service.url}])  # a copy
    other.goto("/ui")
    expect(other).to_have_url(LOGIN)
    assert other.request.get("/runs").status == 401
    screenshot(other, "console-signed-out-cookie.png", tmp_path)
    other.context.close()
    page.context.close()


def test_the_eleventh_wrong_token_in_a_minute_is_refused_on_the_page(
        browser: Browser, mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    proc = guarded(tmp_path_factory, "throttled", (mongo_server, llm_server, kotlin_server, kb_server), data_root)
    try:
        page = open_page(browser, proc)
        for attempt in range(10):
            sign_in(page, f"wrong-{attempt}")
            expect(page.get_by_role("alert")).to_have_text("That is not the service's API token.")
        with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/ui/login")) as answer:
            sign_in(page, TOKEN)  # the eleventh try: refused although right, until the first wrong one is a minute old
        assert answer.value.status == 429 and 1 <= int(answer.value.headers["retry-after"]) <= 60
        expect(page.get_by_role("alert")).to_contain_text("Too many wrong tokens from your address: try again in")
        expect(page.locator(".sign-out button")).to_have_count(0)
        screenshot(page, "console-sign-in-throttled.png", tmp_path)
        page.context.close()
    finally:
        proc.stop()
