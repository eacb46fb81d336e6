"""Migration 1: notes, their FTS5 word index and their change sets."""

SQL = """
    CREATE TABLE notes (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        topic TEXT NOT NULL,
        summary TEXT NOT NULL,
        body TEXT NOT NULL DEFAULT '',
        category TEXT NOT NULL CHECK (category IN
            ('fact', 'preference', 'convention', 'decision', 'pattern', 'reflection')),
        private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
        pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
        author TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        confidence REAL NOT NULL DEFAULT 1.0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_access TEXT,
        expires_at TEXT,
        scope_keys TEXT NOT NULL,
        UNIQUE (scope, topic)
    );
    CREATE INDEX notes_by_scope_recency ON notes (scope, pinned DESC, updated_at DESC, id DESC);
    CREATE INDEX notes_by_expiry ON notes (expires_at) WHERE expires_at IS NOT NULL;

    CREATE VIRTUAL TABLE notes_fts USING fts5 (
        topic, summary, body, scope_keys,
        content = 'notes', content_rowid = 'id', tokenize = 'porter unicode61'
    );
    CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys)
        VALUES (new.id, new.topic, new.summary, new.body, new.scope_keys);
    END;
    CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, topic, summary, body, scope_keys)
        VALUES ('delete', old.id, old.topic, old.summary, old.body, old.scope_keys);
    END;
    CREATE TRIGGER notes_au AFTER UPDATE OF topic, summary, body, scope_keys ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, topic, summary, body, scope_keys)
        VALUES ('delete', old.id, old.topic, old.summary, old.body, old.scope_keys);
        INSERT INTO notes_fts (rowid, topic, summary, body, scope_keys)
        VALUES (new.id, new.topic, new.summary, new.body, new.scope_keys);
    END;

    CREATE TABLE note_changes (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        topic TEXT NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('create', 'update', 'forget', 'revert')),
        before_json TEXT,
        after_json TEXT,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        proposal_id INTEGER,
        created_at TEXT NOT NULL,
        reverted_by INTEGER REFERENCES note_changes (id)
    );
    CREATE INDEX note_changes_by_actor ON note_changes (actor, id DESC);
    CREATE INDEX note_changes_by_note ON note_changes (scope, topic, id DESC);
    """
