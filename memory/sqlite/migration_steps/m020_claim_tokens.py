"""Migration 20: each claim's fencing token, new whenever the claim changes hands: an
effect of a turn is recorded only while its replica holds the claim under the same token."""

SQL = """
    ALTER TABLE conversation_claims ADD COLUMN token INTEGER NOT NULL DEFAULT 0;
    """
