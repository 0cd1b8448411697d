"""One redaction for every text that leaves the service: logs, SSE events, pushes, checkpoints,
the context store, HTTP error details.

Two kinds of secret are masked: the values the service was configured with
(`secret_values(settings)`), and credentials recognisable by their shape that it was never told
of (an agent's `GIT_TOKEN` echoed in its log, a provider error quoting a key). Every shape needs
a digit in its secret part, so ordinary words after "Bearer" or "sk-" are left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from app.config import Settings

REDACTED = "***"

#: Credentials recognisable by shape: provider keys, GitHub/GitLab tokens, bearer headers, API-key
#: assignments, passwords in URLs. Group 1 (the recognisable prefix) is kept for debugging. Each
#: pattern starts with a literal and checks what precedes it by look-behind, so the regex engine
#: scans for the literal at C speed: a leading `\b` or `(?i)` made them ~10x slower, which a whole
#: checkpoint would feel. `_TOKEN`: a run of key characters with at least one digit.
_TOKEN = r"(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]"
_HEADER_TOKEN = r"(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{12,}=*"
_ASSIGNED = r"[\"']?\s*[:=]\s*[\"']?)(?=[A-Za-z0-9._\-]*\d)[A-Za-z0-9._\-]{12,}"
TOKEN_PATTERNS = (
    re.compile(r"(sk-(?<![A-Za-z0-9_]sk-)(?:ant-|proj-)?)" + _TOKEN + "{16,}"),
    re.compile(r"(gh(?<![A-Za-z0-9_]gh)[pousr]_)(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{20,}"),
    re.compile(r"(github_pat_(?<![A-Za-z0-9_]github_pat_))" + _TOKEN + "{20,}"),
    re.compile(r"(glpat-(?<![A-Za-z0-9_]glpat-))" + _TOKEN + "{16,}"),
    re.compile(r"(AIza(?<![A-Za-z0-9_]AIza))" + _TOKEN + "{30,}"),
    re.compile(r"(earer(?<=[Bb]earer)(?<![A-Za-z0-9_][Bb]earer)\s+)" + _HEADER_TOKEN),
    re.compile(r"(EARER(?<=BEARER)(?<![A-Za-z0-9_]BEARER)\s+)" + _HEADER_TOKEN),
    re.compile(r"(pi(?<=[Aa]pi)[-_]?[Kk]ey" + _ASSIGNED),
    re.compile(r"(PI(?<=API)[-_]?KEY" + _ASSIGNED),
    re.compile(r"(://[^/\s:@]+:)[^/\s@]+(?=@)"),
)
def secret_values(settings: Settings) -> list[str]:
    """Everything that must never reach a log line: API keys, passwords in URLs and the agent
    secrets (`AGENT_SECRET_KEYS`) when this process has them (local runner)."""
    keys = [settings.anthropic_api_key, settings.openai_api_key, settings.google_api_key, settings.api_token]
    values = [key.get_secret_value() for key in keys if key is not None]
    values += [os.environ[name] for name in settings.agent_secret_keys if os.environ.get(name)]
    for url in (settings.mongodb_url, settings.kotlin_server_url, settings.knowledgebase_url,
                settings.knowledgebase_write_url, settings.ollama_url, settings.local_llm_api_base,
                settings.anthropic_api_base, settings.openai_api_base, settings.gemini_api_base):
        password = _url_password(url)
        if password:
            values.append(password)
    return values


def _url_password(url: str | None) -> str | None:
    try:
        return urlsplit(url).password if url else None
    except ValueError:  # an unparsable URL has no password to hide
        return None


#: Shorter configured values would redact ordinary words.
MIN_SECRET_LENGTH = 6


class Redactor:
    """Masks secrets in a text (`redactor(text)`) or in every string of JSON-like data (`data`)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self._secrets = sorted(values, key=len, reverse=True)  # longest first: no partial leftovers

    @classmethod
    def for_settings(cls, settings: Settings) -> Redactor:
        return cls(secret_values(settings))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        for pattern in TOKEN_PATTERNS:
            text = pattern.sub(_keep_prefix, text)
        return text

    def data(self, value: Any) -> Any:
        return redact_data(self, value)


def redact_data(redact: Callable[[str], str], value: Any) -> Any:
    """`value` with every string in it passed through `redact` (dicts, lists and tuples are
    copied, other values returned as they are); dict keys are names, not content, and stay."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redact_data(redact, item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_data(redact, item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_data(redact, item) for item in value)
    return value


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def no_redaction(text: str) -> str:
    """The default where nothing was injected (tests of other concerns)."""
    return text
