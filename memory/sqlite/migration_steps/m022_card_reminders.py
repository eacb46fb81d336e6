"""Migration 22: when a waiting card's approvers were reminded of it, so each card is
reminded of once, by one replica; cards already waiting count as reminded."""

SQL = """
    ALTER TABLE proposals ADD COLUMN reminded_at TEXT;
    UPDATE proposals SET reminded_at = created_at;
    """
