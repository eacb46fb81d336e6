"""Fake servers that real client libraries talk to over the wire in tests."""
