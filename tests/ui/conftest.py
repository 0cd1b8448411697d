"""The console in a real browser: Playwright (pinned in requirements-dev.txt) driving Debian's
Chromium (`scripts/test.sh` installs it when missing) against a real service process with the
scripted LLM and agent."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.fixtures.service import ServiceProcess, local_service_process

CHROMIUM = os.environ.get("JERVIS_CHROMIUM", "/usr/bin/chromium")
#: As root in a container Chromium needs --no-sandbox; the rest keep it off this machine's closed
#: network (no background lookups of Google's hosts at every start).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
#: Where `JERVIS_UPDATE_SCREENSHOTS=1` puts the console's screenshots (checked in, shown by the docs).
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Package-scoped (tests/ui only): between its calls Playwright's sync API marks its event loop as the thread's
    running loop, which would refuse every asyncio test after this package."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail("Chromium is missing: ./scripts/test.sh installs it (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists()
                                              else shutil.which("chromium"), args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where tests put the files their agents wait for (`@@WAIT`): a folder the agents' sandbox lets them see."""
    return tmp_path_factory.mktemp("gates")


@pytest.fixture(scope="package")
def console_service(mongo_server: Any, llm_server: Any, kotlin_server: Any, kb_server: Any, data_root: Path,
                    gates: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = local_service_process(mongo_server, llm_server, kotlin_server, kb_server, data_root,
                                 tmp_path_factory.mktemp("svc") / "service-console.log",
                                 epic_max_parallel_goals=2,  # an epic's independent goals side by side
                                 agent_sandbox_writable=json.dumps([str(gates)]))
    yield proc
    proc.stop()


@pytest.fixture
def page(browser: Browser, console_service: ServiceProcess) -> Iterator[Page]:
    context = browser.new_context(base_url=console_service.url, viewport={"width": 1360, "height": 900},
                                  color_scheme="light")
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"the page threw: {errors}"


def screenshot(page: Page, name: str, tmp_path: Path) -> Path:
    """A PNG of the page in the test's folder, and in docs/images when asked to update them."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("JERVIS_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / name)
    return path
