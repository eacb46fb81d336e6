"""What a turn suspended on a card keeps in its proposal: nothing that holds a credential,
its mistakes included (the exact arguments of its later calls wait in memory)."""

from __future__ import annotations

import json

from adapters.base import ConversationRef, UserRef
from bot.context.turn import make_context
from bot.core.turn_state import HeldCalls, Turn

OUR_TOKEN = "xoxb-2048-our-own-bot-token"


def test_a_suspended_turns_mistakes_are_kept_without_credentials() -> None:
    turn = Turn(
        [{"role": "user", "content": "restart web"}],
        mistakes=[
            'error: invalid arguments for deploy: {"password": "hunter2-Q7x"} is not a number',
            f"error: unknown tool called with {OUR_TOKEN}",
        ],
    )
    ctx = make_context(ConversationRef("test", "C1"), UserRef("test", "UALICE"), False)
    saved = json.dumps(turn.saved(ctx, "restart", HeldCalls([OUR_TOKEN])))
    assert "hunter2" not in saved and OUR_TOKEN not in saved
    assert '{\\"password\\": \\"[REDACTED]\\"} is not a number' in saved
