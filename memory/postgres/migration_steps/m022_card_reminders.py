"""Migration 22, SQLite's 22 on PostgreSQL: when a waiting card's approvers were reminded
of it (cards already waiting count as reminded), and the DMs that reminded them."""

SQL = """
    ALTER TABLE proposals ADD COLUMN reminded_at timestamptz;
    UPDATE proposals SET reminded_at = created_at;
    CREATE TABLE card_reminders (
        proposal_id bigint NOT NULL REFERENCES proposals(id) ON DELETE CASCADE,
        channel_id text NOT NULL,
        message_id text NOT NULL,
        PRIMARY KEY (proposal_id, channel_id, message_id)
    );
    """
