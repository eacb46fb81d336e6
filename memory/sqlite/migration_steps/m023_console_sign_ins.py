"""Migration 23: the web console's sign-ins. One-time links that `lorebot console link`
prints, and the sessions people hold; each kept by the SHA-256 of its token, never the
token, so a copy of the database signs nobody in."""

SQL = """
    CREATE TABLE console_links (
        token_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT
    );
    CREATE TABLE console_sessions (
        token_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        via TEXT NOT NULL,
        csrf TEXT NOT NULL,
        scopes_json TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        ended_at TEXT
    );
    CREATE INDEX console_links_by_expiry ON console_links(expires_at);
    CREATE INDEX console_sessions_by_expiry ON console_sessions(expires_at);
    """
