"""Migration 8: actions (MCP tool calls and skill scripts): the audit of every run, decided
or not, and the tools an admin allowed without a card in one channel."""

SQL = """
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
    """
