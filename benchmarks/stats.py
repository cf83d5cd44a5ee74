"""Bench statistics: speedups over rewrite paired per case, and quality rates, per mode and per group of
cases (generated or held-out, code or prose), so that held-out numbers are never mixed with the others."""

from __future__ import annotations

import math
import statistics

BUCKETS = ((0, 60), (60, 120), (120, 200), (200, 10**9))
LONG_FILE = 150  # lines: the GPU issue's tokens/s target is for files this long or longer
NEAR_200 = (150, 250)  # lines: the GPU issue's time to first diff is for "a 200-line file"
GROUPS = {  # a record's `group` (Case.group) → its report table, in report order
    "code": "Generated code cases", "code-heldout": "Held-out code cases",
    "prose": "Prose cases, generated", "prose-heldout": "Prose cases, held out",
}


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def rate(records: list[dict], key: str) -> float | None:
    values = [r.get(key) for r in records if r.get(key) is not None]  # reused records may predate a column
    return round(sum(bool(v) for v in values) / len(values), 3) if values else None


def mean(records: list[dict], key: str) -> float | None:
    """The average of a per-case score (prose recall, precision): each case weighs the same."""
    values = [r[key] for r in records if r.get(key) is not None]
    return round(sum(values) / len(values), 3) if values else None


def record_group(rec: dict) -> str:
    """The group of a record; records from before groups were recorded are code cases (no prose case
    ran then), held out when their kind says so."""
    return rec.get("group") or ("code-heldout" if str(rec.get("kind", "")).startswith("heldout") else "code")


def summarize_groups(records: list[dict], modes: list[str]) -> dict[str, dict]:
    """`summarize` for each group of cases that has records, in GROUPS order: speedups pair each case with
    its own rewrite, and no rate averages held-out cases with generated ones."""
    return {g: summarize(sub, modes) for g in GROUPS if (sub := [r for r in records if record_group(r) == g])}


def summarize(records: list[dict], modes: list[str]) -> dict:
    """Per mode: speedup over rewrite paired per case (geomean and total-time ratio), quality rates, the
    total time over the cases' limits, and how many texts parted from rewrite's at a near-tie. `seconds`
    is a record's median when the bench repeated it, so totals are totals of medians."""
    base = {r["id"]: r for r in records if r["mode"] == "rewrite" and r["error"] is None}
    out = {}
    for mode in modes:
        recs = [r for r in records if r["mode"] == mode]
        ok = [r for r in recs if r["error"] is None]
        paired = [r for r in ok if r["id"] in base]
        entry = {
            "cases": len(recs), "errors": len(recs) - len(ok),
            "seconds_total": round(sum(r["seconds"] for r in ok), 2),
            # issue 22: prompt tokens each call reads (a kept or loaded fixed part excluded), summed
            "prompt_read": sum(r.get("prompt_read") or 0 for r in ok) if ok else None,
            "speedup_geomean": _round(geomean([base[r["id"]]["seconds"] / r["seconds"] for r in paired])),
            "speedup_total": _round(sum(base[r["id"]]["seconds"] for r in paired) / sum(r["seconds"] for r in paired))
            if paired else None,
            "speedup_after_prompt": _round(geomean([after_prompt(base[r["id"]]) / after_prompt(r) for r in paired
                                                    if after_prompt(r) and after_prompt(base[r["id"]])])),
            "tokens_per_forward": _round(
                sum(r["output_tokens"] for r in ok) / max(1, sum(r["forwards"] - 1 for r in ok))) if ok else None,
            "copied_share": _round(sum(r["copied_share"] * r["output_tokens"] for r in ok)
                                   / max(1, sum(r["output_tokens"] for r in ok))) if ok else None,
            "exact_match": rate(ok, "exact_match"), "tests_passed": rate(ok, "tests_passed"),
            "identical_to_rewrite": rate(ok, "identical_to_rewrite"), "complete_output": rate(ok, "complete_output"),
            "merged": rate(ok, "merged"), "tests_passed_unmerged": rate(ok, "tests_passed_unmerged"),
            "output_tokens_per_s": tokens_per_second(paired, base), "by_size": {},
        }
        long = [r for r in paired if r["lines"] >= LONG_FILE]
        if long:  # the GPU issue's target is for files of 150+ lines
            entry["output_tokens_per_s_long"] = tokens_per_second(long, base)
        near = [r["seconds"] for r in ok if NEAR_200[0] <= r["lines"] < NEAR_200[1]]
        if near:  # one edit's seconds with the model loaded: its diff is printed as the edit ends
            entry["diff_seconds_200"] = _round(statistics.median(near))
        limited = [r for r in ok if r.get("limit_seconds")]
        if limited:  # issue 21: the mode's total time over the total of its cases' limits
            entry["limit_ratio"] = _round(sum(r["seconds"] for r in limited) / sum(r["limit_seconds"] for r in limited))
        parted = [r["first_difference"] for r in recs if r.get("first_difference")]  # refused ones too
        if parted:
            entry["mismatches"] = len(parted)
            entry["near_ties"] = sum(bool(d["near_tie"]) for d in parted)
        if any("recall" in r for r in recs):  # prose cases: how well the asked edits were made
            entry.update(recall=mean(ok, "recall"), precision=mean(ok, "precision"),
                         unrequested_lines=sum(r.get("unrequested_lines") or 0 for r in ok) if ok else None)
        for lo, hi in BUCKETS:
            sub = [r for r in paired if lo <= r["lines"] < hi]
            if sub:
                entry["by_size"][f"{lo}-{hi if hi < 10**9 else ''}"] = {
                    "cases": len(sub),
                    "speedup_geomean": _round(geomean([base[r["id"]]["seconds"] / r["seconds"] for r in sub])),
                    "tests_passed": rate(sub, "tests_passed"),
                    "output_tokens_per_s": tokens_per_second(sub, base),
                }
        out[mode] = entry
    return out


def tokens_per_second(records: list[dict], base: dict[str, dict]) -> float | None:
    """Output tokens per second, counting each case's output as rewrite's (the file's new text in tokens: the
    same work for every mode, as a fast-apply service counts it), over the mode's own seconds; copy mode's
    own count would add its tags and drop nothing, spec's equals rewrite's."""
    seconds = sum(r["seconds"] for r in records)
    tokens = sum(base[r["id"]].get("output_tokens") or 0 for r in records)
    return round(tokens / seconds, 1) if records and seconds > 0 else None


def after_prompt(rec: dict) -> float | None:
    """Seconds spent after the prompt's forward pass: what the decoding method itself costs.

    End-to-end time also pays for reading the prompt, which differs between modes (copy mode's prompt
    numbers every line); this separates the mechanism from the prompt. None when not recorded.
    """
    prefill = rec.get("prefill_seconds")
    return rec["seconds"] - prefill if prefill and rec.get("seconds") else None


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
