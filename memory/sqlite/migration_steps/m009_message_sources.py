"""Migration 9: messages imported from Slack and Discord exports carry their platform
message id, so importing the same export again adds nothing (one copy per scope: a DM
between two people is stored once for each of them). A message's neighbours are found by
conversation and scope: through the scope index alone, finding them walked every message
of the channel's other threads."""

SQL = """
    ALTER TABLE messages ADD COLUMN source_id TEXT;
    CREATE UNIQUE INDEX messages_by_source ON messages (source_id, scope)
        WHERE source_id IS NOT NULL;
    CREATE INDEX messages_by_thread ON messages (conversation, scope, id);
    """
