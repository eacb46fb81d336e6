"""Migration 7: a card is found by its channel and message id (a Slack ts is unique only
within its channel); a decision's follow-up (editing the card, resuming the waiting turn)
is claimed once, so a decision made from the shell is finished by the daemon."""

SQL = """
    ALTER TABLE proposals ADD COLUMN card_channel_id TEXT;
    UPDATE proposals SET card_channel_id = json_extract(conversation_json, '$.channel_id')
        WHERE card_message_id IS NOT NULL;
    DROP INDEX proposals_by_card;
    CREATE UNIQUE INDEX proposals_by_card
        ON proposals (platform, card_channel_id, card_message_id)
        WHERE card_message_id IS NOT NULL;
    ALTER TABLE proposals ADD COLUMN followed_up_at TEXT;
    UPDATE proposals SET followed_up_at = coalesce(decided_at, created_at)
        WHERE status != 'pending';
    CREATE INDEX proposals_to_follow_up ON proposals (id)
        WHERE followed_up_at IS NULL AND status != 'pending';
    """
