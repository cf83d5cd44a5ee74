"""Probe: prose quality levers (issue 19) on the prose bench, one model load for every variant.

A variant is a prose wording (`editor.prose.WORDINGS`, or `code` for the code wording used before) and
optional levers: `+chunks` (`editor.prosefocus` splits a long file into parts edited one by one),
`+guard` (`editor.prose.spelling_only`: a spelling request keeps only spelling-shaped changes),
`+hints` (`editor.spelling`: a spelling request names the words a spell checker flags), `+alts` (each
flagged word named with the known words one edit away) and `+words` (spelling focus: the model sees
only the lines of the flagged words, `editor.prosefocus.spelling_parts`). `code` alone is the editor as
it was before issue 19's levers.
Levers are tuned on the prose cases that are not held out (`--set tuning`) and confirmed once on the
held-out ones (`--set heldout`); each variant's report goes to OUT/VARIANT (report.md, results.json).

    python benchmarks/prose_probe.py --variants code,every-line+guard --set tuning --kind prose-typo --out DIR
    python benchmarks/prose_probe.py --rescore --out DIR   # recorded texts, with the guard after the fact
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from editllm.bench.cases import CASES_DIR, load_cases
from editllm.bench.report import write_report
from editllm.bench.reuse import run_settings
from editllm.bench.runner import run_bench
from editllm.editor import prose, spelling
from editllm.editor.edit import EditOptions
from editllm.editor.models import load_model


def apply_variant(variant: str) -> None:
    """Switch the editor to `variant` (`WORDING[+chunks]`) in this process."""
    name, *extras = variant.split("+")
    prose.WORDING = None if name == "code" else name
    if name != "code" and name not in prose.WORDINGS:
        raise SystemExit(f"unknown wording {name!r}; choose code or one of {', '.join(prose.WORDINGS)}")
    if set(extras) - {"chunks", "guard", "hints", "alts", "words"}:
        raise SystemExit(f"unknown lever in {variant!r}; choose chunks, guard, hints, alts, words")
    prose.CHUNKS = "chunks" in extras  # read by editor.prosefocus
    prose.GUARD = "guard" in extras  # read by editor.prose.guard
    prose.HINTS = "hints" in extras  # read by editor.prompt (editor.spelling)
    prose.WORDS = "words" in extras  # read by editor.prosefocus
    spelling.ALTERNATIVES = "alts" in extras  # read by editor.spelling.hint


def rescore(folder: Path) -> None:
    """Each recorded variant's prose metrics as run, and with the guard applied after the fact (the same
    `prose.guard` the editor applies to a whole-file edit): the guard measured without a model."""
    from editllm.bench.cases import load_cases as load
    from editllm.bench.runner import prose_quality

    cases = {c.id: c for c in load([CASES_DIR / "prose.jsonl"], ["prose"])}
    prose.GUARD = True
    for path in sorted(folder.glob("*/records.jsonl")):
        recs = [json.loads(line) for line in path.read_text().splitlines()]
        for guarded in (False, True):
            rows = []
            for r in recs:
                c = cases[r["id"]]
                text = prose.guard(c.path, c.before, r["text"], c.instruction) if guarded else r["text"]
                rows.append(prose_quality(c, text) | {"exact": text == c.after,  # no prose edit adds or drops a line
                                                      "line_count_changed": text.count("\n") != c.before.count("\n")})
            if not rows:
                continue
            n, total = len(rows), {k: sum(x[k] for x in rows) for k in rows[0]}
            print(f"{path.parent.name}{' +guard (after the fact)' if guarded else ''}: {n} cases, mean recall "
                  f"{total['recall'] / n:.3f}, mean precision {total['precision'] / n:.3f}, unrequested lines "
                  f"{total['unrequested_lines']}, exact {total['exact']}, files with lines gained or lost "
                  f"{total['line_count_changed']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="code,every-line", help="comma list of WORDING[+chunks]")
    ap.add_argument("--set", choices=("tuning", "heldout", "all"), default="tuning")
    ap.add_argument("--kind", action="append", help="case kinds (default: every prose kind)")
    ap.add_argument("--ids", help="comma list of case ids, run in this order (after --set and --kind)")
    ap.add_argument("--mode", default="spec")
    ap.add_argument("--engine", default="llamacpp")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rescore", action="store_true", help="only score OUT's recorded texts, with and without "
                    "the spelling guard")
    ap.add_argument("--threads", type=int, help="llama.cpp threads (default: every core). On a machine many jobs "
                    "share, 1 avoids the threads waiting for each other at every step")
    args = ap.parse_args()
    if args.rescore:
        return rescore(args.out)
    cases = load_cases([CASES_DIR / "prose.jsonl"], args.kind or ["prose"])
    if args.set != "all":
        cases = [c for c in cases if c.heldout == (args.set == "heldout")]
    if args.ids:  # in the order given (smallest first gets the most pairs done on a busy machine)
        by_id = {c.id: c for c in cases}
        cases = [by_id[i] for i in args.ids.split(",") if i in by_id]
    if args.threads:
        os.cpu_count = lambda: args.threads  # the llama.cpp engine sizes its thread pool from it
    lm = load_model("bundled:1.5b", engine=args.engine)
    opts = EditOptions()
    for variant in args.variants.split(","):
        apply_variant(variant)
        folder = args.out / variant.replace("+", "_")
        folder.mkdir(parents=True, exist_ok=True)

        def show(rec: dict, v: str = variant, folder: Path = folder) -> None:  # as it comes: a run may be cut short
            print(v, rec["id"], rec["seconds"], rec.get("recall"), rec.get("precision"),
                  rec.get("unrequested_lines"), rec["exact_match"], rec["error"], file=sys.stderr, flush=True)
            with open(folder / "records.jsonl", "a") as f:
                f.write(json.dumps(rec) + "\n")

        results = run_bench(lm, cases, [args.mode], opts, on_record=show)
        results["engine"] = lm.engine_name
        results["settings"] = run_settings(lm, opts, None) | {"prose_variant": variant, "set": args.set}
        report = write_report(results, folder)
        (folder / "variant.json").write_text(json.dumps(
            {"variant": variant, "set": args.set, "cases": [c.id for c in cases]}, indent=1))
        print(f"## {variant} ({args.set})\n\n{report}", flush=True)


if __name__ == "__main__":
    main()
