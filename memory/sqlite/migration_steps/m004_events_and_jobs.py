"""Migration 4: captured write actions, scheduled job runs, daily logs and extracted
patterns."""

SQL = """
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
    """
