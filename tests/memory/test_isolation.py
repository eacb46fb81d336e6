"""Property test: a conversation reads exactly what DESIGN.md's table allows, never more.

The rule is restated here independently of `memory.policy.visibility`, so a bug there fails.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import NoteDraft, Scope, Viewer, visibility_for
from memory.stores.stores import StoreOptions
from tests.support.engines import open_engine

USERS = [Scope.parse(f"user:slack/U{n}") for n in range(3)]
CHANNELS = [Scope.parse(f"channel:slack/C{n}") for n in range(3)]
TEAMS = [Scope.parse(f"team:slack/T{n}") for n in range(2)]
WORDS = ["deploy", "staging", "vim", "lunch", "oncall", "backup"]


@dataclass(frozen=True)
class Spec:
    scope: Scope
    topic: str
    word: str
    private: bool


notes = st.lists(
    st.builds(
        Spec,
        scope=st.sampled_from(USERS + CHANNELS + TEAMS),
        topic=st.sampled_from(["alpha", "beta", "gamma", "delta"]),
        word=st.sampled_from(WORDS),
        private=st.booleans(),
    ),
    max_size=25,
    unique_by=lambda s: (s.scope, s.topic),
)
viewers = st.builds(
    Viewer,
    speaker=st.sampled_from(USERS),
    channel=st.none() | st.sampled_from(CHANNELS),
    team=st.none() | st.sampled_from(TEAMS),
)


def may_read(viewer: Viewer, scope: Scope, private: bool) -> bool:
    if scope == viewer.team:
        return True
    if viewer.channel is None:  # a DM
        return scope == viewer.speaker
    return scope == viewer.channel or (scope == viewer.speaker and not private)


async def check(
    specs: list[Spec], viewer: Viewer, word: str, engine: str, where: str | Path
) -> None:
    stores = await open_engine(engine, ":memory:" if engine == "sqlite" else where, StoreOptions())
    try:
        store = stores.notes
        if engine == "postgresql":  # one database for every example: emptied first
            async with stores.db.write() as conn:
                await conn.execute("TRUNCATE notes, note_changes, note_change_items")
        for spec in specs:
            await store.save(
                NoteDraft(spec.scope, spec.topic, f"about {spec.word}", private=spec.private),
                actor="prop",
            )
        visibility = visibility_for(viewer)
        readable = {(s.scope, s.topic) for s in specs if may_read(viewer, s.scope, s.private)}

        hits = await store.search(word, visibility, k=100)
        expected = {
            key
            for key in readable
            if any(s.word == word for s in specs if (s.scope, s.topic) == key)
        }
        assert {(h.note.scope, h.note.topic) for h in hits} == expected

        visible = await store.list_visible(visibility)
        assert {(n.scope, n.topic) for n in visible} == readable

        for topic in ["alpha", "beta", "gamma", "delta"]:
            for note in await store.read(visibility, topic):
                assert (note.scope, note.topic) in readable

        shown = {
            (index.scope, line.split(":", 1)[0][2:])
            for index in await store.indexes_for(visibility)
            for line in index.lines
        }
        assert shown == readable
    finally:
        await stores.close()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(specs=notes, viewer=viewers, word=st.sampled_from(WORDS))
def test_reads_never_cross_scopes(
    specs: list[Spec], viewer: Viewer, word: str, engine: str, database_at: str | Path
) -> None:
    asyncio.run(check(specs, viewer, word, engine, database_at))
