"""The threads the Slack adapter answers without a mention: the latest it replied in."""

from __future__ import annotations

from adapters.slack.events import BotThreads


def test_the_oldest_thread_is_forgotten_first_and_a_new_reply_refreshes_one() -> None:
    threads = BotThreads(size=2)
    threads.add("C1", "1.0")
    threads.add("C1", "2.0")
    threads.add("C1", "1.0")  # replied there again: now the latest
    threads.add("C2", "3.0")
    assert ("C1", "1.0") in threads and ("C2", "3.0") in threads
    assert ("C1", "2.0") not in threads
