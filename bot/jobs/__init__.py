"""Scheduled jobs: reflection, pattern extraction, digests and maintenance."""
