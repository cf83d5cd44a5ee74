"""Many files through llama-server: files per minute and tokens per second with 1 slot against N slots,
beside what `llama-batched-bench` shows for the same parallelism at the run's median lengths.

The scale-out issue's throughput target: rewrite over 100+ files with 4 slots should gain at least 90 % of
the gain llama.cpp's own batching shows for 4 parallel sequences over 1 (`llama-batched-bench`, total
tokens per second, at the run's median prompt read and tokens written). The files are small top-level
functions of the standard library (deterministic: sorted modules, the first functions that fit), so the run
needs nothing but this machine; no quality is claimed (every file's outcome is counted, errors included).

    python benchmarks/throughput.py --files 100 --slots 1,4 --mode rewrite --out DIR
    python benchmarks/throughput.py --files 100 --slots 1,4 --mode spec --out DIR   # server with n-gram speculation
    python benchmarks/throughput.py --files 100 --slots 1,4 --mode spec --local --out DIR  # no server: --jobs N

`--local` runs the same files on the local llama.cpp engine instead: `--jobs 1` (one file at a time) against
`--jobs N` (N files decoded together in one batch, `editor.batched`), and counts the files whose edit came out
the same as one at a time (a batch's other rows change the kernels' rounding, so a near-tie may flip).

On a GPU (the GPU issue's batch target: 32 files in one batch against one by one), `--local --engine static
--device cuda --modules` edits whole standard-library modules of `--min-lines`..`--max-lines` lines on the
static engine; llama-batched-bench has no part there, so the ratios are ours alone:

    python benchmarks/throughput.py --local --engine static --device cuda --modules --min-lines 80 \
        --max-lines 300 --files 32 --slots 1,32 --mode spec --rounds 3 --out DIR

`--rounds 3` edits the files three times on each loaded model and reports the median round, so the graphs'
capture (each padded shape's first forward) is not what either side is timed on.

Each slot count gets a fresh server (`editor.llamaserver.LlamaServer`, `-np N`, `-c` N × the per-slot
context) and one `EditSession.edit_many(jobs=N)` over the same files; the server keeps each slot's prompt
cache, as a user's would, so a file's prompt is read from where it parts from the previous one's.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

INSTRUCTION = "Add type hints to this function."
MODULE_INSTRUCTION = "Add type hints to the first function in this module."


def stdlib_modules(n: int, max_lines: int, min_lines: int) -> list[tuple[str, str]]:
    """`n` whole standard-library modules of min..max lines (sorted by name, ASCII only), as (file name, text)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[tuple[str, str]] = []
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if min_lines <= text.count("\n") <= max_lines and text.isascii() and "def " in text:
            found.append((path.name, text))
        if len(found) == n:
            return found
    raise SystemExit(f"only {len(found)} modules of {min_lines}-{max_lines} lines in {root}")


def stdlib_functions(n: int, max_lines: int, min_lines: int = 3) -> list[tuple[str, str]]:
    """`n` top-level functions of min..max lines from the standard library, as (file name, source)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found: list[tuple[str, str]] = []
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.splitlines(keepends=True)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.decorator_list:
                continue
            body = "".join(lines[node.lineno - 1: node.end_lineno])
            if min_lines <= body.count("\n") <= max_lines and body.isascii():
                found.append((f"{path.stem}_{node.name}.py", body))
                break  # one function a module: a spread of styles
        if len(found) == n:
            break
    if len(found) < n:
        raise SystemExit(f"only {len(found)} functions of {min_lines}-{max_lines} lines in {root}")
    return found


SPEC_FLAGS = "--spec-type ngram-simple"  # spec is the server's setting: a spec run's server speculates


def run_slots(gguf: str, model: str, folder: Path, slots: int, mode: str, ctx_per_slot: int,
              spec_flags: str = SPEC_FLAGS) -> dict:
    """One server with `slots` slots, every file through it with `slots` workers; the run's figures. In spec
    mode the server is started with `spec_flags` (llama-server's n-gram speculation)."""
    from editllm.api.session import EditSession
    from editllm.editor.llamaserver import LlamaServer

    paths = sorted(folder.glob("*.py"))
    args = ["-c", str(ctx_per_slot * slots), "-np", str(slots), "--no-warmup"]
    if mode == "spec":
        args += spec_flags.split()
    with LlamaServer(gguf, args) as server:
        session = EditSession(model, mode=mode, server=server.url, engine="llamacpp")
        session.prepare()
        started = time.perf_counter()
        report = session.edit_many(paths, INSTRUCTION, jobs=slots, retries=1)
        seconds = time.perf_counter() - started
    return figures(report, slots, seconds)


def run_local(model: str, folder: Path, jobs: int, mode: str, engine: str = "llamacpp", device: str = "cpu",
              instruction: str = INSTRUCTION, rounds: int = 1) -> dict:
    """Every file on the local engine (llama.cpp, or the static engine on a GPU) with `jobs` files decoded
    together (1: one at a time); the run's figures, and each file's new text (`texts`) to compare runs with.
    With `rounds` > 1 the files are edited that many times on the same loaded model and the figures are the
    median round's: the first round also captures the static engine's CUDA graphs, once per padded shape."""
    from editllm.api.session import EditSession

    paths = sorted(folder.glob("*.py"))
    session = EditSession(model, mode=mode, engine=engine, device=device)
    session.prepare()
    if jobs > 1:
        session.open_rows(jobs)  # the batched context is opened before the clock starts, as the model is
    timed = []
    for _ in range(rounds):
        started = time.perf_counter()
        report = session.edit_many(paths, instruction, jobs=jobs, retries=0)
        timed.append((time.perf_counter() - started, report))
    seconds, report = sorted(timed, key=lambda t: t[0])[(rounds - 1) // 2]  # the median round (the lower one of 2)
    result = figures(report, jobs, seconds)
    result["rounds_seconds"] = [round(t, 2) for t, _ in timed]
    result["engine"] = {"name": session.lm.engine_name, "device": session.lm.device,
                        "graphs": str(getattr(session.lm.engine, "graphs", None)),
                        "graph_error": getattr(session.lm.engine, "graph_error", None)}
    if session._rows is not None:
        st = session._rows.stats
        result["batches"] = {"decodes": st.batches, "files_per_decode": round(st.requests / max(1, st.batches), 2),
                             "per_batch": {str(k): v for k, v in sorted(st.per_batch.items())}}
    result["texts"] = {o.path: o.edit.new_text if o.edit is not None else None for o in report.outcomes}
    session.close_rows()
    return result


def figures(report, slots: int, seconds: float) -> dict:
    """A many-files run's figures: files per minute, tokens, drafts, failures."""
    paths = [o.path for o in report.outcomes]
    stats = [o.edit.stats for o in report.outcomes if o.edit is not None and getattr(o.edit, "stats", None)]
    written = [s.output_tokens for s in stats]
    read = [max(0, s.prompt_tokens - getattr(s, "prefix_tokens", 0)) for s in stats]
    drafted = sum(getattr(s, "copy_attempts", 0) for s in stats)
    accepted = sum(getattr(s, "copied_tokens", 0) for s in stats)
    return {"slots": slots, "files": len(paths), "drafted": drafted, "accepted": accepted,
            "fallbacks": sum(1 for o in report.outcomes if o.edit is not None and o.edit.fallback),
            "errors": len(report.failed), "seconds": round(seconds, 2),
            "files_per_minute": round(60 * len(paths) / seconds, 2),
            "output_tokens": sum(written), "output_tokens_per_s": round(sum(written) / seconds, 2),
            "prompt_tokens": sum(s.prompt_tokens for s in stats),
            "median_prompt": statistics.median(s.prompt_tokens for s in stats) if stats else None,
            "median_prompt_read": statistics.median(read) if read else None,
            "median_output": statistics.median(written) if written else None,
            "failures": [f"{o.path}: {o.error}" for o in report.failed]}


def batched_bench(gguf: str, prompt: int, output: int, parallel: list[int]) -> list[dict]:
    """`llama-batched-bench` rows (jsonl) for `parallel` sequences of `prompt` + `output` tokens."""
    from editllm.editor.llamaserver import tool_path

    ctx = max(parallel) * (prompt + output) + 64
    cmd = [str(tool_path("llama-batched-bench")), "-m", gguf, "-c", str(ctx), "-t", "2", "-tb", "2",
           "-npp", str(prompt), "-ntg", str(output), "-npl", ",".join(map(str, parallel)),
           "--output-format", "jsonl"]
    from editllm.editor.waitpolicy import user_environment

    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=user_environment()).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--max-lines", type=int, default=8)
    ap.add_argument("--slots", default="1,4")
    ap.add_argument("--mode", default="rewrite", choices=["rewrite", "spec", "copy"])
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--ctx-per-slot", type=int, default=2048)
    ap.add_argument("--spec-flags", default=SPEC_FLAGS, help="the server's speculation flags in spec mode")
    ap.add_argument("--local", action="store_true", help="the local engine, --jobs N, instead of servers")
    ap.add_argument("--engine", default="llamacpp", choices=["llamacpp", "static", "torch"], help="with --local")
    ap.add_argument("--device", default="cpu", help="with --local: cpu or cuda")
    ap.add_argument("--modules", action="store_true", help="whole stdlib modules of --min-lines..--max-lines")
    ap.add_argument("--min-lines", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1, help="with --local: edit the files N times on one loaded model, "
                    "report the median round")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    from editllm.editor.models import gguf_of

    llama = not args.local or args.engine == "llamacpp"
    gguf = str(gguf_of(args.model)) if llama else None
    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.out / "files"
    folder.mkdir(exist_ok=True)
    files = (stdlib_modules(args.files, args.max_lines, args.min_lines) if args.modules
             else stdlib_functions(args.files, args.max_lines, args.min_lines))
    instruction = MODULE_INSTRUCTION if args.modules else INSTRUCTION
    for name, text in files:
        (folder / name).write_text(text, encoding="utf-8")
    slots = [int(s) for s in args.slots.split(",")]
    runs = []
    for n in slots:
        if args.local:
            runs.append(run_local(args.model, folder, n, args.mode, args.engine, args.device, instruction, args.rounds))
        else:
            runs.append(run_slots(gguf, args.model, folder, n, args.mode, args.ctx_per_slot, args.spec_flags))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "texts"}), file=sys.stderr, flush=True)
    if args.local:  # the same edit as one file at a time?
        alone = runs[0]["texts"]
        for run in runs:
            texts = run.pop("texts")
            run["same_as_alone"] = sum(1 for k, v in texts.items() if v is not None and v == alone.get(k))
            run["differs_from_alone"] = sorted(k for k, v in texts.items() if v != alone.get(k))
    prompt, output = int(runs[0]["median_prompt_read"]), int(runs[0]["median_output"])
    rows = batched_bench(gguf, prompt, output, slots) if llama else []
    base_run = runs[0]
    backend = f"local {args.engine} on {args.device}, --jobs" if args.local else "llama-server, slots"
    result = {"model": args.model, "mode": args.mode, "instruction": instruction, "runs": runs, "backend": backend,
              "batched_bench": rows, "lengths": {"prompt_read": prompt, "output": output}, "ratios": []}
    for k, run in enumerate(runs[1:], 1):
        ours = run["files_per_minute"] / base_run["files_per_minute"]
        ratio = {"slots": run["slots"], "ours": round(ours, 3),
                 "output_tokens_per_s": run["output_tokens_per_s"]}
        if k < len(rows):
            theirs = rows[k]["speed"] / rows[0]["speed"]
            ratio |= {"batched_bench": round(theirs, 3), "share": round(ours / theirs, 3)}
        result["ratios"].append(ratio)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["ratios"]), flush=True)


if __name__ == "__main__":
    main()
