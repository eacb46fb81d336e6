"""Migration 3: the skills active in a conversation, by content hash, so an edited skill
asks again."""

SQL = """
    CREATE TABLE skill_activations (
        conversation TEXT NOT NULL,
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        activated_by TEXT NOT NULL,
        activated_at TEXT NOT NULL,
        PRIMARY KEY (conversation, name)
    ) WITHOUT ROWID;
    """
