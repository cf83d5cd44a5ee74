"""Prose edits against torch rewrite mode, paired in one process (issue 19's speed target).

Issue 19 asks prose edits to be ≥ 5× faster than rewrite mode on the torch engine (its correction:
rewrite on llama.cpp is itself capped near the lossless bound). The product's prose edit runs on the
engine `auto` picks on a CPU (llama.cpp), in spec mode with focus; rewrite mode is plain greedy decoding
of the whole file (`--no-focus`). `editllm bench` runs one engine per run, so this script loads both and
interleaves them case by case: the product's edit, rewrite, the product's edit again, ..., so that
whatever else the machine does falls on both. Rewrite of an 80-line README is minutes of CPU on torch:
`--rewrite-repeat` may be lower than `--repeat` (the report says how many runs each median has).

    python benchmarks/prose_speed.py --set heldout --kind prose-typo --out DIR [--repeat 3 --rewrite-repeat 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from editllm.bench.cases import CASES_DIR, Case, load_cases
from editllm.bench.runner import run_case_mode
from editllm.editor.edit import EditOptions
from editllm.editor.models import load_model

PRODUCT = "default"  # llama.cpp, spec, focus on: what `editllm fix` runs on a CPU
REWRITE = "torch-rewrite"  # torch, rewrite, focus off: the reference decoding of the whole file


def summarize(records: list[dict]) -> dict:
    """Per kind: cases, each side's total of per-case medians, the ratio, and quality of the product."""
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        by[(r["id"], r["side"])].append(r)
    kinds: dict[str, dict] = defaultdict(lambda: {"cases": 0, PRODUCT: 0.0, REWRITE: 0.0, "runs": {}})
    for (case, side), runs in sorted(by.items()):
        if any(r["error"] for r in runs) or not by.get((case, PRODUCT)) or not by.get((case, REWRITE)):
            continue
        k = kinds[runs[0]["kind"]]
        k[side] += statistics.median(r["seconds"] for r in runs)
        k["runs"][side] = len(runs)
        if side == PRODUCT:
            k["cases"] += 1
    for k in kinds.values():
        k["ratio"] = round(k[REWRITE] / k[PRODUCT], 2) if k[PRODUCT] else None
        k[PRODUCT], k[REWRITE] = round(k[PRODUCT], 1), round(k[REWRITE], 1)
    return dict(kinds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("tuning", "heldout", "all"), default="heldout")
    ap.add_argument("--kind", action="append", help="case kinds (default: every prose kind)")
    ap.add_argument("--ids", help="comma list of case ids (after --set and --kind)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the product's edit per case")
    ap.add_argument("--rewrite-repeat", type=int, default=1, help="runs of torch rewrite per case")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cases = load_cases([CASES_DIR / "prose.jsonl"], args.kind or ["prose"])
    if args.set != "all":
        cases = [c for c in cases if c.heldout == (args.set == "heldout")]
    if args.ids:
        cases = [c for c in cases if c.id in args.ids.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    product = load_model("bundled:1.5b", engine="llamacpp")
    torch_lm = load_model("bundled:1.5b", engine="torch")
    sides = {PRODUCT: (product, EditOptions(mode="spec")),
             REWRITE: (torch_lm, EditOptions(mode="rewrite", focus=False))}
    warm = Case("warmup", "warmup.py", "rename x to y", "x = 1\n", "y = 1\n")
    for lm, opts in sides.values():  # warm-up: first calls pay allocation (and spec its cost table)
        run_case_mode(lm, warm, opts.mode, opts)
    order = [PRODUCT if k % 2 == 0 else REWRITE for k in range(2 * max(args.repeat, args.rewrite_repeat))]
    records = []
    with open(args.out / "records.jsonl", "w") as log:
        for case in cases:
            done = {PRODUCT: 0, REWRITE: 0}
            for side in order:
                if done[side] >= (args.repeat if side == PRODUCT else args.rewrite_repeat):
                    continue
                lm, opts = sides[side]
                rec = run_case_mode(lm, case, opts.mode, opts) | {"side": side, "engine": lm.engine_name}
                done[side] += 1
                records.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(side, case.id, rec["seconds"], rec.get("recall"), rec.get("precision"), rec["error"],
                      file=sys.stderr, flush=True)
    summary = {"cases": [c.id for c in cases], "repeat": args.repeat, "rewrite_repeat": args.rewrite_repeat,
               "product": {"engine": product.engine_name, "mode": "spec", "focus": True},
               "rewrite": {"engine": torch_lm.engine_name, "dtype": str(torch_lm.dtype), "mode": "rewrite",
                           "focus": False},
               "kinds": summarize(records)}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["kinds"], indent=1))


if __name__ == "__main__":
    main()
