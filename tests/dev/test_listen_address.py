"""The dev launcher listens on loopback unless an address is given, and says which."""

from __future__ import annotations

import pytest

from app.dev.__main__ import listen_address


def test_loopback_by_default(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("HOST", raising=False)
    monkeypatch.delenv("PORT", raising=False)
    assert listen_address() == ("127.0.0.1", 8090)
    assert "this machine only" in capsys.readouterr().out


def test_every_interface_only_when_asked_and_the_missing_token_said(monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "9001")
    monkeypatch.delenv("API_TOKEN", raising=False)
    assert listen_address() == ("0.0.0.0", 9001)
    assert "WITHOUT an API_TOKEN" in capsys.readouterr().out
    monkeypatch.setenv("API_TOKEN", "s3cret")
    listen_address()
    assert "with API_TOKEN" in capsys.readouterr().out
