"""Provider health per tier (the ONLINE / OFFLINE / API_ERROR modes of the earlier designs, and BUSY).

OFFLINE: no API key, or the endpoint cannot be reached (connection refused, DNS failure, a
connect that timed out); API_ERROR: reachable but failing (bad key, 5xx), or skipped by the
circuit breaker; BUSY: a local model server that accepted the connection but did not answer
within the probe's timeout — llama-cpp-python's server (the embedded model's fallback) answers one
request at a time, so while it generates for one client every other request, the model listing
included, waits; llama.cpp's `llama-server` (the embedded default) answers the listing from its
HTTP threads while its slots generate, so it stays ONLINE however busy. BUSY is up: a
dispatch is not refused, a call waits for its turn (`app/llm/provider.py`), and it is cached only
briefly (`busy_cache_seconds`). A cloud endpoint that connects and does not answer stays OFFLINE.
Checks are a model listing, not a completion — cheap, and cached, because /health is polled.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import httpx

from app.llm.endpoint import connect_seconds
from app.llm.provider import LOCAL_PROVIDERS, LitellmProvider
from app.llm.tiers import Tier, TierSpec

Mode = Literal["ONLINE", "OFFLINE", "API_ERROR", "BUSY"]
#: Where a tier is probed: provider, API base and key (the three local tiers share one).
Endpoint = tuple[str, str, str | None]
DEFAULT_BASES = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1",
                 "gemini": "https://generativelanguage.googleapis.com"}


class ProviderHealth:
    def __init__(self, provider: LitellmProvider, http: httpx.AsyncClient, *, cache_seconds: float = 60.0,
                 timeout: float = 3.0, busy_cache_seconds: float = 5.0) -> None:
        self._provider = provider
        self._http = http
        self._cache_seconds = cache_seconds
        self._busy_cache_seconds = min(busy_cache_seconds, cache_seconds)
        """A busy server is free again when its generation ends: its state is reused only briefly."""
        self._timeout = timeout
        self._probed: dict[Endpoint, tuple[float, tuple[Mode, str]]] = {}
        """Each endpoint's last probe and when it was made (the three local tiers share one)."""
        self._locks: dict[Endpoint, asyncio.Lock] = {}

    async def report(self) -> dict[str, dict[str, Any]]:
        """Every tier's state; one probe per distinct endpoint, reused for `cache_seconds`."""
        specs = self._provider.specs
        endpoints = {self._endpoint(spec): spec for spec in specs.values()}
        results = dict(zip(endpoints, await asyncio.gather(*(self._checked(e, s) for e, s in endpoints.items())),
                           strict=True))
        return self._with_speeds({tier.value: self._entry(spec, *results[self._endpoint(spec)])
                                  for tier, spec in specs.items()})

    def warnings(self) -> list[str]:
        """What the operator must know though every tier answers: a callable cloud tier without a
        price, whose calls the dollar budget cannot count (`app/llm/prices.py`)."""
        return self._provider.prices.warnings()

    async def tier(self, tier: Tier) -> dict[str, Any]:
        """One tier's state, probing only its own endpoint: a dispatch asks about the local model
        without waiting for a cloud provider's answer."""
        spec = self._provider.specs[tier]
        return self._with_speeds({tier.value: self._entry(spec, *await self._checked(self._endpoint(spec), spec))})[
            tier.value]

    def _entry(self, spec: TierSpec, mode: Mode, detail: str) -> dict[str, Any]:
        if mode == "ONLINE" and self._provider.breaker.is_open(spec.provider):
            mode, detail = "API_ERROR", "skipped after repeated failures"
        return {"mode": mode, "model": spec.model, "provider": spec.provider, "detail": detail,
                "price": self._provider.prices.describe()[spec.tier.value]}

    async def _checked(self, endpoint: Endpoint, spec: TierSpec) -> tuple[Mode, str]:
        """The endpoint's state, probed at most once per `cache_seconds` (one probe at a time)."""
        async with self._locks.setdefault(endpoint, asyncio.Lock()):
            cached = self._probed.get(endpoint)
            if cached is not None and time.monotonic() - cached[0] < (
                    self._busy_cache_seconds if cached[1][0] == "BUSY" else self._cache_seconds):
                return cached[1]
            result = await self._probe(spec)
            self._probed[endpoint] = (time.monotonic(), result)
            return result

    def _with_speeds(self, report: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each tier with its model's generation speed as this pod measured it (null before the
        first call): how long a planned answer of the local model will take."""
        speeds = self._provider.tokens_per_second
        return {tier: entry | {"tokens_per_second": round(speeds[entry["model"]], 1)
                               if entry["model"] in speeds else None}
                for tier, entry in report.items()}

    @staticmethod
    def _endpoint(spec: TierSpec) -> Endpoint:
        return (spec.provider, spec.api_base or DEFAULT_BASES.get(spec.provider, ""), spec.api_key)

    async def _probe(self, spec: TierSpec) -> tuple[Mode, str]:
        if spec.provider not in ("ollama", "local") and not spec.api_key:
            return "OFFLINE", f"no API key for {spec.provider}"
        base = (spec.api_base or DEFAULT_BASES.get(spec.provider, "")).rstrip("/")
        url, headers, params = self._request(spec.provider, base, spec.api_key or "")
        try:
            response = await self._http.get(url, headers=headers, params=params, timeout=self._timeout)
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout) or spec.provider not in LOCAL_PROVIDERS:
                return "OFFLINE", f"unreachable: {type(exc).__name__}"
            return await self._busy_or_offline(base, exc)
        except httpx.HTTPError as exc:
            return "OFFLINE", f"unreachable: {type(exc).__name__}"
        if response.status_code == 200:
            return "ONLINE", ""
        return "API_ERROR", f"HTTP {response.status_code} from {url}"

    async def _busy_or_offline(self, base: str, timeout: httpx.TimeoutException) -> tuple[Mode, str]:
        """A local server that took the probe's connection and did not answer: BUSY if it still
        accepts a bare TCP connection (measured), OFFLINE if not."""
        try:
            seconds = await connect_seconds(base, timeout=min(self._timeout, 1.0))
        except (OSError, TimeoutError, ValueError) as exc:
            return "OFFLINE", f"unreachable: {type(timeout).__name__}, then {type(exc).__name__}"
        return "BUSY", (f"connected in {seconds * 1000:.0f} ms, no answer in {self._timeout:.1f} s: "
                        "serving another request")

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
