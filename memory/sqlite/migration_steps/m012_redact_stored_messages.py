"""Migration 12, which runs Python over the stored rows: credentials in messages stored
before lorebot redacted them are redacted, and the messages indexed again."""

from __future__ import annotations

import hashlib

import aiosqlite

_BATCH = 2000


# Migration 12 indexes messages as the message index stood on the day it was written
# (schema 10): the statement is frozen here, so a later change of the live index code
# cannot change what an old database's upgrade does.
_NEIGHBOUR_CHARS_12 = 400
_NEIGHBOUR_12 = (
    "coalesce(substr((SELECT o.content FROM messages AS o WHERE o.conversation = "
    "m.conversation AND o.scope = m.scope AND o.id {op} m.id ORDER BY o.id {order} LIMIT 1), "
    "1, ?), '')"
)
_INDEX_12 = (
    "INSERT INTO messages_fts (rowid, content, context_before, context_after, author, "
    f"scope_keys) SELECT m.id, m.content, {_NEIGHBOUR_12.format(op='<', order='DESC')}, "
    f"{_NEIGHBOUR_12.format(op='>', order='')}, m.author_name, ? FROM messages AS m "
    "WHERE m.conversation = ? AND m.scope = ?"
)


def _private_key_12(scope: str) -> str:
    """The FTS scope key of a message's (stored, canonical) scope, as schema 10 wrote it."""
    return "k" + hashlib.blake2b(scope.encode(), digest_size=10).hexdigest()


async def redact_stored_messages(conn: aiosqlite.Connection) -> None:
    """12: redact credentials in the messages and summaries stored before lorebot redacted
    them, and index the messages again from the redacted text when any changed. The
    scrubber is the live one on purpose: a newer one only ever hides more."""
    from memory.policy.redaction import redact

    changed = 0
    for table in ("messages", "summaries"):
        last = 0
        while True:
            async with conn.execute(
                f"SELECT id, content FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
                (last, _BATCH),
            ) as cursor:
                rows = list(await cursor.fetchall())
            if not rows:
                break
            last = rows[-1][0]
            updates = [(clean, i) for i, text in rows if (clean := redact(text)) != text]
            await conn.executemany(f"UPDATE {table} SET content = ? WHERE id = ?", updates)
            changed += len(updates) if table == "messages" else 0
    if not changed:
        return
    # A message's text is also in its neighbours' rows: index every conversation anew.
    await conn.execute("DELETE FROM messages_fts")
    async with conn.execute(
        "SELECT DISTINCT conversation, scope FROM messages WHERE scope != ''"
    ) as cursor:
        conversations = list(await cursor.fetchall())
    for conversation, scope in conversations:
        chars = _NEIGHBOUR_CHARS_12
        await conn.execute(_INDEX_12, (chars, chars, _private_key_12(scope), conversation, scope))
