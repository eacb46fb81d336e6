"""The rules of memory that touch no database: visibility, redaction, note states."""
