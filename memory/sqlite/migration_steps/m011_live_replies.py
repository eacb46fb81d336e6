"""Migration 11: replies being streamed, so a reply a crash cut short is finished with a
notice at the next start."""

SQL = """
    CREATE TABLE live_replies (
        id INTEGER PRIMARY KEY,
        platform TEXT NOT NULL,
        conversation_json TEXT NOT NULL,
        message_id TEXT NOT NULL,
        shown TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (platform, message_id)
    );
    """
