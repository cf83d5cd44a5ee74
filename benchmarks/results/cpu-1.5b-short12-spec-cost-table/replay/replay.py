"""Replay spec's verify loop offline under a draft schedule: the drafter's proposals and the verdicts are
exactly those of the real run (its prompt and output ids: greedy output is fixed), the seconds come from a
cost curve measured on this machine (forwards of k tokens, ms, bundled 1.5B on llama.cpp, 2 AVX2 cores).

    python replay.py traces-tune.jsonl [traces-short12.jsonl]

Traces were written by collect.py (one spec run per case: prompt ids, output ids, source start).
"""
import json
import sys

from editllm.editor.costs import SIZES, Costs, fit
from editllm.editor.drafter import CopyDrafter, CostSchedule, DraftSchedule

FINE = ("1 67;2 98;3 128;4 154;5 184;6 212;7 241;8 386;9 488;10 527;11 555;12 614;13 526;14 593;15 782;16 420;"
        "17 533;18 534;19 544;20 576;21 599;22 622;23 640;24 678;25 689;26 708;27 732;28 756;29 780;30 797;31 824;"
        "32 731;33 812;34 849;35 861;36 911;37 927;38 954;39 972;40 989;48 1039;56 1299;64 1284;96 2200;128 2523;"
        "160 3223;192 3773;256 5077")  # 96: interpolated, not measured
CURVE = {int(a): int(b) / 1000 for a, b in (x.split() for x in FINE.split(";"))}


def cost(k: int) -> float:
    ks = sorted(CURVE)
    if k in CURVE:
        return CURVE[k]
    if k > ks[-1]:
        return CURVE[ks[-1]] * k / ks[-1]
    lo, hi = max(x for x in ks if x < k), min(x for x in ks if x > k)
    return CURVE[lo] + (CURVE[hi] - CURVE[lo]) * (k - lo) / (hi - lo)


def replay(rec: dict, schedule) -> tuple[float, int, int]:
    """(decode seconds after the prompt's forward, forwards, drafted tokens rejected)."""
    prompt, out = rec["prompt"], rec["output"]
    d = CopyDrafter(3, schedule)
    d.reset(prompt, rec["source_start"])
    d.append(out[0])
    pos, t, forwards, wasted = 1, 0.0, 0, 0
    while pos < len(out):
        draft = d.propose(None)
        t += cost(len(draft) + 1)
        forwards += 1
        acc = 0
        while acc < len(draft) and pos + acc < len(out) and draft[acc] == out[pos + acc]:
            acc += 1
        if draft:
            d.feedback(acc, len(draft))
        wasted += len(draft) - acc
        for tok in out[pos:pos + acc + 1]:
            d.append(tok)
        pos += acc + 1
    return t, forwards, wasted


def main() -> None:
    table = fit({k: cost(k) for k in SIZES})  # what editor.costs.measure would save on this curve
    line = fit({k: cost(k) for k in (1, 4, 16, 64)})  # the old format: four sizes, a line through them
    schedules = {
        "old: line through 1/4/16/64, p .95, up to 256": lambda: CostSchedule(Costs(line.step, line.per_token).of,
                                                                             256, [], prior_accepted=19),
        "table, p .995, up to 256, any size": lambda: CostSchedule(table.of, 256),
        "table, p .995, measured sizes, up to 256": lambda: CostSchedule(table.of, 256, table.sizes(257)),
        "new: table, p .995, measured sizes, up to 63 (long_enough)": lambda: CostSchedule(
            table.of, table.long_enough(257) - 1, table.sizes(table.long_enough(257))),
        "fixed 31 (llama-server's m 32)": lambda: DraftSchedule.fixed(31),
        "fixed 63": lambda: DraftSchedule.fixed(63),
    }
    for path in sys.argv[1:]:
        recs = [json.loads(line) for line in open(path)]
        print(f"{path}: {len(recs)} cases; all output in one batch {sum(cost(len(r['output'])) for r in recs):.1f} s")
        for name, make in schedules.items():
            res = [replay(r, make()) for r in recs]
            print(f"  {name:60s} {sum(x[0] for x in res):7.1f} s  forwards {sum(x[1] for x in res):4d}  "
                  f"rejected tokens {sum(x[2] for x in res)}")


if __name__ == "__main__":
    main()
