"""Write the REALTALK evaluation set in `benchmarks/data/realtalk_eval/` from a copy of the
corpus, deterministically.

REALTALK (Lee et al., 2025, github.com/danny911kr/REALTALK) is ten real messaging-app
conversations between two people each, over 16-21 days, with memory probing questions
written by its authors, each with the ids of the turns that answer it. Only its own
conversations are read (`data/Chat_*.json`); the LoCoMo files shipped beside them in
`data/locomo/` are never opened.

Every turn becomes a note as `benchmarks/public_eval.py` imports it: the summary is the
first 120 characters of the turn's text, the body "speaker on date: text". Each question
keeps its evidence ids that name a turn of its conversation (a few in the source name
turns that are not there, or several ids in one string); questions left with none are
dropped. Conversations with an odd number are the first half (where weights may be
chosen), the even ones the second (test) half.

    python benchmarks/make_realtalk_eval.py PATH   # PATH: a checkout or a bare git mirror
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "data" / "realtalk_eval"
SUMMARY_CHARS = 120
_CHAT = re.compile(r"^data/Chat_(\d+)_[^/]+\.json$")
_SESSION = re.compile(r"^session_(\d+)$")
_TURN_ID = re.compile(r"D\d+:\d+")


class Corpus:
    """The corpus's files, read from a work tree or, when PATH is a bare git mirror, from
    its HEAD commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = not (path / "data").is_dir()

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.path), *args], check=True, capture_output=True, text=True
        )
        return done.stdout

    def commit(self) -> str:
        if self.bare:
            return self.git("rev-parse", "HEAD").strip()
        try:
            done = subprocess.run(
                ["git", "-C", str(self.path), "rev-parse", "HEAD"],
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError):
            return "unknown"
        return done.stdout.strip()

    def chats(self) -> list[tuple[int, str]]:
        """(number, path) of every REALTALK conversation file, by number."""
        if self.bare:
            names = self.git("ls-tree", "--name-only", "HEAD", "data/").split()
        else:
            names = [f"data/{p.name}" for p in (self.path / "data").iterdir()]
        found = [(int(m.group(1)), name) for name in names if (m := _CHAT.match(name))]
        return sorted(found)

    def read(self, name: str) -> dict[str, Any]:
        text = self.git("show", f"HEAD:{name}") if self.bare else (self.path / name).read_text()
        data: dict[str, Any] = json.loads(text)
        return data


def day_of(stamp: str) -> str:
    """'29.12.2023, 22:42:04' -> '2023-12-29'."""
    day, month, year = (int(part) for part in stamp.split(",")[0].strip().split("."))
    return date(year, month, day).isoformat()


def convert(number: int, chat: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The turns (as notes) and questions of one conversation."""
    conversation = f"rt{number:02d}"
    half = "dev" if number % 2 else "test"
    sessions = sorted((int(m.group(1)), key) for key in chat if (m := _SESSION.match(key)))
    turns: list[dict[str, Any]] = []
    for session, key in sessions:
        for turn in chat[key]:
            text = " ".join(turn["clean_text"].split())
            if not text:
                continue
            turns.append(
                {
                    "id": f"{conversation}:{turn['dia_id']}",
                    "conversation": conversation,
                    "half": half,
                    "session": session,
                    "speaker": turn["speaker"],
                    "summary": text[:SUMMARY_CHARS],
                    "body": f"{turn['speaker']} on {day_of(turn['date_time'])}: {text}",
                }
            )
    present = {t["id"] for t in turns}
    questions: list[dict[str, Any]] = []
    for qa in chat["qa"]:
        ids = _TURN_ID.findall(" ".join(qa.get("evidence", [])))
        evidence = list(dict.fromkeys(f"{conversation}:{i}" for i in ids))
        evidence = [e for e in evidence if e in present]
        if not evidence:
            continue
        questions.append(
            {
                "id": f"{conversation}-q{len(questions) + 1:03d}",
                "conversation": conversation,
                "half": half,
                "category": qa.get("category"),
                "question": qa["question"],
                "answer": str(qa.get("answer", "")),
                "evidence": evidence,
            }
        )
    return turns, questions


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="REALTALK: a checkout or a bare git mirror")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    corpus = Corpus(args.corpus)
    turns: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    asked = 0
    for number, name in corpus.chats():
        chat = corpus.read(name)
        asked += len(chat["qa"])
        more_turns, more_questions = convert(number, chat)
        turns += more_turns
        questions += more_questions
    if not turns:
        print(f"no data/Chat_*.json found in {args.corpus}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "turns.jsonl", turns)
    write_jsonl(args.out / "questions.jsonl", questions)
    source = {
        "corpus": "REALTALK",
        "repository": "https://github.com/danny911kr/REALTALK",
        "commit": corpus.commit(),
        "turns": len(turns),
        "questions": len(questions),
        "questions_dropped": asked - len(questions),
    }
    (args.out / "source.json").write_text(json.dumps(source, indent=2) + "\n")
    print(json.dumps(source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
