"""Migration 15: a person's message as the model read it, with what was recalled for it,
so the next turns send it again as it was and the model's cache of the prompt holds."""

SQL = """
    ALTER TABLE messages ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
    """
