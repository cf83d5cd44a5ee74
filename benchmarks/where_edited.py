"""Where each mode's edits landed: the file left as it was, changed where the gold fix changes it, or changed
only elsewhere.

Why: tests passed and exact match say whether an edit is right, not whether the model looked in the right
place, nor whether it changed anything at all: a wrong edit at the fix's lines and a file handed back as it
was both fail the tests, for different reasons that training the span selector (issue 13) must tell apart.
A run's outputs are read for it here (nothing is decoded):

    python -m editllm.bench.where_edited benchmarks/results/RUN --cases benchmarks/cases/heldout_bugfix.jsonl

For the outputs that carry a program (copy mode), a second table reads the programs themselves against the
gold one (`grammar.program.oracle` over the lines copy mode shows, its focus applied): how many hold an idle gen
span (one that writes its lines as they were: `grammar.program.idle_copy`), and how far the first copy's last
line is from the gold program's, which is where the first edit goes.
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


DISTANCES = ("same", "1 off", "2-3 off", "further")


def program_misses(cases: dict[str, dict], outputs: list[dict]) -> dict[str, Counter]:
    """Per mode, its programs (outputs with one) tallied: "idle gen" (holds an idle gen span), and the first
    copy's last line against the gold program's (DISTANCES; 0 when a program begins with a gen)."""
    from editllm.editor.focus import copy_view
    from editllm.grammar.program import Copy, idle_copy, oracle, parse, split_lines

    counts: dict[str, Counter] = {}
    for out in outputs:
        case = cases.get(out["id"])
        if case is None or case.get("after") is None or not out.get("program"):
            continue
        shown, after, _ = copy_view(case["before"], case["after"], case["instruction"])
        ops, gold = parse(out["program"]), oracle(shown, after)
        c = counts.setdefault(out["mode"], Counter())
        c["programs"] += 1
        c["idle gen"] += idle_copy(ops, split_lines(shown)) is not None
        off = abs((ops[0].j if isinstance(ops[0], Copy) else 0) - (gold[0].j if isinstance(gold[0], Copy) else 0))
        c[DISTANCES[0 if off == 0 else 1 if off == 1 else 2 if off <= 3 else 3]] += 1
    return counts


def program_table(counts: dict[str, Counter]) -> str:
    """A Markdown table: a row per mode, its programs with an idle gen span, and the first copies' distances."""
    rows = ["| mode | programs | with an idle gen span | first copy ends: " + " | ".join(DISTANCES) + " |",
            "|---|---|---|" + "---|" * len(DISTANCES)]
    rows += [f"| {mode} | {c['programs']} | {c['idle gen']} | " + " | ".join(str(c[d]) for d in DISTANCES) + " |"
             for mode, c in counts.items()]
    return "\n".join(rows) + "\n"


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
    programs = program_misses(cases, outputs)
    if programs:
        print("\n" + program_table(programs), end="")


if __name__ == "__main__":
    main()
