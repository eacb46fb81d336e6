"""Migration 10: a message is indexed with the message after it too (found by the answer
it got), each neighbour in a column of its own; the index is rebuilt from the old one."""

SQL = """
    ALTER TABLE messages_fts RENAME TO messages_fts_old;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        content, context_before, context_after, author, scope_keys,
        tokenize = 'porter unicode61'
    );
    INSERT INTO messages_fts (rowid, content, context_before, context_after, author, scope_keys)
    SELECT o.rowid, o.content, o.context, coalesce(substr((SELECT n.content FROM messages AS n
        WHERE n.conversation = m.conversation AND n.scope = m.scope AND n.id > m.id
        ORDER BY n.id LIMIT 1), 1, 400),
        ''), o.author, o.scope_keys
    FROM messages_fts_old AS o JOIN messages AS m ON m.id = o.rowid;
    DROP TABLE messages_fts_old;
    """
