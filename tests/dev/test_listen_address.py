"""The launchers listen on loopback unless an address is given, say which, and refuse the network without a token."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from app.config import Settings
from app.runtime.listen import ListenRefusedError, check_listen
from app.serve import announce


def test_loopback_by_default(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("HOST", raising=False)
    monkeypatch.delenv("PORT", raising=False)
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8090)
    announce(settings, check_listen(settings))
    assert "this machine only" in capsys.readouterr().out


def test_every_interface_only_with_a_token_or_the_missing_token_said(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ListenRefusedError, match="without API_TOKEN"):
        check_listen(Settings(host="0.0.0.0", port=9001, api_token=None))
    settings = Settings(host="0.0.0.0", port=9001, api_token=SecretStr("s3cret"))
    announce(settings, check_listen(settings))
    assert "0.0.0.0:9001, with API_TOKEN" in capsys.readouterr().out
    settings = Settings(host="0.0.0.0", port=9001, api_token=None, allow_no_token=True)
    announce(settings, check_listen(settings))
    assert "WITHOUT an API_TOKEN" in capsys.readouterr().out
