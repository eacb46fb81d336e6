"""Migration 6: vectors. The model in use and what it made, a queue of notes and messages
whose vector is missing or stale (filled only once an embedding model is set), and a word
index of messages: each with the message before it as context and its author's name."""

SQL = """
    CREATE TABLE embedding_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE embed_queue (
        kind TEXT NOT NULL CHECK (kind IN ('note', 'message')),
        item_id INTEGER NOT NULL,
        PRIMARY KEY (kind, item_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER notes_embed_ai AFTER INSERT ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', new.id);
    END;
    CREATE TRIGGER notes_embed_au AFTER UPDATE OF scope, topic, summary, body, private ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', new.id);
    END;
    CREATE TRIGGER notes_embed_ad AFTER DELETE ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('note', old.id);
    END;

    ALTER TABLE messages ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN author_name TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN link TEXT NOT NULL DEFAULT '';
    CREATE INDEX messages_by_scope ON messages (scope, id);
    CREATE TRIGGER messages_embed_ai AFTER INSERT ON messages
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT OR IGNORE INTO embed_queue (kind, item_id) VALUES ('message', new.id);
    END;
    -- Older messages: a channel thread's scope is its channel; a DM's is its person.
    UPDATE messages SET scope = CASE
        WHEN conversation LIKE 'dm:%' THEN coalesce((SELECT m.author FROM messages AS m
            WHERE m.conversation = messages.conversation AND m.role = 'user'
            AND m.author LIKE 'user:%' ORDER BY m.id LIMIT 1), '')
        ELSE 'channel:' || substr(conversation, 1, instr(conversation, '/')
            + instr(substr(conversation, instr(conversation, '/') + 1), '/') - 1)
        END;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (
        content, context, author, scope_keys, tokenize = 'porter unicode61'
    );
    """
