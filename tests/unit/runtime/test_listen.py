"""Which listens need a token, and which Host names pass: the rules of `app/runtime/listen.py`."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from app.config import Settings
from app.runtime.listen import LOOPBACK_NAMES, ListenRefusedError, allowed_host_names, check_listen, is_loopback


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                                ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                                ("::", False), ("", False), ("192.168.1.5", False),
                                                ("jervis.example", False), ("::ffff:127.0.0.1", True),
                                                ("::ffff:10.0.0.1", False)])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.7"])
def test_a_listen_beyond_loopback_needs_a_token_or_the_explicit_choice(host: str) -> None:
    with pytest.raises(ListenRefusedError, match="without API_TOKEN"):
        check_listen(Settings(host=host, api_token=None))
    assert check_listen(Settings(host=host, api_token=SecretStr("t"))) is None
    assert "WITHOUT an API_TOKEN" in (check_listen(Settings(host=host, api_token=None, allow_no_token=True)) or "")
    assert check_listen(Settings(host="127.0.0.1", api_token=None)) is None


def test_allowed_names_by_listen_and_token() -> None:
    assert allowed_host_names(Settings(host="127.0.0.1")) == LOOPBACK_NAMES
    named = Settings(host="127.0.0.1", allowed_hosts="Jervis.Test")
    assert allowed_host_names(named) == LOOPBACK_NAMES | {"jervis.test"}
    assert allowed_host_names(Settings(host="10.0.0.7", api_token=SecretStr("t"))) is None
    assert allowed_host_names(Settings(host="0.0.0.0", allow_no_token=True)) == LOOPBACK_NAMES
    own = Settings(host="10.0.0.7", allowed_hosts="a.test")
    assert allowed_host_names(own) == LOOPBACK_NAMES | {"a.test", "10.0.0.7"}
    assert allowed_host_names(Settings(host="::1")) == LOOPBACK_NAMES
    assert allowed_host_names(Settings(host="0.0.0.0", allowed_hosts="*")) is None


def test_trusted_proxies_name_addresses_never_everyone() -> None:
    assert Settings(trusted_proxies="10.0.0.0/8, 192.0.2.1").trusted_proxies == ["10.0.0.0/8", "192.0.2.1"]
    assert Settings(trusted_proxies='["::1"]').trusted_proxies == ["::1"]
    for bad in ("*", "proxy.example"):
        with pytest.raises(ValueError, match="trusted_proxies"):
            Settings(trusted_proxies=bad)
