"""Where each mode's edits landed: the file left as it was, changed where the gold fix changes it, or changed
only elsewhere.

Why: tests passed and exact match say whether an edit is right, not whether the model looked in the right
place, nor whether it changed anything at all: a wrong edit at the fix's lines and a file handed back as it
was both fail the tests, for different reasons that training the span selector (issue 13) must tell apart.
A run's outputs are read for it here (nothing is decoded):

    python -m editllm.bench.where_edited benchmarks/results/RUN --cases benchmarks/cases/heldout_bugfix.jsonl
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections import Counter
from pathlib import Path

PLACES = ("unchanged", "at the fix", "elsewhere", "no output")


def changed_lines(before: str, after: str) -> set[int]:
    """The lines of `before` (0-based) that `after` replaces or deletes; an insertion counts as the line it goes
    before, so an added line near the fix meets it."""
    old, new = before.splitlines(), after.splitlines()
    lines: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            lines.update(range(i1, max(i2, i1 + 1)))
    return lines


def place(before: str, gold: str, text: str | None) -> str:
    """One of PLACES for an edit's `text` of the file `before`, whose fix is `gold`."""
    if text is None:
        return "no output"
    if text == before:
        return "unchanged"
    return "at the fix" if changed_lines(before, text) & changed_lines(before, gold) else "elsewhere"


def tally(cases: dict[str, dict], outputs: list[dict]) -> dict[str, Counter]:
    """Per mode, how many of its outputs (`outputs.jsonl` records of cases in `cases`) landed where."""
    counts: dict[str, Counter] = {}
    for out in outputs:
        case = cases.get(out["id"])
        if case is None or case.get("after") is None:
            continue
        counts.setdefault(out["mode"], Counter())[place(case["before"], case["after"], out.get("text"))] += 1
    return counts


def table(counts: dict[str, Counter]) -> str:
    """A Markdown table: a row per mode, a column per place."""
    rows = ["| mode | " + " | ".join(PLACES) + " |", "|---|" + "---|" * len(PLACES)]
    rows += [f"| {mode} | " + " | ".join(str(c[p]) for p in PLACES) + " |" for mode, c in counts.items()]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a bench run's folder (its outputs.jsonl)")
    ap.add_argument("--cases", type=Path, action="append", required=True, help="the cases' JSONL (repeatable)")
    args = ap.parse_args(argv)
    cases = {}
    for path in args.cases:
        for line in path.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                cases[case["id"]] = case
    outputs = [json.loads(line) for line in (args.run / "outputs.jsonl").read_text().splitlines() if line.strip()]
    print(table(tally(cases, outputs)), end="")


if __name__ == "__main__":
    main()
