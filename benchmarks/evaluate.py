"""Before vs after a fine-tune (`editllm train eval`): copy-mode exact match, tests passed and speed on the
bench set. It runs the bench, so it lives with the bench: `training/` builds data and trains, and never
imports `editllm.bench`."""

from __future__ import annotations

from editllm.bench.cases import Case
from editllm.bench.runner import run_bench
from editllm.editor.edit import EditOptions
from editllm.editor.models import LoadedModel


def compare(base: LoadedModel, tuned: LoadedModel, cases: list[Case], on_record=None) -> dict:
    """Run copy mode with both models on the same cases; one row per model and group of cases (held-out
    cases are never averaged with generated ones)."""
    rows = {}
    for label, lm in (("base", base), ("fine-tuned", tuned)):
        results = run_bench(lm, cases, ["copy"], EditOptions(), on_record)
        for group, by_mode in results["summary"].items():
            summary = by_mode["copy"]
            recs = [r for r in results["records"] if r["error"] is None and r.get("group") == group]
            rows[f"{label} ({group})"] = {
                "cases": summary["cases"], "errors": summary["errors"], "exact_match": summary["exact_match"],
                "tests_passed": summary["tests_passed"], "seconds_total": summary["seconds_total"],
                "fallback_rate": round(sum(r["fallback"] is not None for r in recs) / len(recs), 3) if recs else None,
                "tokens_per_forward": summary["tokens_per_forward"],
            }
    return rows


def table(rows: dict) -> str:
    keys = ["cases", "errors", "exact_match", "tests_passed", "fallback_rate", "tokens_per_forward", "seconds_total"]
    lines = ["| model | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for label, row in rows.items():
        lines.append(f"| {label} | " + " | ".join("–" if row[k] is None else str(row[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"
