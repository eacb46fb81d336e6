"""Migration 22: reminders of waiting cards. When a card's approvers were reminded of it
(once, by one replica; cards already waiting count as reminded), and the DMs that
reminded them, which take the card's buttons and are finished with the card."""

SQL = """
    ALTER TABLE proposals ADD COLUMN reminded_at TEXT;
    UPDATE proposals SET reminded_at = created_at;
    CREATE TABLE card_reminders (
        proposal_id INTEGER NOT NULL REFERENCES proposals(id) ON DELETE CASCADE,
        channel_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (proposal_id, channel_id, message_id)
    );
    """
