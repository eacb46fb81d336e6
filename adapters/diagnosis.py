"""What platform checks report to `lorebot doctor`: a pass/fail line and a fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Finding:
    ok: bool
    name: str
    detail: str
    fix: str = ""
