"""Migration 17: an import is one change set of many notes: its row has no scope or topic,
and an item per note it created or updated keeps the note's state before it (NULL: none).
SQLite changes a CHECK by rebuilding the table, here with the same columns and rows."""

SQL = """
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
    """
