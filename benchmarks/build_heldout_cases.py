"""Build `cases/heldout_bugfix.jsonl` from the hand-written sources in `heldout/`.

These cases measure generalisation: their modules, bugs and instructions were written by hand, not
by `training/mutate.py` or any other generator of ours, and training refuses every function in them
(`training/data.py`, `eval_fingerprints`). Each case is checked before it is written: the correct
module passes all its tests, the buggy one fails at least one (tests run in a subprocess with a
timeout, by the bench's own test runner).

    python benchmarks/build_heldout_cases.py [--out cases/heldout_bugfix.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path

from editllm.bench.sandbox import Limits, run_checks

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "heldout"
KIND = "heldout-bugfix"


def tests_of(test_source: str) -> list[dict]:
    """One bench test per `test_<entry>(candidate)` function: the whole test file, then `check` bound to it."""
    names = re.findall(r"^def test_(\w+)\(candidate\):", test_source, re.M)
    return [{"test": f"{test_source}\n\ncheck = test_{name}\n", "entry_point": name} for name in names]


def inject(after: str, bug: list[dict]) -> str:
    """The buggy module: each `old` snippet (found exactly once in the correct module) becomes `new`."""
    before = after
    for edit in bug:
        if after.count(edit["old"]) != 1:
            raise ValueError(f"bug snippet not found exactly once: {edit['old']!r}")
        before = before.replace(edit["old"], edit["new"])
    return before


def build(sources: Path = SOURCES, timeout: float = 30.0) -> list[dict]:
    """Every case of `sources/cases.toml`, verified; raises on a case whose tests do not tell the versions apart."""
    manifest = tomllib.loads((sources / "cases.toml").read_text(encoding="utf-8"))
    cases = []
    for n, spec in enumerate(manifest["case"], 1):
        module = sources / spec["module"]
        after = module.read_text(encoding="utf-8")
        before = inject(after, spec["bug"])
        tests = tests_of((sources / f"{module.stem}_test.py").read_text(encoding="utf-8"))
        good, bad = run_checks([after, before], tests, Limits(wall_seconds=timeout))
        if not tests or not all(good) or all(bad):
            raise ValueError(f"{module.name}: correct module passes {good}, buggy one {bad}")
        cases.append({"id": f"heldout_bugfix_{n:02d}", "kind": KIND, "heldout": True, "path": module.name,
                      "instruction": spec["instruction"], "before": before, "after": after, "tests": tests,
                      "lines": before.count("\n")})
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "cases" / "heldout_bugfix.jsonl")
    args = parser.parse_args()
    cases = build()
    args.out.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
