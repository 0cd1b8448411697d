"""`/ui`: the operator console, a page served by the service itself.

Plain HTML, CSS and a JavaScript module from `app/api/console/`, read from the package: no CDN,
no build step, nothing fetched at run time. The page reads the same routes as everyone else
(`/runs`, `/runs/{id}`, `/stream/{id}`) and answers with the body Kotlin sends. With `API_TOKEN`
set, `/ui/login` trades the token for the console's cookie (see `app/api/auth.py`).
"""

from __future__ import annotations

import hmac
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.auth import CONSOLE_COOKIE, session_cookie
from app.api.deps import ConsoleStoreDep, SettingsDep

router = APIRouter(include_in_schema=False)

ASSETS = Path(__file__).resolve().parents[1] / "console"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
#: The page and its assets change with the service: always revalidated, never cached stale.
_NO_CACHE = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
             "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
             "Referrer-Policy": "same-origin"}
MAX_LOGIN_BYTES = 4096


@cache
def _asset(name: str) -> bytes:
    return (ASSETS / name).read_bytes()


@cache
def _asset_names() -> frozenset[str]:
    return frozenset(p.name for p in ASSETS.iterdir() if p.suffix in _TYPES)


@router.get("/ui")
@router.get("/ui/runs/{thread_id}")
async def console_page(settings: SettingsDep, thread_id: str | None = None) -> Response:
    """The console; `/ui/runs/{thread_id}` opens one run (the page reads the path). Its sign-out button only
    where there is something to sign out of (`API_TOKEN` set)."""
    page = _asset("index.html")
    if settings.api_token is not None:
        page = page.replace(b" data-sign-out hidden>", b" data-sign-out>")
    return Response(page, media_type=_TYPES[".html"], headers=_NO_CACHE)


@router.get("/ui/assets/{name}")
async def console_asset(name: str) -> Response:
    if name not in _asset_names():
        raise HTTPException(status_code=404, detail=f"No console asset {name!r}")
    return Response(_asset(name), media_type=_TYPES[Path(name).suffix], headers=_NO_CACHE)


@router.get("/ui/login")
async def login_page(settings: SettingsDep) -> Response:
    if settings.api_token is None:
        return RedirectResponse("/ui", status_code=303)
    return _login(status_code=200)


@router.post("/ui/login")
async def login(request: Request, settings: SettingsDep, store: ConsoleStoreDep) -> Response:
    """The token from the form, checked in constant time, at most `CONSOLE_SIGN_IN_ATTEMPTS` wrong ones per
    client within a minute (then every attempt is refused for a while, see `app/persistence/sign_in_throttle.py`);
    the cookie holds a new session's random id."""
    if settings.api_token is None:
        return RedirectResponse("/ui", status_code=303)
    client = request.client.host if request.client else None  # the forwarded one behind a trusted proxy
    if (wait := await store.throttle.refused_for(client)) is not None:
        return _login(status_code=429, message=f"Too many wrong tokens from your address: try again in {wait} s.",
                      headers={"Retry-After": str(wait)})
    body = await request.body()
    if len(body) > MAX_LOGIN_BYTES:
        return _login(status_code=413, message="The form is too large.")
    presented = (parse_qs(body.decode(errors="replace")).get("token") or [""])[0].strip()
    token = settings.api_token.get_secret_value()
    if not presented or not hmac.compare_digest(presented.encode(), token.encode()):
        await store.throttle.wrong(client)
        return _login(status_code=401, message="That is not the service's API token.")
    secure = settings.console_cookie_secure == "always" or (
        settings.console_cookie_secure == "auto" and request.url.scheme == "https")
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(CONSOLE_COOKIE, await store.sessions.create(token), httponly=True, samesite="strict",
                        path="/", secure=secure, max_age=max(1, round(settings.console_session_hours * 3600)))
    return response


@router.post("/ui/logout")
async def logout(request: Request, store: ConsoleStoreDep) -> Response:
    """Ends the session on the server (a copy of the cookie, in any browser, is refused from now on)."""
    session_id = session_cookie(request.headers.get("cookie", "").encode())
    if session_id is not None:
        await store.sessions.revoke(session_id)
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(CONSOLE_COOKIE, path="/")
    return response


def _login(*, status_code: int, message: str = "", headers: dict[str, str] | None = None) -> HTMLResponse:
    page = _asset("login.html").decode().replace("{{message}}", message)
    return HTMLResponse(page, status_code=status_code, headers=_NO_CACHE | (headers or {}))
