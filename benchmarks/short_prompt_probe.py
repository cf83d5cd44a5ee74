"""Probe: what a shorter copy prompt would buy, before paying for a retrain.

Copy mode's prompt numbers every line as `  12| code` and carries a worked example; on a CPU,
reading it is about half of the oracle's time. This runs the bench with tab-separated numbers
(`12<TAB>code`) and a one-line example program instead of the worked example: `oracle` shows the
speed a model trained on that prompt could reach; `copy` with an adapter trained on the current
prompt shows how far that adapter carries over. It is a probe, not a mode: the shipped prompt is unchanged.

    python benchmarks/short_prompt_probe.py --reuse DIR --out DIR [--adapter A] [--mode oracle,copy]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from editllm.bench.cases import load_cases
from editllm.bench.report import write_report
from editllm.bench.reuse import load_previous, run_settings
from editllm.bench.runner import run_bench
from editllm.editor import prompt
from editllm.editor.edit import EditOptions
from editllm.editor.models import load_model


def numbered_tab(file_text: str) -> str:
    lines = file_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "".join(f"{k}\t{line}\n" for k, line in enumerate(lines, 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reuse", type=Path, required=True, help="a bench folder with the rewrite baseline")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--adapter")
    ap.add_argument("--mode", default="oracle")
    ap.add_argument("--limit", type=int, default=4)
    args = ap.parse_args()
    lm = load_model("bundled:1.5b", dtype="bfloat16", adapter=args.adapter)
    opts = EditOptions(focus=False)
    # the baseline is rewrite, whose prompt the probe leaves alone: match it against the shipped prompts
    settings = run_settings(lm, opts, args.adapter)
    previous = load_previous(args.reuse, settings)
    prompt.numbered = numbered_tab  # copy_prompt looks both up at call time
    prompt.copy_example = lambda: "Example program: <copy lines=\"1-2\"/><gen>    return w * h\n</gen>" \
        '<copy lines="4-8"/>'
    cases = load_cases([Path("benchmarks/cases/humaneval_bugfix.jsonl")], limit=args.limit)
    modes = ["rewrite"] + args.mode.split(",")
    results = run_bench(lm, cases, modes, opts, previous=previous,
                        on_record=lambda r: print(r["id"], r["mode"], r["seconds"], r["prompt_tokens"],
                                                  r["exact_match"], r["tests_passed"], r["error"], flush=True))
    results["adapter"] = args.adapter
    results["settings"] = settings | {"prompt_version": "short-prompt probe"}  # not to be reused as shipped
    print(write_report(results, args.out))


if __name__ == "__main__":
    main()
