"""A program that runs one lorebot command and reports the modules it imported, for the
tests of what a cold process loads."""

from __future__ import annotations

# Prints the top-level packages a command imported, after running it in this process.
PROBE = """
import json, sys
from bot.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    sys.stdout.flush()
    print("\\nIMPORTED " + json.dumps(sorted(sys.modules)))
sys.exit(code)
"""
