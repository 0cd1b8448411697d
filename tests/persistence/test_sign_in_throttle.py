"""The console's sign-in throttle (app/persistence/sign_in_throttle.py) on nx-27017, with a clock the test moves."""

from __future__ import annotations

from typing import Any

import pytest

from app.persistence.sign_in_throttle import SignInThrottle, client_key
from tests.support import FakeClock

CLIENT = "192.0.2.7"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_015.0)


@pytest.fixture
async def throttle(mongo_db: Any, clock: FakeClock) -> SignInThrottle:
    made = SignInThrottle(mongo_db["attempts"], attempts=10, clock=clock)
    await made.setup()
    return made


async def test_the_eleventh_try_within_a_minute_is_refused_until_the_first_wrong_one_is_a_minute_old(
        throttle: SignInThrottle, clock: FakeClock) -> None:
    for _ in range(10):
        assert await throttle.refused_for(CLIENT) is None
        await throttle.wrong(CLIENT)
        clock.now += 3  # ten wrong tokens in 30 s
    assert await throttle.refused_for(CLIENT) == 30  # the first of them leaves the minute in 30 s
    assert await throttle.refused_for("192.0.2.8") is None  # another client
    clock.now += 29.5
    assert await throttle.refused_for(CLIENT) == 1
    clock.now += 0.5
    assert await throttle.refused_for(CLIENT) is None  # nine in the last minute: one more try
    await throttle.wrong(CLIENT)
    assert await throttle.refused_for(CLIENT) == 3


async def test_a_clock_minute_boundary_does_not_reset_the_count(throttle: SignInThrottle, clock: FakeClock) -> None:
    clock.now = 1_800_000_055.0  # 5 s before a full minute
    for _ in range(10):
        await throttle.wrong(CLIENT)
        clock.now += 1
    assert await throttle.refused_for(CLIENT) == 50


async def test_the_count_is_shared_by_every_replica(mongo_db: Any, throttle: SignInThrottle, clock: FakeClock) -> None:
    other_pod = SignInThrottle(mongo_db["attempts"], attempts=10, clock=clock)
    for n in range(10):
        await (throttle if n % 2 else other_pod).wrong(CLIENT)
    assert await throttle.refused_for(CLIENT) is not None and await other_pod.refused_for(CLIENT) is not None
    assert len((await mongo_db["attempts"].find_one({}))["failures"]) == 10  # bounded: the last `attempts` only


async def test_old_attempts_are_swept(mongo_db: Any, throttle: SignInThrottle, clock: FakeClock) -> None:
    await throttle.wrong(CLIENT)
    clock.now += 61
    await throttle.wrong("192.0.2.8")
    assert [doc["_id"] async for doc in mongo_db["attempts"].find({})] == ["192.0.2.8"]


def test_a_client_is_its_address_and_an_ipv6_client_its_64() -> None:
    assert client_key("192.0.2.7") == "192.0.2.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_key(None) == "unknown" and client_key("testclient") == "testclient"
