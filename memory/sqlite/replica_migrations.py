"""The SQLite migrations from 18 on, which replicas brought: the running processes, the
inbox and its conversation claims, and the claim's fencing token (numbered after the
first 17 in `memory.sqlite.migrations`)."""

REPLICA_MIGRATIONS: tuple[str, ...] = (
    # 18: the running lorebot processes of this database, each with its heartbeat and
    # whether it leads (on PostgreSQL, several replicas; on SQLite, the one daemon).
    """
    CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('leader', 'standby')),
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
    );
    """,
    # 19: the events taken and not finished, and who handles each conversation's.
    """
    CREATE TABLE inbox (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,
        conversation TEXT NOT NULL, key TEXT NOT NULL, payload_json TEXT NOT NULL,
        taken_at TEXT NOT NULL, started_at TEXT);
    CREATE INDEX inbox_by_conversation ON inbox (conversation, id);
    CREATE TABLE conversation_claims (conversation TEXT PRIMARY KEY,
        holder TEXT NOT NULL, until TEXT NOT NULL) WITHOUT ROWID;
    """,
    # 20: each claim's fencing token, new whenever the claim changes hands: an effect of
    # a turn is recorded only while its replica holds the claim under the same token.
    """
    ALTER TABLE conversation_claims ADD COLUMN token INTEGER NOT NULL DEFAULT 0;
    """,
)
