"""Provider health per tier (the ONLINE / OFFLINE / API_ERROR modes of the earlier designs).

OFFLINE: no API key, or the endpoint cannot be reached; API_ERROR: reachable but failing (bad
key, 5xx), or skipped by the circuit breaker. Checks are a model listing, not a completion —
cheap, and cached, because /health is polled.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import httpx

from app.llm.provider import LitellmProvider
from app.llm.tiers import Tier, TierSpec

Mode = Literal["ONLINE", "OFFLINE", "API_ERROR"]
DEFAULT_BASES = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1",
                 "gemini": "https://generativelanguage.googleapis.com"}


class ProviderHealth:
    def __init__(self, provider: LitellmProvider, http: httpx.AsyncClient, *, cache_seconds: float = 60.0,
                 timeout: float = 3.0) -> None:
        self._provider = provider
        self._http = http
        self._cache_seconds = cache_seconds
        self._timeout = timeout
        self._cached: tuple[float, dict[str, dict[str, Any]]] | None = None
        self._lock = asyncio.Lock()

    async def report(self) -> dict[str, dict[str, Any]]:
        async with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < self._cache_seconds:
                return self._with_speeds(self._cached[1])
            specs = self._provider.specs
            # One probe per distinct endpoint: the three local tiers share one server.
            endpoints = {self._endpoint(spec): spec for spec in specs.values()}
            results = dict(zip(endpoints, await asyncio.gather(*(self._probe(s) for s in endpoints.values())),
                               strict=True))
            report = {}
            for tier, spec in specs.items():
                mode, detail = results[self._endpoint(spec)]
                if mode == "ONLINE" and self._provider.breaker.is_open(spec.provider):
                    mode, detail = "API_ERROR", "skipped after repeated failures"
                report[tier.value] = {"mode": mode, "model": spec.model, "provider": spec.provider, "detail": detail}
            self._cached = (time.monotonic(), report)
        return self._with_speeds(report)

    def _with_speeds(self, report: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each tier with its model's generation speed as this pod measured it (null before the
        first call): how long a planned answer of the local model will take."""
        speeds = self._provider.tokens_per_second
        return {tier: entry | {"tokens_per_second": round(speeds[entry["model"]], 1)
                               if entry["model"] in speeds else None}
                for tier, entry in report.items()}

    async def mode(self, tier: Tier) -> Mode:
        mode: Mode = (await self.report())[tier.value]["mode"]
        return mode

    @staticmethod
    def _endpoint(spec: TierSpec) -> tuple[str, str, str | None]:
        return (spec.provider, spec.api_base or DEFAULT_BASES.get(spec.provider, ""), spec.api_key)

    async def _probe(self, spec: TierSpec) -> tuple[Mode, str]:
        if spec.provider not in ("ollama", "local") and not spec.api_key:
            return "OFFLINE", f"no API key for {spec.provider}"
        base = (spec.api_base or DEFAULT_BASES.get(spec.provider, "")).rstrip("/")
        url, headers, params = self._request(spec.provider, base, spec.api_key or "")
        try:
            response = await self._http.get(url, headers=headers, params=params, timeout=self._timeout)
        except httpx.HTTPError as exc:
            return "OFFLINE", f"unreachable: {type(exc).__name__}"
        if response.status_code == 200:
            return "ONLINE", ""
        return "API_ERROR", f"HTTP {response.status_code} from {url}"

    @staticmethod
    def _request(provider: str, base: str, key: str) -> tuple[str, dict[str, str], dict[str, str]]:
        match provider:
            case "ollama":
                return f"{base}/api/tags", {}, {}
            case "anthropic":
                return f"{base}/v1/models", {"x-api-key": key, "anthropic-version": "2023-06-01"}, {}
            case "gemini":
                return f"{base}/v1beta/models", {}, {"key": key}
            case _:  # openai and OpenAI-compatible local servers
                return f"{base}/models", {"Authorization": f"Bearer {key}"}, {}
