"""Console sessions (app/persistence/console_sessions.py) on nx-27017, with a clock the test moves."""

from __future__ import annotations

from typing import Any

import pytest

from app.persistence.console_sessions import TOUCH_SECONDS, ConsoleSessions, SessionLimits
from tests.support import FakeClock

TOKEN = "console-test-token"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_800_000_000.0)


@pytest.fixture
async def sessions(mongo_db: Any, clock: FakeClock) -> ConsoleSessions:
    store = ConsoleSessions(mongo_db["sessions"], SessionLimits(lifetime_seconds=3600, idle_seconds=600), clock=clock)
    await store.setup()
    return store


async def test_each_sign_in_is_a_new_random_session_stored_only_as_a_digest(sessions: ConsoleSessions,
                                                                            mongo_db: Any) -> None:
    first, second = await sessions.create(TOKEN), await sessions.create(TOKEN)
    assert first != second and len(first) >= 40
    stored = [doc async for doc in mongo_db["sessions"].find({})]
    assert len(stored) == 2 and all(first not in str(doc) and TOKEN not in str(doc) for doc in stored)
    assert await sessions.valid(first, TOKEN) and await sessions.valid(second, TOKEN)
    assert not await sessions.valid("made-up-session-id", TOKEN)


async def test_sign_out_and_token_rotation_end_a_session(sessions: ConsoleSessions) -> None:
    kept, revoked = await sessions.create(TOKEN), await sessions.create(TOKEN)
    await sessions.revoke(revoked)
    assert not await sessions.valid(revoked, TOKEN) and await sessions.valid(kept, TOKEN)
    assert not await sessions.valid(kept, "the-rotated-token")
    # Refused, not deleted: in a rolling rotation a pod still on the old token must not end the new sessions
    rotated = await sessions.create("the-rotated-token")
    assert not await sessions.valid(rotated, TOKEN) and await sessions.valid(rotated, "the-rotated-token")


async def test_expired_sessions_are_swept_at_a_sign_in(sessions: ConsoleSessions, mongo_db: Any,
                                                       clock: FakeClock) -> None:
    await sessions.create(TOKEN)
    clock.now += 601  # idle past its 10 minutes
    await sessions.create(TOKEN)
    assert await mongo_db["sessions"].count_documents({}) == 1


async def test_a_session_ends_when_idle_and_at_its_expiry_however_active(sessions: ConsoleSessions,
                                                                         clock: FakeClock) -> None:
    idle, active = await sessions.create(TOKEN), await sessions.create(TOKEN)
    for _ in range(5):  # 5 × 9 min: the active one is used, and its last use written, every 9 minutes
        clock.now += 540
        assert await sessions.valid(active, TOKEN)
    assert not await sessions.valid(idle, TOKEN)  # unused for 45 minutes > 10
    clock.now += 540
    assert await sessions.valid(active, TOKEN)  # 54 minutes after sign-in
    clock.now += 420
    assert not await sessions.valid(active, TOKEN)  # 61 minutes: past its hour, though used 7 minutes ago


async def test_last_use_is_written_at_most_once_a_minute(sessions: ConsoleSessions, mongo_db: Any,
                                                          clock: FakeClock) -> None:
    session = await sessions.create(TOKEN)
    created = (await mongo_db["sessions"].find_one({}))["last_seen"]
    clock.now += TOUCH_SECONDS / 2
    assert await sessions.valid(session, TOKEN)
    assert (await mongo_db["sessions"].find_one({}))["last_seen"] == created
    clock.now += TOUCH_SECONDS
    assert await sessions.valid(session, TOKEN)
    assert (await mongo_db["sessions"].find_one({}))["last_seen"] == clock.now
