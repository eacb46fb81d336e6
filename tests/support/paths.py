"""Where the repository is, for tests that run lorebot or pytest in a subprocess."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
