"""The console's settings of `Settings` (its sessions, sign-in throttle and cookie): a part of the service's
settings kept in their own module, read from the environment like the rest."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConsoleSettings(BaseSettings):
    """How long a console sign-in lasts, how many wrong tokens a client may try, and the cookie's Secure flag."""

    model_config = SettingsConfigDict(extra="ignore", env_ignore_empty=True, use_attribute_docstrings=True)

    console_session_hours: float = Field(default=12.0, gt=0)
    """A console sign-in lasts at most this long (a working day), however active; then the console asks for the
    token again."""
    console_idle_minutes: float = Field(default=60.0, gt=0)
    """A console session nobody used for this long is over (its last use is recorded at most once a minute, so it
    may end up to a minute sooner)."""
    console_sign_in_attempts: int = Field(default=10, ge=1)
    """Wrong tokens one client address (an IPv6 client: its /64) may try at `/ui/login` or as a bearer token within
    any 60 s, counted across replicas; then every try of that client, the right token included, is answered 429 with
    `Retry-After` until the oldest of them is a minute old."""
    console_cookie_secure: Literal["auto", "always", "never"] = "auto"
    """The console cookie's `Secure` flag: `auto` when the request came over https (behind a TLS proxy: the scheme
    it forwarded, believed from `TRUSTED_PROXIES` only), `always` (a service reached over https only), `never`
    (plain http only, e.g. a laptop)."""
