"""`editllm`: parse arguments, build the request, show progress, print. No editing logic lives here.

stdout carries only the diff; progress (on a terminal), stats and errors go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import typer
from editllm.editor.drafter import DEFAULT_DRAFT
from editllm.editor.errors import EditError
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.splitlines()[0])
model_app = typer.Typer(no_args_is_help=True, help="Show, assemble or convert the bundled model.")
app.add_typer(model_app, name="model")
hook_app = typer.Typer(no_args_is_help=True, help="Install or remove the git pre-commit hook.")
app.add_typer(hook_app, name="hook")
HOOK_MARK = "# installed by editllm hook install"
train_app = typer.Typer(no_args_is_help=True, help="Build training data, fine-tune, evaluate (copy mode).")
app.add_typer(train_app, name="train")

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
    """The path as the diff shows it: relative to the repository root inside a git repository (so
    `git apply` and `patch -p1` work from there), else to the working directory."""
    from editllm.editor.gitio import repo_root

    p = Path(path).resolve()
    for base in (repo_root(p.parent), Path.cwd().resolve()):
        if base is None:
            continue
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix().lstrip("/")


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


# Options shared by `fix` and `check`; None means "from the configuration, else the default".
APPLY = typer.Option(False, "--apply", help="Write the edited files instead of printing a diff.")
MODE = typer.Option(None, "--mode", help="rewrite | spec (lossless, faster; default) | copy")
MODEL = typer.Option(None, "--model", "-m", envvar="EDITLLM_MODEL",
                     help="bundled:1.5b (default), bundled:0.5b, an HF model directory, a .gguf file or a hub id.")
DEVICE = typer.Option(None, "--device", help="auto | cpu | cuda")
DTYPE = typer.Option(None, "--dtype", help="auto | float32 | bfloat16 | float16")
MAX_NEW = typer.Option(None, "--max-new-tokens", min=1, help="Cap on generated tokens per file.")
ADAPTER = typer.Option(None, "--adapter", help="A LoRA adapter directory to load on the model.")
FOCUS = typer.Option(True, "--focus/--no-focus",
                     help="rewrite/spec: when the instruction names functions, show the model only those "
                          "(and the imports), then merge them back.")
STATS = typer.Option(False, "--stats", help="Print run statistics as one JSON object on stderr.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress output.")


@dataclass
class Request:
    """Everything one edit run needs, resolved from flags and configuration."""

    sources: list
    instruction: str
    model: str
    device: str
    dtype: str
    opts: object
    adapter: str | None = None
    trust_remote_code: bool = False


def settings(mode, model, device, dtype, start: Path | None = None):
    """The configuration with command-line flags applied on top."""
    from editllm.editor.config import load_config

    config = load_config(start)
    for key, value in (("mode", mode), ("model", model), ("device", device), ("dtype", dtype)):
        config.override(key, value)
    return config


def run_edit(req: Request, apply: bool, stats: bool, quiet: bool, started: float, worktree: bool = False) -> bool:
    """Edit every source, print the checked diff (or write), return whether anything changed."""
    from editllm.editor.diff import apply_to_worktree, checked_diff, write_atomic
    from editllm.editor.edit import MODES, edit_file

    mode = req.opts.mode
    if mode not in MODES:
        raise EditError(f"unknown --mode {mode!r}; choose one of {', '.join(MODES)}")
    results = []
    with Progress(not quiet) as progress:
        lm = load(req.model, req.device, req.dtype, req.adapter, req.trust_remote_code, progress)
        if mode == "copy" and req.adapter is None and lm.name.startswith("bundled:") and not quiet:
            err.print("copy mode on the bundled model without --adapter: the untrained model writes poor "
                      "programs (0 of 24 bench fixes right); train one with `editllm train` or use spec",
                      markup=False, soft_wrap=True)
        for src in req.sources:
            progress.say(f"{src.path} ({mode})")
            result = edit_file(lm, src, req.instruction, req.opts, progress.tokens)
            if result.fallback and not quiet:
                err.print(f"{src.path}: copy mode fell back to spec mode ({result.fallback})", markup=False,
                          soft_wrap=True)
            if result.merged and not quiet:
                err.print(f"{src.path}: the model wrote only part of the file; merged it into place", markup=False,
                          soft_wrap=True)
            results.append(result)
    changes = [(r.source, r.new_text) for r in results]
    diff = checked_diff(changes)
    if apply:
        for src, new in changes:
            if new != src.raw:
                (apply_to_worktree if worktree else write_atomic)(src, new)
    else:
        sys.stdout.write(diff)
        sys.stdout.flush()
    if stats:
        err.print(json.dumps(stats_record(lm, mode, results, started)), markup=False, soft_wrap=True)
    changed = sum(1 for src, new in changes if new != src.raw)
    if not quiet and err.is_terminal:
        err.print(f"{changed} of {len(changes)} file(s) {'written' if apply else 'changed'}")
    return changed > 0


@app.command(context_settings={"allow_interspersed_args": True})
def fix(
    args: list[str] = typer.Argument(..., metavar="FILE... INSTRUCTION",
                                     help="Files to edit ('-' reads stdin), then the instruction (quote it)."),
    apply: bool = APPLY,
    mode: str = MODE,
    model: str = MODEL,
    device: str = DEVICE,
    dtype: str = DTYPE,
    max_new_tokens: int = MAX_NEW,
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    seed: int = typer.Option(0, "--seed"),
    draft: str = typer.Option(DEFAULT_DRAFT, "--draft", hidden=True,
                              help="spec draft schedule: fixed:K or adaptive:START,GROW,MAX,AFTER_MISS"),
    adapter: str = ADAPTER,
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
    stats: bool = STATS,
    quiet: bool = QUIET,
    monotonic: bool = typer.Option(True, "--monotonic/--no-monotonic",
                                   help="copy mode: spans must move forward through the file (off allows moves)."),
    stdin_path: str = typer.Option("stdin", "--path", help="The path to show in the diff for '-' (stdin)."),
    focus: bool = FOCUS,
) -> None:
    """Edit FILE(s) as INSTRUCTION says; print one unified diff (or write with --apply)."""
    from editllm.editor.edit import EditOptions

    started = time.perf_counter()
    try:
        if len(args) < 2:
            raise EditError("usage: editllm fix FILE... INSTRUCTION")
        *paths, instruction = args
        sources = read_sources(paths, instruction, stdin_path)
        if apply and any(s.disk_path is None for s in sources):
            raise EditError("--apply cannot write stdin; drop --apply to get the diff")
        conf = settings(mode, model, device, dtype)
        opts = EditOptions(conf.get("mode"), max_new_tokens, temperature, seed, draft, monotonic=monotonic,
                           focus=focus)
        req = Request(sources, instruction, conf.get("model"), conf.get("device"), conf.get("dtype"), opts,
                      adapter, trust_remote_code)
        run_edit(req, apply, stats, quiet, started)
    except EditError as exc:
        fail(str(exc))


@app.command(context_settings={"allow_interspersed_args": True})
def check(
    args: list[str] = typer.Argument(None, metavar="[PATHS]... [INSTRUCTION]",
                                     help="Files to check, then the instruction unless -i or the config gives it."),
    instruction_opt: str = typer.Option(None, "--instruction", "-i", help="The instruction (else from config)."),
    staged: bool = typer.Option(False, "--staged", help="Check the staged content (the git index), not the files."),
    apply: bool = APPLY,
    mode: str = MODE,
    model: str = MODEL,
    device: str = DEVICE,
    dtype: str = DTYPE,
    max_new_tokens: int = MAX_NEW,
    adapter: str = ADAPTER,
    stats: bool = STATS,
    quiet: bool = QUIET,
    focus: bool = FOCUS,
) -> None:
    """Propose an edit and exit 1 if there is one (0 if none, 2 on errors): the pre-commit convention.

    With --apply the working tree is written and nothing is staged: review, then `git add`.
    """
    from editllm.editor.edit import EditOptions
    from editllm.editor.gitio import open_repo, staged_sources

    started = time.perf_counter()
    try:
        args = list(args or [])
        conf = settings(mode, model, device, dtype)
        instruction = instruction_opt or conf.get("instruction")
        if instruction is None:
            if not args:
                raise EditError("no instruction: pass one, use -i, or set `instruction` in [tool.editllm]")
            *args, instruction = args
        if staged:
            repo = open_repo()
            if repo is None:
                raise EditError("--staged: not inside a git repository")
            sources, skipped = staged_sources(repo, args or None, conf.get("include"), conf.get("exclude"),
                                              int(conf.get("max_file_size")))
            for skip in skipped:
                err.print(f"editllm: skipped {skip.path}: {skip.reason}", markup=False)
            if not instruction.strip():
                raise EditError("the instruction is empty")
        else:
            if not args:
                raise EditError("name files to check, or use --staged")
            sources = read_sources(args, instruction, "stdin")
        if not sources:
            if not quiet:
                err.print("editllm: nothing to check", markup=False)
            raise typer.Exit(0)
        opts = EditOptions(conf.get("mode"), max_new_tokens, focus=focus)
        req = Request(sources, instruction, conf.get("model"), conf.get("device"), conf.get("dtype"), opts, adapter)
        changed = run_edit(req, apply, stats, quiet, started, worktree=staged)
    except EditError as exc:
        fail(str(exc))
    raise typer.Exit(1 if changed else 0)


def read_sources(paths: list[str], instruction: str, stdin_path: str) -> list:
    """Read every file (or stdin for '-') before any model is loaded."""
    from editllm.editor.source import read_source, source_from_text

    if not instruction.strip():
        raise EditError("the instruction is empty")
    sources, seen = [], set()
    for path in paths:
        key = "-" if path == "-" else os.path.realpath(path)
        if key in seen:
            raise EditError(f"{path}: named twice")
        seen.add(key)
        if path == "-":
            sources.append(source_from_text(sys.stdin.buffer.read(), stdin_path))
        else:
            sources.append(read_source(path, display_path(path)))
    return sources


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
    draft: str = typer.Option(DEFAULT_DRAFT, "--draft", help="spec draft schedule."),
    max_new_tokens: int = typer.Option(None, "--max-new-tokens", min=1),
    kernel: bool = typer.Option(False, "--kernel", help="Also time the copy kernel (N tokens in one forward)."),
    kernel_only: bool = typer.Option(False, "--kernel-only", help="Only the copy-kernel table."),
    out: Path = typer.Option(Path("bench-out"), "--out", help="Folder for results.json, report.md, plots."),
    reuse: Path = typer.Option(None, "--reuse", help="Take the rewrite baseline from an earlier --out folder."),
    layout: str = typer.Option("default", "--layout", help="rewrite/spec prompt layout: default, instruction-first, "
                               "no-complete-wording, no-prefill, no-system."),
    copy_prefill: bool = typer.Option(True, "--copy-prefill/--no-copy-prefill",
                                      help="copy/oracle: append copied lines to the KV cache (off: ablation)."),
    focus: bool = FOCUS,
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
        opts = EditOptions(max_new_tokens=max_new_tokens, draft=draft, layout=layout, prefill_copies=copy_prefill,
                           focus=focus)
        results: dict = {"model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch.")}
        if selected:
            with Bar(console=err, transient=True, disable=not err.is_terminal) as bar:
                task = bar.add_task("bench", total=len(selected) * len(modes))

                def advance(rec: dict) -> None:
                    bar.update(task, advance=1, description=f"{rec['id']} {rec['mode']}")
                    if not err.is_terminal:
                        err.print(f"{rec['id']} {rec['mode']}: {rec['seconds']} s, tests {rec['tests_passed']}, "
                                  f"exact {rec['exact_match']}, error {rec['error']}", markup=False)

                previous = None
                if reuse:
                    previous = load_previous(reuse, lm.name)
                results = run_bench(lm, selected, modes, opts, advance, previous)
        results["adapter"] = adapter  # the same base model name with and without one
        results["focus"] = focus
        if kernel or kernel_only:
            results["kernel"] = kernel_bench(lm)
        sys.stdout.write(write_report(results, out))
    except EditError as exc:
        fail(str(exc))


def hook_path():
    from editllm.editor.gitio import open_repo

    repo = open_repo()
    if repo is None:
        raise EditError("not inside a git repository")
    hooks = repo.config_reader().get_value("core", "hooksPath", "") or str(Path(repo.git_dir) / "hooks")
    base = Path(hooks) if Path(hooks).is_absolute() else Path(repo.working_tree_dir) / hooks
    return base / "pre-commit"


@hook_app.command("install")
def hook_install(
    instruction: str = typer.Option(None, "--instruction", "-i",
                                    help="Instruction for the check (else `instruction` from the config)."),
    force: bool = typer.Option(False, "--force", help="Replace a pre-commit hook editllm did not write."),
) -> None:
    """Write a pre-commit hook that runs `editllm check --staged` and blocks the commit on a proposal."""
    import shlex

    try:
        path = hook_path()
        if path.exists() and HOOK_MARK not in path.read_text(errors="replace") and not force:
            raise EditError(f"{path} exists and was not written by editllm; use --force to replace it")
        command = [sys.executable, "-m", "editllm.cli.main", "check", "--staged", "--quiet"]
        if instruction:
            command += ["-i", instruction]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "#!/bin/sh\n"
            f"{HOOK_MARK}\n"
            "# Blocks the commit when editllm proposes a change to the staged files (exit 1) and prints\n"
            "# the diff; apply it with `git apply`, stage, and commit again. Skip once: git commit --no-verify\n"
            f"exec {shlex.join(command)}\n"
        )
        path.chmod(0o755)
        err.print(f"installed {path}", markup=False)
    except EditError as exc:
        fail(str(exc))


@hook_app.command("uninstall")
def hook_uninstall() -> None:
    """Remove the pre-commit hook if editllm wrote it; leave any other hook alone."""
    try:
        path = hook_path()
        if not path.exists():
            err.print("no pre-commit hook installed", markup=False)
            return
        if HOOK_MARK not in path.read_text(errors="replace"):
            raise EditError(f"{path} was not written by editllm; leaving it alone")
        path.unlink()
        err.print(f"removed {path}", markup=False)
    except EditError as exc:
        fail(str(exc))


@app.command("config")
def show_config(
    mode: str = MODE, model: str = MODEL, device: str = DEVICE, dtype: str = DTYPE,
) -> None:
    """Show the effective configuration and where each value comes from."""
    try:
        conf = settings(mode, model, device, dtype)
    except EditError as exc:
        fail(str(exc))
    width = max(len(k) for k in conf.values)
    for key, value in conf.values.items():
        print(f"{key:<{width}}  {json.dumps(value)}  ({conf.sources[key]})")


@train_app.command("data")
def train_data(
    out: Path = typer.Option(..., "--out", help="JSONL file to write."),
    repo: Path = typer.Option(None, "--repo", help="Mine (before, after, message) pairs from this git history."),
    rev_range: str = typer.Option(None, "--rev-range", help="e.g. v1.0..main (default: all of HEAD)."),
    synthetic: int = typer.Option(0, "--synthetic", min=0, help="Add N programmatic edits of public code."),
    seed: int = typer.Option(0, "--seed"),
    model: str = typer.Option("bundled:1.5b", "--model", help="Whose tokenizer/chat template builds the prompts."),
    distill: int = typer.Option(0, "--distill", min=0, help="Add N edits rewrite mode made with --model and that "
                                "passed the checks (resumes from OUT's `.distill.jsonl.gz` beside it)."),
) -> None:
    """Write copy-mode training examples (prompt + oracle program); refuses bench overlap (HumanEval, held-out)."""
    from editllm.training.data import eval_fingerprints, mine_git, overlaps_eval, read_jsonl, synthesize, write_jsonl

    try:
        examples = mine_git(repo, rev_range) if repo else []
        if synthetic:
            examples += synthesize(synthetic, seed)
        if distill:
            from editllm.training.distill import distill as run_distill

            cache = out.with_name(out.name.split(".")[0] + ".distill.jsonl.gz")
            outcomes = run_distill(load(model, "auto", "auto", None, False, Progress(False)), distill, cache, seed)
            err.print(f"distilled into {cache}: {dict(outcomes)}", markup=False)
            examples += read_jsonl(cache)[:distill]
        prints = eval_fingerprints()
        kept = [ex for ex in examples if not overlaps_eval(ex, prints)]
        if len(kept) < len(examples):
            err.print(f"refused {len(examples) - len(kept)} example(s) that share functions with the bench's "
                      "evaluation cases (HumanEval, held-out)", markup=False)
        if not kept:
            raise EditError("no training examples (give --repo, --synthetic N and/or --distill N)")
        from editllm.editor.models import resolve_model
        from transformers import AutoTokenizer

        quiet_libraries()
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(model, log=lambda m: err.print(m, markup=False)))
        write_jsonl(kept, out, tokenizer)
        err.print(f"wrote {len(kept)} example(s) to {out}", markup=False)
    except EditError as exc:
        fail(str(exc))


@train_app.command("run")
def train_run(
    data: Path = typer.Option(..., "--data", help="JSONL from `editllm train data`."),
    out: Path = typer.Option(..., "--out", help="Folder for the adapter (or full weights) and checkpoints."),
    model: str = typer.Option("bundled:1.5b", "--model", "-m"),
    lora: int = typer.Option(16, "--lora", min=0, help="LoRA rank; 0 = full fine-tuning."),
    steps: int = typer.Option(100, "--steps", min=1),
    lr: float = typer.Option(2e-4, "--lr"),
    batch_tokens: int = typer.Option(4096, "--batch-tokens", min=64),
    max_len: int = typer.Option(4096, "--max-len", min=64),
    save_every: int = typer.Option(50, "--save-every", min=1),
    device: str = typer.Option("auto", "--device"),
    dtype: str = typer.Option("auto", "--dtype"),
    seed: int = typer.Option(0, "--seed"),
    max_minutes: float = typer.Option(None, "--max-minutes", min=0, help="Stop early and save after this long."),
) -> None:
    """Supervised fine-tuning on program tokens (copied text and prompt masked); resumes from --out."""
    from editllm.training.data import read_jsonl
    from editllm.training.sft import TrainConfig, train
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    try:
        if not data.is_file():
            raise EditError(f"{data}: no such file")
        examples = read_jsonl(data)
        lm = load(model, device, dtype, None, False, Progress(False))
        cfg = TrainConfig(steps, lr, lora, batch_tokens, max_len, seed, save_every,
                          max_seconds=None if max_minutes is None else 60 * max_minutes)
        columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TextColumn("loss {task.fields[loss]}"), TimeRemainingColumn()]
        with Bar(*columns, console=err, disable=not err.is_terminal) as bar:
            task = bar.add_task("train", total=steps, loss="–")

            def on_step(step: int, loss: float) -> None:
                bar.update(task, completed=step, loss=f"{loss:.4f}")
                if not err.is_terminal:
                    err.print(f"step {step}/{steps} loss {loss:.4f}", markup=False)

            _, history = train(lm.model, lm.tokenizer, examples, cfg, out, on_step)
        if history:
            err.print(f"saved to {out}: loss {history[0]['loss']} -> {history[-1]['loss']}", markup=False)
    except (EditError, ValueError) as exc:
        fail(str(exc))


@train_app.command("eval")
def train_eval(
    adapter: str = typer.Option(..., "--adapter", help="The fine-tuned adapter (or full-weights directory)."),
    model: str = typer.Option("bundled:1.5b", "--model", "-m"),
    cases: list[Path] = typer.Option(None, "--cases"),
    kind: list[str] = typer.Option(None, "--kind"),
    limit: int = typer.Option(None, "--limit", min=1),
    device: str = typer.Option("auto", "--device"),
    dtype: str = typer.Option("auto", "--dtype"),
) -> None:
    """Copy-mode exact match, tests passed and speed on the bench set: base model vs fine-tuned."""
    from editllm.editor.bench import load_cases
    from editllm.training.evaluate import compare, table

    try:
        selected = load_cases(list(cases or default_cases()), kind or None, limit)
        base = load(model, device, dtype, None, False, Progress(False))
        tuned = load(model, device, dtype, adapter, False, Progress(False))
        sys.stdout.write(table(compare(base, tuned, selected)))
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
