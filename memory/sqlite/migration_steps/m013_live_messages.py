"""Migration 13: a conversation's own messages (not imported history), latest first, for
its dialogue history."""

SQL = """
    CREATE INDEX messages_live ON messages (conversation, id) WHERE source_id IS NULL;
    """
