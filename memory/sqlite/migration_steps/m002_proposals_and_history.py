"""Migration 2: proposals awaiting a decision, the platform events already seen, and
conversation history (messages and their summaries)."""

SQL = """
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
    """
