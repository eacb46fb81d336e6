"""Migration 18, SQLite's 18 on PostgreSQL: the running lorebot processes of this
database, each with its heartbeat and whether it leads."""

SQL = """
        CREATE TABLE replicas (
            id text PRIMARY KEY,
            host text NOT NULL,
            pid integer NOT NULL,
            role text NOT NULL CHECK (role IN ('leader', 'standby')),
            started_at timestamptz NOT NULL,
            heartbeat_at timestamptz NOT NULL
        );
        """
