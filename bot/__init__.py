"""The lorebot daemon: configuration, command line, dispatcher, agent core, approvals, jobs."""

__version__ = "0.1.0"
