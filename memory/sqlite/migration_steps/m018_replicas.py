"""Migration 18: the running lorebot processes of this database, each with its heartbeat
and whether it leads (on PostgreSQL, several replicas; on SQLite, the one daemon)."""

SQL = """
    CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('leader', 'standby')),
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
    );
    """
