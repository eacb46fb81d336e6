"""The errors adapters raise, apart from the contract so that reporting them loads nothing
else (the CLI's error handling imports them at every start)."""

from __future__ import annotations


class AdapterError(Exception):
    """Root of the errors adapters raise."""


class AdapterConfigError(AdapterError):
    """The platform refused lorebot's setup (bad token, missing scope or intent); the
    message names the setting to fix and is shown to the operator as is."""


class DeliveryError(AdapterError):
    """The platform refused a call; the adapter already logged what to fix."""
