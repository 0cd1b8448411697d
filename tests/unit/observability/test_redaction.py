"""The one redaction of outgoing text (app/observability/redaction.py): shapes it masks, text it
must leave alone, and JSON-like data."""

from __future__ import annotations

import pytest

from app.observability.redaction import REDACTED, Redactor


@pytest.mark.parametrize("text", [
    "Add bearer authentication to the API",
    "BEARER TOKENS are described in RFC 6750",
    "use an sk-learn-compatible-estimator, not risk-1234567890abcdefgh",
    "api_key = settings.openai_api_key",
    "API_KEY: read from the environment",
    "the ghost_of_christmas_past_and_future ghp_short",
    "see https://example.com:8443/path and mailto:someone@example.com",
    "Přidej endpoint /health do API (krok 1/3)",
])
def test_ordinary_text_passes_unchanged(text: str) -> None:
    assert Redactor(["configured-secret"])(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: BEARER abcdefgh12345678", f"Authorization: BEARER {REDACTED}"),
    ("OPENAI_API_KEY=sk-proj-abc123def456ghi789", f"OPENAI_API_KEY=sk-proj-{REDACTED}"),
    ("API_KEY=abcdef123456789012", f"API_KEY={REDACTED}"),
    ("git remote https://bot:s3cr3t@github.com/x", f"git remote https://bot:{REDACTED}@github.com/x"),
])
def test_credential_shapes_keep_their_prefix(text: str, expected: str) -> None:
    assert Redactor()(text) == expected


def test_data_redacts_every_string_and_keeps_keys_and_other_values() -> None:
    redact = Redactor(["configured-secret"])
    data = {"configured-secret": ["x configured-secret", ("ghp_abcdefghijklmnopqrstuvwxyz0123", 3)], "n": None}
    assert redact.data(data) == {"configured-secret": [f"x {REDACTED}", (f"ghp_{REDACTED}", 3)], "n": None}
