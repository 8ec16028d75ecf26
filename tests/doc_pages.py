"""The commands the README and the docs pages show, read from their fenced blocks, so tests
run what a reader pastes (tests/docs/: test_install.py, test_quickstart.py, test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def section(page: Path, heading: str) -> str:
    """The text under `heading` (a whole heading line, e.g. `## Install`) up to the next
    heading of the same or a higher level."""
    text = page.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    assert f"\n{heading}\n" in f"\n{text}", f"{page.name} has no '{heading}' heading"
    body = f"\n{text}".split(f"\n{heading}\n", 1)[1]
    end = re.search(rf"^#{{1,{len(level)}}} ", body, re.M)
    # A '#' comment inside a code block is not a heading: cut only outside fences.
    while end and body[:end.start()].count("```") % 2:
        end = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(body, end.end())
    return body[:end.start()] if end else body


def bash_blocks(text: str) -> list[str]:
    """The fenced ```bash blocks of `text`, in order."""
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


def lines_of(block: str) -> list[str]:
    """The command lines of one bash block (blank lines dropped, continuations joined)."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def commands(text: str) -> list[str]:
    """The command lines of every bash block of `text`."""
    return [line for block in bash_blocks(text) for line in lines_of(block)]
