"""Bench reports: results.json, a Markdown table and PNG plots, written to one folder."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

from editllm.bench.stats import GROUPS
from editllm.editor.cachefs import publish_file
from editllm.editor.errors import EditError

INSTALL_EXTRA = "pip install 'editllm[bench]'"

# Copy-as-Decode's kernel figures (A100 80GB, bf16): one prefill of N tokens against N decode steps, 6.8x at
# N=8 up to 303x at N=512; the sizes between are not given.
PAPER_KERNEL = {8: 6.8, 512: 303.0}


def require_extra() -> None:
    """The plots need matplotlib, an optional dependency (the `bench` extra): say so before a long
    run rather than after it."""
    if importlib.util.find_spec("matplotlib") is None:
        raise EditError(f"the bench needs matplotlib for its plots: {INSTALL_EXTRA}")


def check_out_folder(out: Path) -> None:
    """Refuse an `--out` the report cannot be written to before the run, not after its last case: a
    regular file, or a path under one."""
    if out.exists() and not out.is_dir():
        raise EditError(f"--out {out}: not a folder (it is a file); name a folder for the report")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise EditError(f"--out {out}: {parent} is a file, not a folder")
            break

COLUMNS = [
    ("cases", "cases"), ("errors", "errors"), ("speedup_geomean", "speedup (geomean)"),
    ("speedup_total", "speedup (total time)"), ("speedup_after_prompt", "speedup after the prompt (geomean)"),
    ("seconds_total", "seconds"), ("limit_ratio", "× limit"), ("prompt_read", "prompt tokens read"),
    ("tokens_per_forward", "tokens/forward"), ("copied_share", "copied share"), ("exact_match", "exact match"),
    ("tests_passed", "tests passed"), ("identical_to_rewrite", "identical to rewrite"),
    ("complete_output", "complete output"), ("merged", "merged"),
    ("tests_passed_unmerged", "tests passed without merge"),
    ("output_tokens_per_s", "output tokens/s (rewrite's tokens)"),
    ("output_tokens_per_s_long", "output tokens/s, files of 150+ lines"),
    ("diff_seconds_200", "seconds to the diff, files of 150–250 lines (median)"),
]
PROSE_COLUMNS = [  # issue 19: how well the asked edits were made, and how fast
    ("cases", "cases"), ("errors", "errors"), ("recall", "recall"), ("precision", "precision"),
    ("unrequested_lines", "unasked lines"), ("exact_match", "exact match"), ("seconds_total", "seconds"),
    ("speedup_total", "speedup (total time)"), ("speedup_geomean", "speedup (geomean)"),
    ("identical_to_rewrite", "identical to rewrite"),
]


def _cell(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def markdown(results: dict) -> str:
    """One table per group of cases (generated and held-out, code and prose) with the per-size speedups
    under it, the errors and, if present, the kernel table."""
    adapter = f" + adapter {results['adapter']}" if results.get("adapter") else ""
    lines = [f"# editllm bench — {results.get('model')}{adapter} on {results.get('device')} ({results.get('dtype')})",
             ""]
    summary = results.get("summary", {})
    engine = _engine_line(results)
    if engine:
        lines += [engine, ""]
    if summary:
        lines.append(f"{results.get('cases')} cases. Speedups are over `rewrite`, paired per case. Each group of "
                     "cases has its own table: held-out numbers are never averaged with generated ones.")
        if results.get("partial"):
            lines.append(f"**Partial**: the run stopped after {results['cases']} of its {results['partial']} cases "
                         "(these are the finished ones).")
        if results.get("repeat", 1) > 1:
            lines.append(f"Each (case, mode) ran {results['repeat']} times, interleaved case by case, round by "
                         "round, mode by mode; seconds are medians (every run is in results.json).")
        if any(r.get("limit_seconds") for r in results.get("records", [])):
            lines.append("`× limit`: seconds over the limit, one forward over the prompt plus rewrite's output "
                         "measured per case in this run.")
        peers = (results.get("settings") or {}).get("peers")
        if peers and "llama-cpp-python" in peers:
            lines.append(f"Peers: llama.cpp {peers.get('llama.cpp')}, llama-cpp-python "
                         f"{peers.get('llama-cpp-python')}, {peers.get('threads')} threads; server flags "
                         + "; ".join(f"{k}: `{' '.join(v)}`" for k, v in (peers.get("server_flags") or {}).items()))
        if peers and "hf_pld_tokens" in peers:
            lines.append(f"hf-pld: transformers' prompt lookup of {peers['hf_pld_tokens']} tokens.")
        for group, by_mode in summary.items():
            lines += ["", *_group_table(group, by_mode)]
        lines += _per_case(results)
        lines += _mismatches(results)
        errors = [r for r in results.get("records", []) if r.get("error")]
        if errors:
            lines += ["", "Errors:", ""]
            seen = set()
            for r in errors:
                key = (r["mode"], r["error"])
                if key not in seen:
                    seen.add(key)
                    lines.append(f"- {r['mode']} ({r['id']}): {r['error']}")
    if results.get("kernel"):
        lines += ["", "Copy kernel: appending N tokens in one forward vs N single steps (the paper: Copy-as-Decode "
                  "§5.4, Qwen2.5-1.5B/7B bf16 on an A100 80GB, gives only its range's ends)", "",
                  "| N | one forward (ms) | N single steps (ms) | ratio | paper's ratio |", "|---|---|---|---|---|"]
        for row in results["kernel"]:
            est = " (est.)" if row["estimated"] else ""
            paper = PAPER_KERNEL.get(row["tokens"])
            lines.append(f"| {row['tokens']} | {row['one_forward_ms']} | {row['single_steps_ms']}{est} "
                         f"| {row['ratio']} | {paper if paper is not None else '-'} |")
    return "\n".join(lines) + "\n"


def _engine_line(results: dict) -> str | None:
    """How the run decoded where that is in doubt: the static engine's graphs (or why it ran eagerly) and
    transformers' compiled greedy loop (or why not)."""
    parts = []
    if results.get("engine") == "static" and "graphs" in results:
        parts.append(f"static engine, CUDA graphs {results['graphs']}"
                     + (f" (capture failed: {results['graph_error']})" if results.get("graph_error") else ""))
    if results.get("hf_greedy"):
        parts.append(f"hf-greedy: {results['hf_greedy']}"
                     + (f" (compile failed: {results['hf_compile_error']})" if results.get("hf_compile_error") else ""))
    return ("Engine: " + "; ".join(parts) + ".") if parts else None


def _per_case(results: dict) -> list[str]:
    """Each case's limit and each mode's seconds (÷ the limit), when the run measured limits."""
    records = results.get("records", [])
    if not any(r.get("limit_seconds") for r in records):
        return []
    modes = results.get("modes", [])
    lines = ["", "Per case: seconds (× the case's limit)", "",
             "| case | lines | limit s | " + " | ".join(modes) + " |", "|---" * (len(modes) + 3) + "|"]
    by_case: dict[str, dict[str, dict]] = {}
    for r in records:
        by_case.setdefault(r["id"], {})[r["mode"]] = r
    for cid, recs in by_case.items():
        first = next(iter(recs.values()))
        cells = []
        for m in modes:
            r = recs.get(m, {})
            ratio = f" ({r['limit_ratio']:.2f}×)" if r.get("limit_ratio") else ""
            cells.append(f"{_cell(r.get('seconds'))}{ratio}" if r.get("error") is None else "error")
        lines.append(f"| {cid} | {first['lines']} | {_cell(first.get('limit_seconds'))} | " + " | ".join(cells) + " |")
    return lines


def _mismatches(results: dict) -> list[str]:
    """Every lossless mode's text that is not rewrite's, with rewrite's top-2 logit gap where they part."""
    parted = [r for r in results.get("records", []) if r.get("first_difference")]
    if not parted:
        return []
    lines = ["", "Texts that differ from rewrite's (top-2 logit gap at the first differing token; < 0.1 is a "
             "near-tie a batched forward can flip):", ""]
    for r in parted:
        d = r["first_difference"]
        tie = "near-tie" if d["near_tie"] else "NOT a near-tie"
        lines.append(f"- {r['mode']} ({r['id']}): token {d['token']}, gap {d['gap']} ({tie})")
    return lines


def _group_table(group: str, by_mode: dict) -> list[str]:
    """A group's heading, its table per mode (prose columns for prose groups) and its speedups by size."""
    columns = PROSE_COLUMNS if group.startswith("prose") else COLUMNS
    lines = [f"## {GROUPS.get(group, group)}", "",
             "| mode | " + " | ".join(title for _, title in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for mode, entry in by_mode.items():
        lines.append(f"| {mode} | " + " | ".join(_cell(entry.get(k)) for k, _ in columns) + " |")
    buckets = sorted({b for e in by_mode.values() for b in e.get("by_size", {})}, key=lambda b: int(b.split("-")[0]))
    if buckets:
        lines += ["", "Speedup (geomean) by file size in lines:", "",
                  "| mode | " + " | ".join(buckets) + " |", "|---" * (len(buckets) + 1) + "|"]
        for mode, entry in by_mode.items():
            cells = [entry["by_size"].get(b, {}).get("speedup_geomean") for b in buckets]
            lines.append(f"| {mode} | " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def plots(results: dict, out: Path) -> list[Path]:
    """speedup_vs_size.png, tokens_per_forward.png and kernel.png, as far as the data allows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    records = [r for r in results.get("records", []) if r.get("error") is None]
    base = {r["id"]: r["seconds"] for r in records if r["mode"] == "rewrite"}
    modes = [m for m in results.get("modes", []) if m != "rewrite"]
    if records and base and modes:
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode in modes:
            pts = [(r["lines"], base[r["id"]] / r["seconds"]) for r in records if r["mode"] == mode and r["id"] in base]
            if pts:
                ax.scatter(*zip(*pts, strict=True), label=mode)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(xlabel="file size (lines)", ylabel="speedup over rewrite", title="Speedup vs file size")
        ax.legend()
        written.append(_save(fig, out / "speedup_vs_size.png"))
    if records:
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode in results.get("modes", []):
            pts = [(r["lines"], r["tokens_per_forward"]) for r in records if r["mode"] == mode]
            if pts:
                ax.scatter(*zip(*pts, strict=True), label=mode)
        ax.set(xlabel="file size (lines)", ylabel="output tokens per forward", title="Tokens per forward")
        ax.legend()
        written.append(_save(fig, out / "tokens_per_forward.png"))
    if results.get("kernel"):
        rows = results["kernel"]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([r["tokens"] for r in rows], [r["one_forward_ms"] for r in rows], "o-", label="one forward")
        ax.plot([r["tokens"] for r in rows], [r["single_steps_ms"] for r in rows], "o-", label="N single steps")
        ax.set(xscale="log", yscale="log", xlabel="tokens appended N", ylabel="ms", title="Copy kernel")
        ax.legend()
        written.append(_save(fig, out / "kernel.png"))
    return written


PLOTS = ("speedup_vs_size.png", "tokens_per_forward.png", "kernel.png")  # every plot `plots` may draw


def _save(fig, path: Path) -> Path:
    """The figure as a PNG at `path`, written whole (a full disk leaves the earlier plot, not half a PNG)."""
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    publish_file(path, png.getvalue())
    return path


def write_report(results: dict, out: Path, draw: bool = True) -> str:
    """Write results.json (texts dropped), outputs.jsonl, report.md and (`draw`) the plots; return the Markdown.

    Each file is written whole (temp file, fsync, rename): an earlier report in `out` is never left cut
    short. A plot this report does not draw is removed, so no earlier run's plot sits beside this run's
    report as if it were its own (a partial report, `draw` off, has none)."""
    out.mkdir(parents=True, exist_ok=True)
    slim = dict(results)
    slim["records"] = [{k: v for k, v in r.items() if k not in ("text", "program", "set_aside")}
                       for r in results.get("records", [])]
    publish_file(out / "results.json", (json.dumps(slim, indent=2) + "\n").encode())
    outputs = "".join(json.dumps({"id": r["id"], "mode": r["mode"], "text": r.get("text"), "program": r.get("program"),
                                  "set_aside": r.get("set_aside") or None}) + "\n"
                      for r in results.get("records", []))  # the edited texts, for inspection and --reuse
    publish_file(out / "outputs.jsonl", outputs.encode())
    md = markdown(results)
    publish_file(out / "report.md", md.encode())
    drawn = {p.name for p in plots(results, out)} if draw else set()
    for name in set(PLOTS) - drawn:
        (out / name).unlink(missing_ok=True)
    return md
