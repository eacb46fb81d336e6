"""Numbered schema migrations, applied in order at open; `PRAGMA user_version` is the count.

Most are SQL scripts; one that must run Python over the stored rows is an async function
of the connection, run in the same kind of transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiosqlite

from memory.sqlite.redacting_migration import redact_stored_messages
from memory.sqlite.replica_migrations import REPLICA_MIGRATIONS

Step = Callable[[aiosqlite.Connection], Awaitable[None]]

MIGRATIONS: tuple[str | Step, ...] = (
    # 1: notes, their FTS5 index and their change sets.
    """
    CREATE TABLE notes (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        topic TEXT NOT NULL,
        summary TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        category TEXT NOT NULL CHECK (category IN
            ('fact', 'preference', 'convention', 'decision', 'pattern', 'reflection')),
        private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
        pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
        author TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        confidence REAL NOT NULL DEFAULT 1.0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_access TEXT,
        expires_at TEXT,
        scope_keys TEXT NOT NULL,
        UNIQUE (scope, topic)
    );
    CREATE INDEX notes_by_scope_recency ON notes (scope, pinned DESC, updated_at DESC, id DESC);
    CREATE INDEX notes_by_expiry ON notes (expires_at) WHERE expires_at IS NOT NULL;

    CREATE VIRTUAL TABLE notes_fts USING fts5 (
        topic, summary, body, scope_keys,
        content = 'notes', content_rowid = 'id', tokenize = 'porter unicode61'
    );
    CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys)
        VALUES (new.id, new.topic, new.summary, new.body, new.scope_keys);
    END;
    CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, topic, summary, body, scope_keys)
        VALUES ('delete', old.id, old.topic, old.summary, old.body, old.scope_keys);
    END;
    CREATE TRIGGER notes_au AFTER UPDATE OF topic, summary, body, scope_keys ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, topic, summary, body, scope_keys)
        VALUES ('delete', old.id, old.topic, old.summary, old.body, old.scope_keys);
        INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys)
        VALUES (new.id, new.topic, new.summary, new.body, new.scope_keys);
    END;

    CREATE TABLE note_changes (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        topic TEXT NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('create', 'update', 'forget', 'revert')),
        before_json TEXT,
        after_json TEXT,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        proposal_id INTEGER,
        created_at TEXT NOT NULL,
        reverted_by INTEGER REFERENCES note_changes (id)
    );
    CREATE INDEX note_changes_by_actor ON note_changes (actor, id DESC);
    CREATE INDEX note_changes_by_note ON note_changes (scope, topic, id DESC);
    """,
    # 2: proposals awaiting a decision, seen platform events, conversation history.
    """
    CREATE TABLE proposals (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'failed')),
        requester TEXT NOT NULL,
        platform TEXT NOT NULL,
        conversation_json TEXT NOT NULL,
        card_message_id TEXT,
        payload_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        decided_by TEXT,
        decided_at TEXT,
        outcome TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX proposals_by_card ON proposals (platform, card_message_id)
        WHERE card_message_id IS NOT NULL;
    CREATE INDEX proposals_by_status ON proposals (status, expires_at);

    CREATE TABLE seen_events (key TEXT PRIMARY KEY, seen_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX seen_events_by_time ON seen_events (seen_at);

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        author TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages (conversation, id);

    CREATE TABLE summaries (
        id INTEGER PRIMARY KEY,
        conversation TEXT NOT NULL,
        up_to_message_id INTEGER NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX summaries_by_conversation ON summaries (conversation, id);
    """,
    # 3: skills active in a conversation, by content hash, so an edited skill asks again.
    """
    CREATE TABLE skill_activations (
        conversation TEXT NOT NULL,
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        activated_by TEXT NOT NULL,
        activated_at TEXT NOT NULL,
        PRIMARY KEY (conversation, name)
    ) WITHOUT ROWID;
    """,
    # 4: captured write actions, scheduled job runs, daily logs, extracted patterns.
    """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        action TEXT NOT NULL,
        arguments_json TEXT NOT NULL,
        outcome TEXT NOT NULL,
        conversation_json TEXT NOT NULL,
        channel_scope TEXT,
        person TEXT NOT NULL,
        created_at TEXT NOT NULL,
        content_hash TEXT NOT NULL UNIQUE
    );
    CREATE INDEX events_by_action ON events (action, created_at);

    CREATE TABLE job_runs (
        id INTEGER PRIMARY KEY,
        job TEXT NOT NULL,
        scope TEXT NOT NULL,
        period TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL
            CHECK (status IN ('running', 'succeeded', 'failed', 'skipped')),
        error TEXT NOT NULL DEFAULT '',
        attempts INTEGER NOT NULL DEFAULT 1,
        UNIQUE (job, scope, period)
    );
    CREATE INDEX job_runs_by_job ON job_runs (job, scope, id DESC);

    CREATE TABLE daily_logs (
        conversation TEXT NOT NULL,
        day TEXT NOT NULL,
        content TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (conversation, day)
    ) WITHOUT ROWID;

    CREATE TABLE patterns (
        action TEXT NOT NULL,
        channel_scope TEXT NOT NULL,
        proposal_id INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (action, channel_scope)
    ) WITHOUT ROWID;
    """,
    # 5: new notes are indexed by the store, in bulk for imports: a per-row trigger made
    # imports four times slower.
    """
    DROP TRIGGER notes_ai;
    """,
    # 6: vectors. The model in use and what it made, a queue of notes and messages whose
    # vector is missing or stale (filled only once an embedding model is set), and a word
    # index of messages: each with the message before it as context and its author's name.
    """
    CREATE TABLE embedding_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE embed_queue (
        kind TEXT NOT NULL CHECK (kind IN ('note', 'message')),
        item_id INTEGER NOT NULL,
        PRIMARY KEY (kind, item_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER notes_embed_ai AFTER INSERT ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', new.id);
    END;
    CREATE TRIGGER notes_embed_au AFTER UPDATE OF scope, topic, summary, body, private ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', new.id);
    END;
    CREATE TRIGGER notes_embed_ad AFTER DELETE ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', old.id);
    END;

    ALTER TABLE messages ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN author_name TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN link TEXT NOT NULL DEFAULT '';
    CREATE INDEX messages_by_scope ON messages (scope, id);
    CREATE TRIGGER messages_embed_ai AFTER INSERT ON messages
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('message', new.id);
    END;
    -- Older messages: a channel thread's scope is its channel; a DM's is its person.
    UPDATE messages SET scope = CASE
        WHEN conversation LIKE 'dm:%' THEN coalesce((SELECT m.author FROM messages AS m
            WHERE m.conversation = messages.conversation AND m.role = 'user'
            AND m.author LIKE 'user:%' ORDER BY m.id LIMIT 1), '')
        ELSE 'channel:' || substr(conversation, 1, instr(conversation, '/')
            + instr(substr(conversation, instr(conversation, '/') + 1), '/') - 1)
        END;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        content, context, author, scope_keys, tokenize = 'porter unicode61'
    );
    """,
    # 7: a card is found by its channel and message id (a Slack ts is unique only within
    # its channel); a decision's follow-up (editing the card, resuming the waiting turn)
    # is claimed once, so a decision made from the shell is finished by the daemon.
    """
    ALTER TABLE proposals ADD COLUMN card_channel_id TEXT;
    UPDATE proposals SET card_channel_id = json_extract(conversation_json, '$.channel_id')
        WHERE card_message_id IS NOT NULL;
    DROP INDEX proposals_by_card;
    CREATE UNIQUE INDEX proposals_by_card
        ON proposals (platform, card_channel_id, card_message_id)
        WHERE card_message_id IS NOT NULL;
    ALTER TABLE proposals ADD COLUMN followed_up_at TEXT;
    UPDATE proposals SET followed_up_at = coalesce(decided_at, created_at)
        WHERE status != 'pending';
    CREATE INDEX proposals_to_follow_up ON proposals (id)
        WHERE followed_up_at IS NULL AND status != 'pending';
    """,
    # 8: actions (MCP tool calls and skill scripts): the audit of every run, decided or
    # not, and the tools an admin allowed without a card in one channel.
    """
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        proposal_id INTEGER,
        tool TEXT NOT NULL,
        arguments_json TEXT NOT NULL,
        requester TEXT NOT NULL,
        channel_scope TEXT,
        conversation_json TEXT NOT NULL,
        approval TEXT NOT NULL,
        decided_by TEXT,
        outcome TEXT NOT NULL DEFAULT 'pending' CHECK (outcome IN
            ('pending', 'running', 'ok', 'error', 'unknown', 'declined', 'expired')),
        output TEXT NOT NULL DEFAULT '',
        started_at TEXT,
        duration_ms INTEGER,
        created_at TEXT NOT NULL
    );
    CREATE INDEX actions_by_time ON actions (created_at);
    CREATE INDEX actions_by_channel ON actions (channel_scope, created_at);
    CREATE UNIQUE INDEX actions_by_proposal ON actions (proposal_id)
        WHERE proposal_id IS NOT NULL;

    CREATE TABLE action_allowances (
        id INTEGER PRIMARY KEY,
        channel_scope TEXT NOT NULL,
        tool TEXT NOT NULL,
        granted_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (channel_scope, tool)
    );
    """,
    # 9: messages imported from Slack and Discord exports carry their platform message id,
    # so importing the same export again adds nothing (one copy per scope: a DM between
    # two people is stored once for each of them). A message's neighbours are found by
    # conversation and scope: through the scope index alone, finding them walked every
    # message of the channel's other threads.
    """
    ALTER TABLE messages ADD COLUMN source_id TEXT;
    CREATE UNIQUE INDEX messages_by_source ON messages (source_id, scope)
        WHERE source_id IS NOT NULL;
    CREATE INDEX messages_by_thread ON messages (conversation, scope, id);
    """,
    # 10: a message is indexed with the message after it too (found by the answer it got),
    # each neighbour in a column of its own; the index is rebuilt from the old one.
    """
    ALTER TABLE messages_fts RENAME TO messages_fts_old;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        content, context_before, context_after, author, scope_keys,
        tokenize = 'porter unicode61'
    );
    INSERT INTO messages_fts (rowid, content, context_before, context_after, author, scope_keys)
    SELECT o.rowid, o.content, o.context, coalesce(substr((SELECT n.content FROM messages AS n
        WHERE n.conversation = m.conversation AND n.scope = m.scope AND n.id > m.id
        ORDER BY n.id LIMIT 1), 1, 400),
        ''), o.author, o.scope_keys
    FROM messages_fts_old AS o JOIN messages AS m ON m.id = o.rowid;
    DROP TABLE messages_fts_old;
    """,
    # 11: replies being streamed, so a reply a crash cut short is finished with a notice
    # at the next start.
    """
    CREATE TABLE live_replies (
        id INTEGER PRIMARY KEY,
        platform TEXT NOT NULL,
        conversation_json TEXT NOT NULL,
        message_id TEXT NOT NULL,
        shown TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (platform, message_id)
    );
    """,
    # 12: credentials in messages stored before they were redacted.
    redact_stored_messages,
    # 13: a conversation's own messages (not imported history), latest first, for its
    # dialogue history.
    """
    CREATE INDEX messages_live ON messages (conversation, id) WHERE source_id IS NULL;
    """,
    # 14: an allowance holds for the server it was granted for (its command and arguments,
    # or URL): one granted before this was known allows nothing until granted again.
    """
    ALTER TABLE action_allowances ADD COLUMN server_id TEXT NOT NULL DEFAULT '';
    """,
    # 15: a person's message as the model read it, with what was recalled for it, so the
    # next turns send it again as it was and the model's cache of the prompt holds.
    """
    ALTER TABLE messages ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
    """,
    # 16: the model's slips in turns (empty answers, repeated calls, …), for `doctor`.
    """
    CREATE TABLE model_slips (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        conversation TEXT NOT NULL
    );
    CREATE INDEX model_slips_at ON model_slips (at);
    """,
    # 17: an import is one change set of many notes: its row has no scope or topic, and an
    # item per note it created or updated keeps the note's state before it (NULL: none).
    # SQLite changes a CHECK by rebuilding the table, here with the same columns and rows.
    """
    CREATE TABLE note_changes_17 (
        id INTEGER PRIMARY KEY,
        scope TEXT,
        topic TEXT,
        action TEXT NOT NULL
            CHECK (action IN ('create', 'update', 'forget', 'revert', 'import')),
        before_json TEXT,
        after_json TEXT,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        proposal_id INTEGER,
        created_at TEXT NOT NULL,
        reverted_by INTEGER REFERENCES note_changes_17 (id)
    );
    INSERT INTO note_changes_17 SELECT id, scope, topic, action, before_json, after_json, actor,
        reason, proposal_id, created_at, reverted_by FROM note_changes;
    DROP TABLE note_changes;
    ALTER TABLE note_changes_17 RENAME TO note_changes;
    CREATE INDEX note_changes_by_actor ON note_changes (actor, id DESC);
    CREATE INDEX note_changes_by_note ON note_changes (scope, topic, id DESC);
    CREATE TABLE note_change_items (
        change_id INTEGER NOT NULL REFERENCES note_changes (id),
        scope TEXT NOT NULL,
        topic TEXT NOT NULL,
        before_json TEXT,
        PRIMARY KEY (change_id, scope, topic)
    ) WITHOUT ROWID;
    """,
    *REPLICA_MIGRATIONS,
)

SCHEMA_VERSION = len(MIGRATIONS)
