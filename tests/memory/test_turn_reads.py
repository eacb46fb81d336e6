"""A turn's reads, sent together, give what each store's own read gives, on both engines:
the history after the latest summary, the daily logs of the days asked, the skills active
in the conversation, and the indexes the speaker sees (private notes only in a DM); and a
note another process writes shows in the next turn's indexes."""

from __future__ import annotations

from datetime import date
from typing import Any

from memory.policy.visibility import Viewer, visibility_for
from memory.stores.conversations import LogEntry
from memory.types import NoteDraft, Scope

TEAM = Scope.parse("team:slack/T1")
CHANNEL = Scope.parse("channel:slack/C1")
PRIYA = Scope.parse("user:slack/U1")
HISTORY = "slack/C1/"
DAYS = [date(2026, 12, 5), date(2026, 12, 4)]


async def _fill(stores: Any) -> None:
    for scope, topic, private in [
        (CHANNEL, "deploys", False),
        (TEAM, "oncall", False),
        (PRIYA, "standup", False),
        (PRIYA, "salary", True),
    ]:
        await stores.notes.save(
            NoteDraft(scope, topic, f"about {topic}", private=private), actor="t"
        )
    for text, summary in [("first question", "s0"), ("second question", "s1")]:
        await stores.log.append(HISTORY, [LogEntry("user", text, "user:slack/U1", "priya")])
        last = (await stores.log.fetch_history(HISTORY)).entries[-1]
        await stores.log.compact(HISTORY, last.id, summary)  # the latest summary counts
    await stores.log.append(HISTORY, [LogEntry("user", "after the summary", "user:slack/U1", "p")])
    await stores.daily_logs.write(HISTORY, DAYS[1], "yesterday's log")
    await stores.daily_logs.write(HISTORY, date(2026, 12, 1), "an older log")
    await stores.active_skills.activate("slack/C1", "deploy-check", "abc123", "user:slack/U1")
    await stores.active_skills.activate("slack/C2", "other", "def456", "user:slack/U1")


async def test_a_turns_reads_together_match_each_stores_own(engine_stores: Any) -> None:
    await _fill(engine_stores)
    for viewer in (Viewer(PRIYA, CHANNEL, TEAM), Viewer(PRIYA, None, TEAM)):
        visibility = visibility_for(viewer)
        reading = await engine_stores.turn_reads.fetch(HISTORY, "slack/C1", DAYS, visibility)
        assert reading.history == await engine_stores.log.fetch_history(HISTORY)
        assert reading.history.summary == "s1"
        assert [e.content for e in reading.history.entries] == ["after the summary"]
        assert reading.daily_logs == {DAYS[1]: "yesterday's log"}
        assert reading.active_skills == {"deploy-check": "abc123"}
        assert reading.indexes == await engine_stores.notes.indexes_for(visibility)
        lines = "\n".join(line for index in reading.indexes for line in index.lines)
        in_dm = viewer.channel is None
        assert "oncall" in lines and "standup" in lines
        assert ("deploys" in lines) != in_dm  # the channel's note, in the channel only
        assert ("salary" in lines) == in_dm  # private: the DM only


async def test_a_note_written_here_or_by_another_process_shows_in_the_next_turns_indexes(
    engine_stores: Any, open_again: Any
) -> None:
    await _fill(engine_stores)
    visibility = visibility_for(Viewer(PRIYA, CHANNEL, TEAM))

    async def index_lines() -> str:
        reading = await engine_stores.turn_reads.fetch(HISTORY, "slack/C1", DAYS, visibility)
        return "\n".join(line for index in reading.indexes for line in index.lines)

    assert "rollback" not in await index_lines()
    other = await open_again()
    await other.notes.save(NoteDraft(CHANNEL, "rollback", "about rollback"), actor="cli")
    assert "rollback" in await index_lines()
    await engine_stores.notes.save(NoteDraft(CHANNEL, "canary", "about canaries"), actor="t")
    assert "canary" in await index_lines()
