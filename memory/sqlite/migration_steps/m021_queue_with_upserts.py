"""Migration 21: the triggers that queue a note or a message for its vector skip one that
waits already with `ON CONFLICT DO NOTHING`: a note's save is an upsert, whose conflict
policy overrode the triggers' `INSERT OR IGNORE`, so saving a note still waiting for its
vector failed."""

SQL = """
    DROP TRIGGER notes_embed_ai;
    DROP TRIGGER notes_embed_au;
    DROP TRIGGER notes_embed_ad;
    DROP TRIGGER messages_embed_ai;
    CREATE TRIGGER notes_embed_ai AFTER INSERT ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT INTO embed_queue (kind, item_id) VALUES ('note', new.id) ON CONFLICT DO NOTHING;
    END;
    CREATE TRIGGER notes_embed_au AFTER UPDATE OF scope, topic, summary, body, private ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT INTO embed_queue (kind, item_id) VALUES ('note', new.id) ON CONFLICT DO NOTHING;
    END;
    CREATE TRIGGER notes_embed_ad AFTER DELETE ON notes
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT INTO embed_queue (kind, item_id) VALUES ('note', old.id) ON CONFLICT DO NOTHING;
    END;
    CREATE TRIGGER messages_embed_ai AFTER INSERT ON messages
    WHEN EXISTS (SELECT 1 FROM embedding_state WHERE key = 'model') BEGIN
        INSERT INTO embed_queue (kind, item_id) VALUES ('message', new.id)
        ON CONFLICT DO NOTHING;
    END;
    """
