"""Write a variant of a case file whose instructions name the top-level definition that holds the bug.

Why: the held-out cases describe bugs by symptom, so focus (which needs a named definition) rarely
engages on them. Issue 16's refusals came from the other shape, a multi-function module with repeated
imports and the function named in backticks: this variant runs the same modules through that path
(focus, then the merge back). The bug's place is where `before` and `after` first differ.

    python benchmarks/named_variant.py benchmarks/cases/heldout_bugfix.jsonl OUT.jsonl
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

TOP = re.compile(r"^(?:async\s+)?(?:def|class)\s+(\w+)")


def enclosing(before: str, after: str) -> str | None:
    """The top-level def/class of `before` around its first line that the fix changes."""
    old = before.splitlines()
    ops = difflib.SequenceMatcher(None, old, after.splitlines(), autojunk=False).get_opcodes()
    first = next((i1 for tag, i1, _, _, _ in ops if tag != "equal"), None)
    if first is None:
        return None
    for line in reversed(old[:first + 1]):
        m = TOP.match(line)
        if m:
            return m.group(1)
        if line and not line[0].isspace() and not line.startswith(("@", "#")):
            return None  # a top-level statement, not inside a definition
    return None


def main(src: Path, out: Path) -> None:
    rows = []
    for line in src.read_text().splitlines():
        case = json.loads(line)
        name = enclosing(case["before"], case["after"])
        if name is None:
            continue
        case = case | {"id": case["id"] + "_named", "instruction": f"Fix the bug in `{name}`: {case['instruction']}"}
        rows.append(json.dumps(case))
    out.write_text("\n".join(rows) + "\n")
    print(f"{len(rows)} cases -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
