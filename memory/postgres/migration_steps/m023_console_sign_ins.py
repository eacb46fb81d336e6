"""Migration 23, SQLite's 23 on PostgreSQL: the web console's one-time links and sessions,
each kept by the SHA-256 of its token."""

SQL = """
    CREATE TABLE console_links (
        token_hash text PRIMARY KEY,
        user_id text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
    );
    CREATE TABLE console_sessions (
        token_hash text PRIMARY KEY,
        user_id text NOT NULL,
        via text NOT NULL,
        csrf text NOT NULL,
        scopes_json text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        ended_at timestamptz
    );
    CREATE INDEX console_links_by_expiry ON console_links(expires_at);
    CREATE INDEX console_sessions_by_expiry ON console_sessions(expires_at);
    """
