"""`editllm`: parse arguments, build the request, show progress, print. No editing logic lives here.

stdout carries only the diff; progress (on a terminal), stats and errors go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import typer
from editllm.editor.errors import EditError
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.splitlines()[0])
model_app = typer.Typer(no_args_is_help=True, help="Show, assemble or convert the bundled model.")
app.add_typer(model_app, name="model")

err = Console(stderr=True, highlight=False)


def _version() -> str:
    try:
        return version("editllm")
    except PackageNotFoundError:
        return "unknown"


def _version_callback(value: bool) -> None:
    if value:
        print(f"editllm {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                      help="Print the version and exit."),
) -> None:
    """Edit files with a local LLM and print a unified diff."""


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, a non-zero exit."""
    err.print(f"editllm: error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


def quiet_libraries() -> None:
    """transformers' load bars and warnings would clutter stderr and hooks."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def display_path(path: str) -> str:
    """The path as the diff shows it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix().lstrip("/")


class Progress:
    """A one-line live status on stderr, shown only on a terminal and never with --quiet."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and err.is_terminal
        self.status = err.status("") if self.enabled else None
        self.label = ""

    def __enter__(self) -> Progress:
        if self.status:
            self.status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.status:
            self.status.__exit__(*exc)

    def say(self, text: str) -> None:
        self.label = text
        if self.status:
            self.status.update(text)

    def tokens(self, n: int, seconds: float) -> None:
        if self.status:
            rate = n / seconds if seconds > 0 else 0.0
            self.status.update(f"{self.label}: {n} tokens, {rate:.1f} tok/s")


def load(model: str, device: str, dtype: str, adapter: str | None, trust_remote_code: bool, progress: Progress):
    from editllm.editor.models import load_model

    quiet_libraries()
    progress.say(f"loading {model}")
    return load_model(model, device, dtype, adapter, trust_remote_code,
                      log=lambda msg: err.print(msg, markup=False) if not progress.enabled else progress.say(msg))


@app.command(context_settings={"allow_interspersed_args": True})
def fix(
    args: list[str] = typer.Argument(..., metavar="FILE... INSTRUCTION",
                                     help="Files to edit, then the instruction (quote it)."),
    apply: bool = typer.Option(False, "--apply", help="Write the edited files instead of printing a diff."),
    mode: str = typer.Option("spec", "--mode", help="rewrite | spec (lossless, faster) | copy"),
    model: str = typer.Option("bundled:1.5b", "--model", "-m", envvar="EDITLLM_MODEL",
                              help="bundled:1.5b, bundled:0.5b, an HF model directory, a .gguf file or a hub id."),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda"),
    dtype: str = typer.Option("auto", "--dtype", help="auto | float32 | bfloat16 | float16"),
    max_new_tokens: int = typer.Option(None, "--max-new-tokens", min=1, help="Cap on generated tokens per file."),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    seed: int = typer.Option(0, "--seed"),
    draft: str = typer.Option("adaptive:16,2,128,10", "--draft", hidden=True,
                              help="spec draft schedule: fixed:K or adaptive:START,GROW,MAX,AFTER_MISS"),
    adapter: str = typer.Option(None, "--adapter", help="A LoRA adapter directory to load on the model."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
    stats: bool = typer.Option(False, "--stats", help="Print run statistics as one JSON object on stderr."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    monotonic: bool = typer.Option(True, "--monotonic/--no-monotonic",
                                   help="copy mode: spans must move forward through the file (off allows moves)."),
) -> None:
    """Edit FILE(s) as INSTRUCTION says; print one unified diff (or write with --apply)."""
    started = time.perf_counter()
    try:
        sources, instruction = read_request(args)
        from editllm.editor.diff import checked_diff, write_atomic
        from editllm.editor.edit import MODES, EditOptions, edit_file

        if mode not in MODES:
            raise EditError(f"unknown --mode {mode!r}; choose one of {', '.join(MODES)}")
        opts = EditOptions(mode, max_new_tokens, temperature, seed, draft, monotonic=monotonic)
        with Progress(not quiet) as progress:
            lm = load(model, device, dtype, adapter, trust_remote_code, progress)
            results = []
            for src in sources:
                progress.say(f"{src.path} ({mode})")
                result = edit_file(lm, src, instruction, opts, progress.tokens)
                if result.fallback and not quiet:
                    err.print(f"{src.path}: copy mode fell back to spec mode ({result.fallback})", markup=False)
                if result.merged and not quiet:
                    err.print(f"{src.path}: the model wrote only part of the file; merged it into place",
                              markup=False)
                results.append(result)
        changes = [(r.source, r.new_text) for r in results]
        diff = checked_diff(changes)
        if apply:
            for src, new in changes:
                if new != src.raw:
                    write_atomic(src, new)
        else:
            sys.stdout.write(diff)
            sys.stdout.flush()
        if stats:
            err.print(json.dumps(stats_record(lm, mode, results, started)), markup=False, soft_wrap=True)
        if not quiet and err.is_terminal:
            changed = sum(1 for src, new in changes if new != src.raw)
            err.print(f"{changed} of {len(changes)} file(s) {'written' if apply else 'changed'}")
    except EditError as exc:
        fail(str(exc))


def read_request(args: list[str]):
    """Split `FILE... INSTRUCTION` and read every file before any model is loaded."""
    from editllm.editor.source import read_source

    if len(args) < 2:
        raise EditError("usage: editllm fix FILE... INSTRUCTION")
    *paths, instruction = args
    if not instruction.strip():
        raise EditError("the instruction is empty")
    sources, seen = [], set()
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            raise EditError(f"{path}: named twice")
        seen.add(key)
        sources.append(read_source(path, display_path(path)))
    return sources, instruction


def stats_record(lm, mode: str, results, started: float) -> dict:
    """The `--stats` object: totals first, then one entry per file."""
    files = [r.as_dict() for r in results]
    total = {k: sum(f[k] for f in files) for k in
             ("prompt_tokens", "output_tokens", "forwards", "copy_attempts", "copied_tokens")}
    decode = sum(r.stats.decode_seconds + r.stats.prefill_seconds for r in results)
    steps = total["forwards"] - len(files)
    return {
        "mode": mode,
        "model": lm.name,
        "device": lm.device,
        "dtype": str(lm.dtype).removeprefix("torch."),
        **total,
        "tokens_per_forward": round(total["output_tokens"] / steps, 3) if steps > 0 else None,
        "copied_share": round(total["copied_tokens"] / total["output_tokens"], 3) if total["output_tokens"] else 0.0,
        "load_seconds": round(lm.load_seconds, 3),
        "decode_seconds": round(decode, 3),
        "total_seconds": round(time.perf_counter() - started, 3),
        "files": files,
    }


def default_cases() -> list[Path]:
    """The committed bench cases of a source checkout (the package folders sit at the repo root)."""
    import editllm.editor

    root = Path(editllm.editor.__file__).resolve().parents[1] / "benchmarks" / "cases"
    return sorted(root.glob("*.jsonl")) if root.is_dir() else []


@app.command()
def bench(
    mode: str = typer.Option("rewrite,spec,hf-pld", "--mode", help="Comma list of rewrite,spec,copy,oracle,hf-pld."),
    cases: list[Path] = typer.Option(None, "--cases", help="JSONL case file(s); default: the repo's benchmarks/cases."),
    limit: int = typer.Option(None, "--limit", min=1, help="Run N cases, spread over file sizes."),
    kind: list[str] = typer.Option(None, "--kind", help="Only cases of this kind (bugfix, rename, ...)."),
    model: str = typer.Option("bundled:1.5b", "--model", "-m", envvar="EDITLLM_MODEL"),
    device: str = typer.Option("auto", "--device"),
    dtype: str = typer.Option("auto", "--dtype"),
    adapter: str = typer.Option(None, "--adapter"),
    draft: str = typer.Option("adaptive:16,2,128,10", "--draft", help="spec draft schedule."),
    max_new_tokens: int = typer.Option(None, "--max-new-tokens", min=1),
    kernel: bool = typer.Option(False, "--kernel", help="Also time the copy kernel (N tokens in one forward)."),
    kernel_only: bool = typer.Option(False, "--kernel-only", help="Only the copy-kernel table."),
    out: Path = typer.Option(Path("bench-out"), "--out", help="Folder for results.json, report.md, plots."),
    reuse: Path = typer.Option(None, "--reuse", help="Take (case, mode) records from an earlier --out folder."),
) -> None:
    """Measure speed and quality per mode on benchmark cases; print the Markdown report."""
    from editllm.editor.bench import ALL_MODES, kernel_bench, load_cases, run_bench
    from editllm.editor.edit import EditOptions
    from editllm.editor.report import load_previous, write_report
    from rich.progress import Progress as Bar

    try:
        modes = [m.strip() for m in mode.split(",") if m.strip()]
        bad = [m for m in modes if m not in ALL_MODES]
        if bad:
            raise EditError(f"unknown bench mode {bad[0]!r}; choose from {', '.join(ALL_MODES)}")
        paths = list(cases or default_cases())
        if not paths and not kernel_only:
            raise EditError("no bench cases: pass --cases FILE")
        for p in paths:
            if not p.is_file():
                raise EditError(f"{p}: no such case file")
        selected = [] if kernel_only else load_cases(paths, kind or None, limit)
        lm = load(model, device, dtype, adapter, False, Progress(False))
        opts = EditOptions(max_new_tokens=max_new_tokens, draft=draft)
        results: dict = {"model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch.")}
        if selected:
            with Bar(console=err, transient=True, disable=not err.is_terminal) as bar:
                task = bar.add_task("bench", total=len(selected) * len(modes))

                def advance(rec: dict) -> None:
                    bar.update(task, advance=1, description=f"{rec['id']} {rec['mode']}")
                    if not err.is_terminal:
                        err.print(f"{rec['id']} {rec['mode']}: {rec['seconds']} s, tests {rec['tests_passed']}, "
                                  f"exact {rec['exact_match']}, error {rec['error']}", markup=False)

                previous = load_previous(reuse, lm.name) if reuse else None
                results = run_bench(lm, selected, modes, opts, advance, previous)
        if kernel or kernel_only:
            results["kernel"] = kernel_bench(lm)
        sys.stdout.write(write_report(results, out))
    except EditError as exc:
        fail(str(exc))


@model_app.command("info")
def model_info(model: str = typer.Argument("bundled:1.5b")) -> None:
    """Show where a model comes from and whether it is ready."""
    from editllm.editor.models import bundled_for, cache_dir

    try:
        bundled = bundled_for(model)
        if bundled is None:
            print(json.dumps({"model": model, "kind": "path or hub id"}))
            return
        converted = cache_dir() / f"{bundled.gguf_name.removesuffix('.gguf')}-bf16"
        parts = bundled.part_paths()
        print(json.dumps({
            "model": f"bundled:{bundled.key}", "title": bundled.title,
            "packages": f"{bundled.package.format(i=1)}..{bundled.parts} == {bundled.version}",
            "parts_bytes": sum(p.stat().st_size for p in parts), "sha256": bundled.sha256,
            "cache": str(converted), "prepared": (converted / "config.json").exists(),
        }, indent=2))
    except EditError as exc:
        fail(str(exc))


@model_app.command("path")
def model_path(model: str = typer.Argument("bundled:1.5b")) -> None:
    """Print the directory the model loads from (preparing it first if needed)."""
    from editllm.editor.models import resolve_model

    try:
        print(resolve_model(model, log=lambda m: err.print(m, markup=False)))
    except EditError as exc:
        fail(str(exc))


@model_app.command("prepare")
def model_prepare(model: str = typer.Argument("bundled:1.5b")) -> None:
    """Assemble, verify and convert a bundled model (or a .gguf) into the cache now."""
    from editllm.editor.models import resolve_model

    start = time.perf_counter()
    try:
        quiet_libraries()
        where = resolve_model(model, log=lambda m: err.print(m, markup=False))
    except EditError as exc:
        fail(str(exc))
    err.print(f"ready in {time.perf_counter() - start:.1f} s: {where}", markup=False)


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":
    main()
