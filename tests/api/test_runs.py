"""`GET /runs`: the list of recent runs (an extension; its content is covered end to end in
tests/integration/test_cli.py)."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize("limit", ["0", "201", "many"])
def test_runs_rejects_a_limit_outside_1_to_200(api: httpx.Client, limit: str) -> None:
    response = api.get("/runs", params={"limit": limit})
    assert response.status_code == 422 and "limit" in response.json()["detail"]


def test_runs_answers_a_list_within_the_limit(api: httpx.Client) -> None:
    response = api.get("/runs", params={"limit": 1})
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["runs"] and len(body["runs"]) <= 1
