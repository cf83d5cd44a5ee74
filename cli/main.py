"""`editllm`: parse arguments, build the request, show progress, print. No editing logic lives here
(that is `editllm.api`).

stdout carries only the diff; progress (on a terminal), stats and errors go to stderr. Every failure
of every command becomes one line on stderr and exit 2 in one place (`Guarded`), because exit 1 means
"a change is proposed" to `check` and to git hooks.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import signal
import sys
import threading
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import typer
from editllm import api
from editllm.editor.config import DEFAULT_MODEL, CopyKV, CopyRequests, Device, Dtype, Engine, Mode
from editllm.editor.drafter import DEFAULT_DRAFT
from editllm.editor.errors import EditError, few
from editllm.editor.signals import handling
from editllm.editor.source import check_name
from rich.console import Console

try:  # typer >= 0.2x ships its own copy of click
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer on the real click
    from click.exceptions import NoArgsIsHelpError, UsageError


class Guarded(typer.core.TyperGroup):
    """The one place where failures become exit codes, for every command and subcommand.

    EditError: its message. A bad flag value: click's message. An OSError (a full disk, a read-only
    folder): its reason and file. Anything else is a bug: "internal error: Type: message" plus a hint,
    never a traceback (unless --debug or EDITLLM_DEBUG=1) and never exit 1. Ctrl-C: exit 130; SIGTERM and
    SIGHUP: 143 and 129, after every `finally`. All before anything is written, since commands write only
    after every file's edit succeeded, and the writes hold these signals back until they are done.
    """

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        """The root's own options, parsed before any subcommand runs: `--debug` is taken anywhere on the line
        (`editllm fix a.py "..." --debug`, as the internal-error hint says), and a bad root option or a help
        text stdout cannot take is one line too."""
        cut = args.index("--") if "--" in args else len(args)
        debug = [a for a in args[:cut] if a == "--debug"]
        args = debug[:1] + [a for a in args[:cut] if a != "--debug"] + args[cut:]
        try:
            return super().parse_args(ctx, args)
        except (NoArgsIsHelpError, typer.Exit):
            raise
        except UsageError as exc:
            fail(exc.format_message())
        except EditError as exc:  # `editllm --version >&-`
            fail(str(exc))
        except OSError as exc:  # `editllm --help > /dev/full`
            to_devnull(sys.stdout)
            fail(os_message(exc))

    def invoke(self, ctx: typer.Context):
        with handling((signal.SIGTERM, signal.SIGHUP), terminated):
            return self._invoke(ctx)

    def _invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, NoArgsIsHelpError):  # Exit and Abort are RuntimeErrors in typer
            raise
        except UsageError as exc:
            fail(exc.format_message())
        except EditError as exc:
            show_traceback()
            fail(str(exc))
        except KeyboardInterrupt as exc:
            if isinstance(exc, Terminated):
                fail("terminated", 128 + exc.signum)
            fail("interrupted", 130)
        except OSError as exc:  # the machine's, not a bug: a full disk, a read-only folder, a permission
            show_traceback()
            fail(os_message(exc))
        except Exception as exc:  # noqa: BLE001 - the point of this handler
            show_traceback()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            if "(os error " in first:  # the same from Rust (tokenizers writing to a full disk)
                fail(first)
            hint = "" if debug_enabled() else " (rerun with --debug for the traceback)"
            fail(f"internal error: {type(exc).__name__}{': ' + first if first else ''}{hint}")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is, so that every `finally` (a temp file's
    removal) runs and the writes of `--apply` are deferred past it (`editor.diff.uninterrupted`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def terminated(signum: int, frame) -> None:
    """SIGTERM and SIGHUP's handler while a command runs (`nohup editllm ...` keeps SIGHUP ignored)."""
    raise Terminated(signum)


def os_message(exc: OSError) -> str:
    """One line for an environment failure, with the way out where it is the cache's."""
    from editllm.editor.modelspec import cache_dir

    where = f": {exc.filename}" if exc.filename else ""
    text = f"{exc.strerror or exc}{where}"
    try:
        cache = str(cache_dir())
    except EditError:
        return text
    if exc.filename and str(exc.filename).startswith(cache):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            text += "; free some space there or set EDITLLM_CACHE to another folder"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            text += "; set EDITLLM_CACHE to a writable folder"
        else:
            text += " (the cache: EDITLLM_CACHE chooses another folder)"
    return text


DEBUG = {"on": False}  # set by the root callback on every invocation (--debug or EDITLLM_DEBUG=1)


def debug_enabled() -> bool:
    return DEBUG["on"]


def show_traceback() -> None:
    if debug_enabled():
        traceback.print_exc(file=sys.stderr)


app = typer.Typer(cls=Guarded, add_completion=False, no_args_is_help=True,
                  help="Edit code and text files with a local LLM and print a unified diff that `git apply` and "
                       "`patch -p1` accept (stdout); progress and errors go to stderr.")
model_app = typer.Typer(no_args_is_help=True, help="Show, assemble or convert the bundled model.")
app.add_typer(model_app, name="model")
hook_app = typer.Typer(no_args_is_help=True, help="Install or remove the git pre-commit hook.")
app.add_typer(hook_app, name="hook")
train_app = typer.Typer(no_args_is_help=True, help="Build training data, fine-tune, evaluate (copy mode).")
app.add_typer(train_app, name="train")

class _Stderr:
    """sys.stderr, looked up at each write (tests swap it), whose failures are dropped: a full disk or a closed
    pipe behind stderr must not turn `check`'s exit 0 ("no change") into a traceback's exit 1, which a hook
    reads as "change proposed". After a failure the descriptor points at /dev/null, so that the interpreter's
    own flush at exit succeeds too."""

    @staticmethod
    def stream():
        """sys.stderr, or the stream behind it while a live display (the progress spinner) has put rich's proxy
        there: that proxy prints to this very console, so writing to it would loop forever (a hang on every
        terminal run, found in session 25)."""
        return getattr(sys.stderr, "rich_proxied_file", sys.stderr)

    def write(self, text: str) -> int:
        stream = self.stream()
        try:
            n = stream.write(text)
            stream.flush()
            return n
        except (OSError, ValueError, AttributeError):
            to_devnull(stream)
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.stream().flush()

    def isatty(self) -> bool:
        try:
            return self.stream().isatty()
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self) -> int:
        return self.stream().fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream(), "encoding", None) or "utf-8"


def to_devnull(stream) -> None:
    """Point a failed stream's descriptor at /dev/null and let its buffer drain there."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
    with contextlib.suppress(OSError, ValueError):
        stream.flush()


err = Console(file=_Stderr(), highlight=False, emoji=False)  # a file named `a:fire:.py` is named so


def _version() -> str:
    try:
        return version("editllm")
    except PackageNotFoundError:
        return "unknown"


def _version_callback(value: bool) -> None:
    if value:
        refuse_closed_stdout("the version")
        print(f"editllm {_version()}", flush=True)
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                      help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of a failure (anywhere on the line; "
                                                      "also EDITLLM_DEBUG=1)."),
) -> None:
    """Edit files with a local LLM and print a unified diff."""
    # read by Guarded, which runs the subcommand after this callback. The variable is read leniently: a value
    # click cannot parse as a flag (`EDITLLM_DEBUG=2`) must not break every command, a pre-commit hook's too.
    DEBUG["on"] = debug or os.environ.get("EDITLLM_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, a non-zero exit."""
    message = message.replace("\r", "\\r").replace("\n", "\\n")  # one line, whatever a name holds
    err.print(f"editllm: error: {message}", markup=False, soft_wrap=True)
    raise typer.Exit(code)


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


def write_diff(text: str) -> None:
    """The diff on stdout as UTF-8 bytes whatever the locale's encoding: `patch` and `git apply` match its
    lines byte for byte against files that are UTF-8. A reader gone (`| true`, a pager quit early) or a full
    disk behind it is one line and exit 2: the diff did not arrive."""
    refuse_closed_stdout()
    try:
        sys.stdout.flush()
        out = getattr(sys.stdout, "buffer", None)
        if out is None:
            sys.stdout.write(text)
        else:
            out.write(text.encode("utf-8"))
        sys.stdout.flush()
    except OSError as exc:
        to_devnull(sys.stdout)
        raise EditError(f"cannot write the diff to stdout ({exc.strerror or exc})") from None


def refuse_closed_stdout(what: str = "the diff") -> None:
    """Before the model loads: a diff (a report, a path) needs somewhere to go (`>&-` closes it)."""
    if sys.stdout is None:
        way_out = " (redirect it, or use --apply)" if what == "the diff" else " (redirect it)"
        raise EditError(f"stdout is closed: nowhere to print {what}{way_out}")


def note(message: str) -> None:
    """A one-line note on stderr (never markup: paths and model text may contain brackets)."""
    err.print(message, markup=False, soft_wrap=True)


def load_logger(progress: Progress):
    """Model preparation messages: in the live status on a terminal, else one line each on stderr."""
    return lambda msg: progress.say(msg) if progress.enabled else note(msg)


def check_model(model: str, adapter: str | None) -> None:
    """Refuse a model spec or adapter that names nothing before a command imports torch (seconds)."""
    api.check_model_spec(model)
    if adapter is not None:
        api.check_adapter(adapter)


def load(model: str, device: str, dtype: str, adapter: str | None, trust_remote_code: bool, progress: Progress,
         engine: str = "torch", batch_invariant: bool = False):
    progress.say(f"loading {model}")
    return api.load_model(model, device, dtype, adapter, trust_remote_code, log=load_logger(progress), engine=engine,
                          batch_invariant=batch_invariant)


# Options shared by `fix` and `check`; None means "from the configuration, else the default".
APPLY = typer.Option(False, "--apply", help="Write the edited files instead of printing a diff.")
MODE = typer.Option(None, "--mode", help="rewrite | spec (lossless, faster; default) | copy")
MODEL = typer.Option(None, "--model", "-m", envvar="EDITLLM_MODEL",
                     help=f"{DEFAULT_MODEL} (default), bundled:0.5b, an HF model directory, a .gguf file or a hub id.")
DEVICE = typer.Option(None, "--device", help="auto | cpu | cuda")
DTYPE = typer.Option(None, "--dtype", help="auto | float32 | bfloat16 | float16")
ENGINE = typer.Option(None, "--engine", help="auto (llama.cpp for a GGUF on the CPU, static on CUDA, else "
                                               "transformers) | torch | llamacpp | static (a static cache and CUDA "
                                               "graphs over the transformers model)")
MAX_NEW = typer.Option(None, "--max-new-tokens", min=1, help="Cap on generated tokens per file.")
ADAPTER = typer.Option(None, "--adapter", help="A LoRA adapter directory to load on the model (copy mode on "
                       "bundled:1.5b loads the shipped span selector without it).")
NO_ADAPTER = typer.Option(False, "--no-adapter", help="Copy mode on the base model, without the shipped span "
                          "selector.")
FOCUS = typer.Option(True, "--focus/--no-focus",
                     help="When the instruction names functions, methods (Cls.method) or constants, show the "
                          "model only those (and the imports), then merge them back (copy mode numbers the lines it "
                          "is shown).")
ALLOW_DELETIONS = typer.Option(False, "--allow-deletions",
                               help="Accept output that drops code the instruction does not name (else it is "
                                    "merged back as a fragment, or refused).")
COPY_KV = typer.Option(None, "--copy-kv",
                       help="copy mode: reread (default) feeds copied lines through the model; reuse takes their "
                            "cache entries from the prompt (faster, approximate; which is the default waits for the "
                            "next trained selector: see README).")
COPY_REQUESTS = typer.Option("loop", "--copy-requests",
                             help="copy mode through --server: loop (a request per copy tag, the copied lines in "
                                  "context: local copy mode's program) or one (the whole program in one request, "
                                  "written without them: fewer round trips, a weaker program).")
SERVER = typer.Option(None, "--server", envvar="EDITLLM_SERVER",
                      help="Edit through a llama-server, vLLM or SGLang server at this URL (detected; it serves "
                           "--model; config key `server`).")
JOBS = typer.Option(1, "--jobs", "-j", min=1, help="Files edited at once: requests to --server, or decoded "
                                                  "together in one batch on the llama.cpp engine.")
RETRIES = typer.Option(2, "--retries", min=0, help="Retries per file when the server is down or busy.")
TIMEOUT = typer.Option(None, "--timeout", min=1.0, help="Seconds per file (each request to the server and its "
                                                           "retries); with --server only.")
JOURNAL = typer.Option(None, "--journal", help="Folder of the resume journal (.editllm-journal.jsonl; default: the "
                                                  "cache). Giving it, --server or --jobs makes a many-files run "
                                                  "(each file written as it finishes; a rerun resumes).")
BATCH_INVARIANT = typer.Option(None, "--batch-invariant/--no-batch-invariant",
                               help="llama.cpp kernels whose results do not depend on the batch: spec equals "
                                    "rewrite bit for bit, and a file edits the same alone or through a server "
                                    "started so (not yet in --jobs); slower (config key `batch_invariant`).")
STATS = typer.Option(False, "--stats", help="Print run statistics as one JSON object on stderr.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress output.")


def settings(mode, model, device, dtype, start: Path | None = None, engine=None, copy_kv=None, server=None,
             batch_invariant=None):
    """The configuration with command-line flags applied on top."""
    from editllm.editor.config import load_config

    config = load_config(start)
    for key, value in (("mode", mode), ("model", model), ("device", device), ("dtype", dtype), ("engine", engine),
                       ("copy_kv", copy_kv), ("server", server), ("batch_invariant", batch_invariant)):
        config.override(key, value)
    return config


def check_decoding(draft: str, temperature: float) -> None:
    """Refuse a draft schedule or temperature that cannot decode, before the model loads: the library's check
    (`api.check_options`), its message naming the flag (each starts with the option's name)."""
    try:
        api.check_options(draft=draft, temperature=temperature)
    except EditError as exc:
        raise EditError(f"--{exc}") from None


def refuse_local_timeout(conf, timeout: float | None) -> None:
    """--timeout bounds a server's requests; a local model's decode is not interrupted midway, so a run that
    asked for a bound and silently had none (a pre-commit hook's time limit) is refused instead."""
    if timeout is not None and not conf.get("server"):
        raise EditError(f"--timeout {timeout:g} bounds requests to a server (--server URL); a local model runs "
                        "each file to its end: drop --timeout")


def refuse_unwritable(sources: list, staged: bool = False) -> None:
    """--apply: refuse before the model loads a source that has no file to write (stdin; a staged file
    deleted from the working tree), rather than after the edit, with other files already written."""
    for src in sources:
        if api.read_only(src):
            raise EditError(f"{src.path}: read-only (mode {src.mode & 0o777:o}); --apply will not write it")
        if src.disk_path is None:
            if staged:
                raise EditError(f"{src.path}: staged, but the working tree holds no regular file there "
                                  "(deleted, or a symbolic link); --apply cannot write it")
            raise EditError("--apply cannot write stdin; drop --apply to get the diff")


def edit_session(conf, adapter: str | None, no_adapter: bool = False, **options) -> api.EditSession:
    """The session `fix` and `check` edit with: model, mode, device, dtype and engine from the
    configuration (flags applied), the rest from their own flags."""
    if adapter is not None and no_adapter:
        raise EditError("--adapter and --no-adapter contradict each other: give one")
    if not conf.get("server"):  # before anything is made for the run (a --journal folder), not at the model's load
        check_model(conf.get("model"), adapter)
    return api.EditSession(conf.get("model"), mode=conf.get("mode"), device=conf.get("device"),
                           dtype=conf.get("dtype"), engine=conf.get("engine"), adapter=adapter,
                           use_selector=not no_adapter,
                           copy_kv=conf.get("copy_kv"), server=conf.get("server"),
                           batch_invariant=bool(conf.get("batch_invariant")), **options)


def batched(session: api.EditSession, jobs: int, journal: str | None) -> bool:
    """Many-files runs (per-file outcomes, retries, journal) when a server, jobs or a journal is asked for."""
    return session.server is not None or jobs > 1 or journal is not None


def run_batch(session: api.EditSession, sources: list, instruction: str, apply: bool, stats: bool, quiet: bool,
              started: float, jobs: int, retries: int, timeout: float | None, journal: str | None,
              worktree: bool = False):
    """Edit through `api.batch`: a progress bar on stderr, diffs of the files that succeeded in input order
    on stdout (or written as each finishes, with --apply), failures listed with their reasons, a summary."""
    from editllm.api.batch import SHARED_LIMIT, Journal
    from editllm.editor.modelspec import cache_dir

    folder = Path(journal) if journal else cache_dir() / "journal"
    with Progress(not quiet) as progress:
        session.status = lambda msg: None  # the bar is the status: threads would fight over one label
        session.load_log = load_logger(progress)
        session.log = (lambda msg: None) if quiet else note

        def bar(done: int, total: int, failed: int) -> None:
            width = 30
            fill = width * done // max(1, total)
            progress.say(f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} files"
                         + (f", {failed} failed" if failed else ""))

        report = session.edit_many(sources, instruction, jobs=jobs, retries=retries, timeout=timeout,
                                   journal=Journal(folder, None if journal else SHARED_LIMIT), apply=apply,
                                   worktree=worktree, progress=bar,
                                   log=session.log)
    if not apply:
        write_diff("".join(o.diff for o in report.outcomes if o.error is None))
    for o in report.failed:
        note(f"editllm: failed {o.path}: {o.error.removeprefix(f'{o.path}: ')}")  # most errors name the file
    if stats:
        edits = [o.edit for o in report.outcomes if o.edit is not None]
        record = api.stats_record(session.lm, session.mode, edits, started)
        record |= {"files_failed": len(report.failed), "files_resumed": sum(o.resumed for o in report.outcomes),
                   "jobs": jobs, "server": session.server}
        note(json.dumps(record))
    if not quiet:
        note(report.summary())
    return report


def run_edit(session: api.EditSession, paths: list, instruction: str, apply: bool, stats: bool, quiet: bool,
             started: float, worktree: bool = False, stdin_path: str = "stdin") -> bool:
    """Edit through the API, print the checked diff (or write), return whether anything changed."""
    with Progress(not quiet) as progress:
        session.status, session.on_tokens = progress.say, progress.tokens
        session.load_log = load_logger(progress)
        session.log = (lambda msg: None) if quiet else note
        try:
            edits = session.edit(paths, instruction, stdin_path)
        except EditError as exc:  # --stats still says what ran, once a model did (a script reads it per run)
            if getattr(exc, "others_edited", None):  # another file's edit is lost to this one: the way to keep it
                exc.args = (f"{exc} (edit the files apart, or add --journal DIR to give each file its own outcome)",
                            *exc.args[1:])
            if stats and session.loaded is not None:
                note(json.dumps(api.stats_record(session.loaded, session.mode, [], started) | {"error": str(exc)}))
            raise
    record = api.stats_record(session.lm, session.mode, edits, started) if stats else None
    changed = sum(1 for e in edits if e.changed)
    if apply:
        api.write_edits(edits, worktree)
        if changed and not quiet:  # said off a terminal too: a hook that fails with exit 1 and says nothing puzzles
            note(written_note([e.path for e in edits if e.changed], worktree))
    else:
        write_diff("".join(e.diff for e in edits))
    if record is not None:
        note(json.dumps(record))
    if not quiet:
        if changed == 0:
            note("no change proposed")
        elif err.is_terminal and not apply:
            err.print(f"{changed} of {len(edits)} file(s) changed")
    return changed > 0


def written_note(paths: list[str], worktree: bool) -> str:
    """What --apply wrote, in one line; after `check --staged`, that it is in the working tree and not staged."""
    return f"wrote {few(paths)}" + (" in the working tree (not staged: review, then git add)" if worktree else "")


@app.command(context_settings={"allow_interspersed_args": True})
def fix(
    args: list[str] = typer.Argument(..., metavar="FILE... INSTRUCTION",
                                     help="Files to edit ('-' reads stdin), then the instruction (quote it)."),
    apply: bool = APPLY,
    mode: Mode | None = MODE,
    model: str = MODEL,
    device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE,
    engine: Engine | None = ENGINE,
    max_new_tokens: int = MAX_NEW,
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    seed: int = typer.Option(0, "--seed"),
    draft: str = typer.Option(DEFAULT_DRAFT, "--draft",
                              help="spec draft schedule: cost[:MAX], fixed:K or adaptive:START,GROW,MAX,AFTER_MISS"),
    adapter: str = ADAPTER,
    no_adapter: bool = NO_ADAPTER,
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                           help="Let transformers run a model folder's own code."),
    stats: bool = STATS,
    quiet: bool = QUIET,
    monotonic: bool = typer.Option(True, "--monotonic/--no-monotonic",
                                   help="copy mode: spans must move forward through the file (off allows moves)."),
    stdin_path: str = typer.Option("stdin", "--path", help="The path to show in the diff for '-' (stdin)."),
    focus: bool = FOCUS,
    allow_deletions: bool = ALLOW_DELETIONS,
    copy_kv: CopyKV | None = COPY_KV,
    server: str = SERVER,
    copy_requests: CopyRequests = COPY_REQUESTS,
    jobs: int = JOBS,
    retries: int = RETRIES,
    timeout: float = TIMEOUT,
    journal: str = JOURNAL,
    batch_invariant: bool | None = BATCH_INVARIANT,
) -> None:
    """Edit FILE(s) as INSTRUCTION says; print one unified diff (or write with --apply)."""
    started = time.perf_counter()
    if len(args) < 2:
        raise EditError("usage: editllm fix FILE... INSTRUCTION")
    *paths, instruction = args
    if os.path.isfile(instruction):  # `fix a.py b.py`: a file where the instruction goes
        raise EditError(f"no instruction: {instruction} is a file; the instruction comes after the files")
    check_decoding(draft, temperature)
    if stdin_path != "stdin" and "-" not in paths:
        raise EditError("--path names stdin's file in the diff: it needs '-' among the files")
    if not stdin_path.strip() or stdin_path.endswith("/") or stdin_path.startswith("/") \
            or ".." in Path(stdin_path).parts:
        raise EditError(f"--path {stdin_path!r}: give a relative file name to show in the diff (no '..')")
    check_name(stdin_path)
    sources = api.read_sources(paths, instruction, stdin_path, for_diff=not apply)
    if apply:
        refuse_unwritable(sources)
    else:
        refuse_closed_stdout()
    conf = settings(mode, model, device, dtype, engine=engine, copy_kv=copy_kv, server=server,
                    batch_invariant=batch_invariant)
    if copy_requests != "loop" and not conf.get("server"):
        raise EditError(f"--copy-requests {copy_requests} is for copy mode through a server: add --server URL")
    refuse_local_timeout(conf, timeout)
    session = edit_session(conf, adapter, no_adapter, trust_remote_code=trust_remote_code,
                           max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, draft=draft,
                           monotonic=monotonic, focus=focus, allow_deletions=allow_deletions,
                           copy_requests=copy_requests)
    if batched(session, jobs, journal):
        report = run_batch(session, sources, instruction, apply, stats, quiet, started, jobs, retries, timeout,
                           journal)
        raise typer.Exit(report.exit_code())
    run_edit(session, sources, instruction, apply, stats, quiet, started)


@app.command(context_settings={"allow_interspersed_args": True})
def check(
    args: list[str] = typer.Argument(None, metavar="[PATHS]... [INSTRUCTION]",
                                     help="Files to check, then the instruction unless -i or the config gives it."),
    instruction_opt: str = typer.Option(None, "--instruction", "-i", help="The instruction (else from config)."),
    staged: bool = typer.Option(False, "--staged", help="Check the staged content (the git index), not the files."),
    apply: bool = APPLY,
    mode: Mode | None = MODE,
    model: str = MODEL,
    device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE,
    engine: Engine | None = ENGINE,
    max_new_tokens: int = MAX_NEW,
    adapter: str = ADAPTER,
    no_adapter: bool = NO_ADAPTER,
    stats: bool = STATS,
    quiet: bool = QUIET,
    focus: bool = FOCUS,
    allow_deletions: bool = ALLOW_DELETIONS,
    copy_kv: CopyKV | None = COPY_KV,
    server: str = SERVER,
    jobs: int = JOBS,
    retries: int = RETRIES,
    timeout: float = TIMEOUT,
    journal: str = JOURNAL,
    batch_invariant: bool | None = BATCH_INVARIANT,
) -> None:
    """Propose an edit and exit 1 if there is one (0 if none, 2 on errors): the pre-commit convention.

    With --apply the working tree is written and nothing is staged: review, then `git add`.
    """
    started = time.perf_counter()
    args = list(args or [])
    conf = settings(mode, model, device, dtype, engine=engine, copy_kv=copy_kv, server=server,
                    batch_invariant=batch_invariant)
    refuse_local_timeout(conf, timeout)  # before "nothing to check": a hook's bad flag fails on every commit
    instruction = instruction_opt if instruction_opt is not None else conf.get("instruction")
    if instruction is None:
        if not args:
            raise EditError("no instruction: pass one, use -i, or set `instruction` in [tool.editllm]")
        *args, instruction = args
        # `check app.py`, or the pre-commit framework's `check --staged a.py b.py` without `args: [-i, ...]`
        if os.path.isfile(instruction):
            raise EditError(f"no instruction: {instruction} is a file; pass the instruction after the files, "
                            "use -i, or set `instruction` in [tool.editllm]")
    if not instruction.strip():
        raise EditError("the instruction is empty")
    if staged:
        sources, skipped = api.staged_files(args, conf.get("include"), conf.get("exclude"),
                                            int(conf.get("max_file_size")))
        for skip in skipped:
            err.print(f"editllm: skipped {skip.path}: {skip.reason}", markup=False, soft_wrap=True)
    else:
        if not args:
            raise EditError("name files to check, or use --staged")
        sources = api.read_sources(args, instruction, for_diff=not apply)
    if apply:
        refuse_unwritable(sources, staged)
    else:
        refuse_closed_stdout()
    if not sources:
        if not quiet:
            err.print("editllm: nothing to check", markup=False)
        raise typer.Exit(0)
    session = edit_session(conf, adapter, no_adapter, max_new_tokens=max_new_tokens, focus=focus,
                           allow_deletions=allow_deletions, check=True)
    if batched(session, jobs, journal):
        report = run_batch(session, sources, instruction, apply, stats, quiet, started, jobs, retries, timeout,
                           journal, worktree=staged)
        raise typer.Exit(report.exit_code(check=True))
    changed = run_edit(session, sources, instruction, apply, stats, quiet, started, worktree=staged)
    raise typer.Exit(1 if changed else 0)


@app.command()
def bench(
    mode: str = typer.Option("rewrite,spec,hf-pld", "--mode", help="Comma list of rewrite,spec,copy,copy-reuse (copy "
                             "with --copy-kv reuse, paired with copy),oracle,hf-pld,hf-greedy, and llama.cpp's peers "
                             "server,server-ngram,server-ngram-whole,llamacpp-greedy."),
    cases: list[Path] = typer.Option(None, "--cases", help="JSONL case file(s); default: the repo's benchmarks/cases."),
    limit: int = typer.Option(None, "--limit", min=1, help="Run N cases, spread over file sizes."),
    kind: list[str] = typer.Option(None, "--kind", help="Only cases of this kind (bugfix, rename, ...)."),
    min_lines: int = typer.Option(None, "--min-lines", min=1, help="Only cases whose file has at least N lines."),
    max_lines: int = typer.Option(None, "--max-lines", min=1, help="Only cases whose file has at most N lines."),
    model: str = MODEL,
    device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE,
    adapter: str = typer.Option(None, "--adapter", help="An adapter for copy mode (default: the shipped span "
                                "selector of a bundled model)."),
    no_adapter: bool = NO_ADAPTER,
    draft: str = typer.Option(DEFAULT_DRAFT, "--draft", help="spec draft schedule."),
    max_new_tokens: int = typer.Option(None, "--max-new-tokens", min=1),
    kernel: bool = typer.Option(False, "--kernel", help="Also time the copy kernel (N tokens in one forward)."),
    kernel_only: bool = typer.Option(False, "--kernel-only", help="Only the copy-kernel table."),
    out: str = typer.Option("bench-out", "--out", help="Folder for results.json, report.md, plots."),
    reuse: Path = typer.Option(None, "--reuse", help="Take the rewrite baseline from an earlier --out folder."),
    layout: str = typer.Option("default", "--layout", help="rewrite/spec prompt layout: default, instruction-first, "
                               "no-complete-wording, no-prefill, no-system, fixed-last."),
    copy_prefill: bool = typer.Option(True, "--copy-prefill/--no-copy-prefill",
                                      help="copy/oracle: append copied lines to the KV cache (off: ablation)."),
    focus: bool = FOCUS,
    copy_kv: CopyKV = typer.Option("reread", "--copy-kv", help="copy/oracle: reread or reuse (see `fix --help`)."),
    copy_focus: bool = typer.Option(True, "--copy-focus/--no-copy-focus",
                                    help="copy/oracle: focus on the named definitions as rewrite/spec do "
                                         "(off: copy mode sees the whole file, an ablation)."),
    engine: str = typer.Option("torch", "--engine", help="torch | llamacpp | static (auto is the product's choice; the "
                               "bench names the engine so that runs pair, whatever the config says)."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Run each (case, mode) N times, interleaved; report "
                               "medians."),
    ngram_flags: str = typer.Option(None, "--ngram-flags", help="llama-server flags of the server-ngram peers "
                                    "(default: editllm.bench.peers.NGRAM_FLAGS)."),
    pld_tokens: int = typer.Option(None, "--pld-tokens", min=1, help="hf-pld's prompt lookup length (transformers' "
                                   "prompt_lookup_num_tokens: the draft it checks in one forward; default: "
                                   "editllm.bench.peers.PLD_TOKENS)."),
    server: str = typer.Option(None, "--server", help="Run rewrite, spec and copy through the llama-server or "
                               "vLLM server at URL (serving --model), as `fix --server` does; the records say "
                               "what it runs."),
    batch_invariant: bool = typer.Option(False, "--batch-invariant", help="The llama.cpp engine's batch-invariant "
                                         "kernels (see `fix --help`); the peers keep their defaults."),
) -> None:
    """Measure speed and quality per mode on benchmark cases; print the Markdown report.

    Model, device and dtype come from the configuration like every command's (flags win); the engine
    does not: the committed baselines ran on torch, and a run pairs with them only on the same engine."""
    from editllm.bench.cases import default_cases, load_cases, unique_paths
    from editllm.bench.report import check_out_folder, require_extra, write_report
    from editllm.editor.prompt import LAYOUTS

    try:
        if sys.stdout is None:  # `>&-`: say so before the model loads, not after every case ran
            raise EditError("stdout is closed: nowhere to print the report (redirect it)")
        if not out:
            raise EditError("--out is empty: name a folder for results.json, report.md and the plots")
        folder = Path(out)
        check_out_folder(folder)
        if layout not in LAYOUTS:
            raise EditError(f"unknown --layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
        try:
            flags = shlex.split(ngram_flags) if ngram_flags is not None else None
        except ValueError as exc:
            raise EditError(f"--ngram-flags {ngram_flags!r}: {exc}") from None
        require_extra()
        check_decoding(draft, 0.0)
        conf = settings(None, model, device, dtype)
        if adapter is not None and no_adapter:
            raise EditError("--adapter and --no-adapter contradict each other: give one")
        if not server and any(m.strip() in ("copy", "copy-reuse") for m in mode.split(",")):  # as `fix --mode copy`
            from editllm.selector import default_adapter

            adapter = default_adapter(conf.get("model"), "copy", adapter, not no_adapter)
        check_model(conf.get("model"), adapter)
        if engine == "llamacpp":  # llama.cpp loads libgomp before torch does, so as `fix` runs it (editor.waitpolicy)
            from editllm.editor.llamacpp import load_llama_cpp

            load_llama_cpp()
        from editllm.bench.peers import NGRAM_FLAGS, PEER_MODES, PLD_TOKENS, Peers
        from editllm.bench.reuse import load_previous, read_run, run_settings  # torch from here on
        from editllm.bench.runner import ALL_MODES, SERVER_MODES, HFCompile, kernel_bench, run_bench
        from editllm.editor.edit import EditOptions
        from editllm.editor.models import gguf_of

        named = [m.strip() for m in mode.split(",") if m.strip()]
        modes = list(dict.fromkeys(named))
        if not modes:
            raise EditError(f"--mode: no mode given; choose from {', '.join(ALL_MODES)}")
        if len(modes) < len(named):
            note(f"bench: a mode named twice runs once: --mode {','.join(modes)}")
        bad = [m for m in modes if m not in ALL_MODES]
        if bad:
            raise EditError(f"unknown bench mode {bad[0]!r}; choose from {', '.join(ALL_MODES)}")
        if server and [m for m in modes if m not in SERVER_MODES]:
            bad = [m for m in modes if m not in SERVER_MODES][0]
            raise EditError(f"bench --server runs {', '.join(SERVER_MODES)} through the server, not {bad!r}")
        if server and batch_invariant:
            raise EditError("bench --batch-invariant sets the local llama.cpp engine's kernels, not a server's")
        if server and (kernel or kernel_only or reuse):
            raise EditError("bench --server times requests to the server: --kernel and --reuse need a local engine")
        paths = list(cases or default_cases())
        if not paths and not kernel_only:
            raise EditError("no bench cases: pass --cases FILE")
        for p in paths:
            if not p.is_file():
                raise EditError(f"{p}: no such case file")
        if len(unique_paths(paths)) < len(paths):
            note("bench: a case file named twice is read once")
        selected = [] if kernel_only else load_cases(paths, kind or None, limit, min_lines, max_lines)
        if not selected and not kernel_only:
            raise EditError("no bench case matches --kind/--min-lines/--max-lines")
        earlier = read_run(reuse) if reuse and selected else None  # a damaged folder: said before the model loads
        if server:
            from editllm.remote.session import connect

            lm = connect(server, conf.get("model"))
        else:
            lm = load(conf.get("model"), conf.get("device"), conf.get("dtype"), adapter, False, Progress(False),
                      engine=engine, batch_invariant=batch_invariant)
        if lm.engine_name == "llamacpp" and {"hf-pld", "hf-greedy"} & set(modes):
            raise EditError("hf-pld and hf-greedy run a transformers model: run them with --engine torch or static")
        opts = EditOptions(max_new_tokens=max_new_tokens, draft=draft, layout=layout, prefill_copies=copy_prefill,
                           focus=focus, copy_kv=copy_kv, copy_focus=copy_focus)
        recorded = run_settings(lm, opts, adapter)
        previous = load_previous(reuse, recorded, earlier) if earlier is not None else None
        peers = Peers(gguf_of(conf.get("model")) if any(m in PEER_MODES for m in modes) else None,
                      flags if flags is not None else NGRAM_FLAGS,
                      pld_tokens=pld_tokens if pld_tokens is not None else PLD_TOKENS)
        results: dict = {"model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch."),
                         "engine": lm.engine_name}
        if kernel or kernel_only:  # first: a run cut short by a time limit keeps it (the cases' reports too)
            results["kernel"] = kernel_bench(lm)

        def run_info() -> dict:
            """What the report says of the run beside its records: the adapter (the same base model name with
            and without one), the prompt's settings, and how the GPU decoded."""
            info = {"adapter": adapter, "focus": focus, "copy_kv": copy_kv, "copy_focus": copy_focus}
            if lm.engine_name == "static":  # graphs captured, or eager after a failed capture (and why)
                info |= {"graphs": str(lm.engine.graphs), "graph_error": lm.engine.graph_error}
            if "hf-greedy" in modes and str(lm.device).startswith("cuda"):  # transformers' compiled loop, or not
                info |= {"hf_greedy": HFCompile.state(lm), "hf_compile_error": HFCompile.error}
            return info

        def so_far(partial: dict) -> None:  # a report after each case: a run cut short keeps them
            hf = peers.hf_settings(modes)
            write_report(results | partial | run_info() | {"settings": recorded | {"repeat": repeat}
                                                           | ({"peers": hf} if hf else {})}, folder, draw=False)

        try:
            if selected:
                results |= _bench_runs(selected, modes, repeat, lambda advance: run_bench(
                    lm, selected, modes, opts, advance, previous, repeat, peers, so_far))
            peer_settings = peers.settings(modes)
        finally:
            peers.close()
        results |= run_info()
        # what --reuse must match, then what only pairs this run's modes (peers' flags and versions, repeats)
        results["settings"] = recorded | {"repeat": repeat} | ({"peers": peer_settings} if peer_settings else {})
        sys.stdout.write(write_report(results, folder))
    except EditError as exc:
        fail(str(exc))


def _bench_runs(selected: list, modes: list[str], repeat: int, run) -> dict:
    """`run(advance)` under a progress bar (a line per run on a non-terminal stderr)."""
    from rich.progress import Progress as Bar

    with Bar(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("bench", total=len(selected) * len(modes) * repeat)

        def advance(rec: dict) -> None:
            bar.update(task, advance=1, description=f"{rec['id']} {rec['mode']}")
            if not err.is_terminal:
                err.print(f"{rec['id']} {rec['mode']}: {rec['seconds']} s, tests {rec['tests_passed']}, "
                          f"exact {rec['exact_match']}, error {rec['error']}", markup=False, soft_wrap=True)

        return run(advance)


@hook_app.command("install")
def hook_install(
    instruction: str = typer.Option(None, "--instruction", "-i",
                                    help="Instruction for the check (else `instruction` from the config)."),
    force: bool = typer.Option(False, "--force", help="Replace a pre-commit hook editllm did not write."),
) -> None:
    """Write a pre-commit hook that runs `editllm check --staged` and blocks the commit on a proposal."""
    note(f"installed {api.install_hook(instruction, force)}")


@hook_app.command("uninstall")
def hook_uninstall() -> None:
    """Remove the pre-commit hook if editllm wrote it; leave any other hook alone."""
    path = api.uninstall_hook()
    note(f"removed {path}" if path else "no pre-commit hook installed")


@app.command("config")
def show_config(
    ctx: typer.Context, mode: Mode | None = MODE, model: str = MODEL, device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE, engine: Engine | None = ENGINE, copy_kv: CopyKV | None = COPY_KV,
    server: str = SERVER, batch_invariant: bool | None = BATCH_INVARIANT,
) -> None:
    """Show the effective configuration and where each value comes from (a flag, a variable, a file)."""
    refuse_closed_stdout("the configuration")
    conf = settings(mode, model, device, dtype, engine=engine, copy_kv=copy_kv, server=server,
                    batch_invariant=batch_invariant)
    for param in ctx.command.params:  # what `fix` would take from EDITLLM_MODEL or EDITLLM_SERVER says so
        if param.envvar and getattr(ctx.get_parameter_source(param.name), "name", "") == "ENVIRONMENT":
            conf.sources[param.name] = f"environment {param.envvar}"
    width = max(len(k) for k in conf.values)
    for key, value in conf.values.items():
        print(f"{key:<{width}}  {json.dumps(value)}  ({conf.sources[key]})")


@train_app.command("data")
def train_data(
    out: str = typer.Option(..., "--out", help="JSONL file to write."),
    repo: Path = typer.Option(None, "--repo", help="Mine (before, after, message) pairs from this git history."),
    rev_range: str = typer.Option(None, "--rev-range", help="e.g. v1.0..main (default: all of HEAD)."),
    synthetic: int = typer.Option(0, "--synthetic", min=0, help="Add N programmatic edits of public code."),
    seed: int = typer.Option(0, "--seed"),
    model: str = typer.Option(None, "--model", "-m", envvar="EDITLLM_MODEL",
                              help="Whose tokenizer/chat template builds the prompts (else from the config)."),
    distill: int = typer.Option(0, "--distill", min=0, help="Add N edits rewrite mode made with --model and that "
                                "passed the checks (resumes from OUT's `.distill.jsonl.gz` beside it)."),
) -> None:
    """Write copy-mode training examples (prompt + oracle program); refuses bench overlap (HumanEval, held-out)."""
    from editllm.training.data import collect, write_jsonl

    path = Path(out)
    if not out or path.is_dir() or not path.name:  # `--out ''` reads as `.`: a folder either way
        raise EditError(f"--out {out!r}: a folder, not a file; name the JSONL file to write")
    blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocked:
        raise EditError(f"--out {out}: {blocked} is a file, not a folder")
    model = settings(None, model, None, None).get("model")
    kept = collect(repo, rev_range, synthetic, seed, distill,
                   load_lm=lambda: load(model, "auto", "auto", None, False, Progress(False)),
                   distill_cache=path.with_name(path.name.split(".")[0] + ".distill.jsonl.gz"),
                   log=lambda msg: err.print(msg, markup=False))
    if not kept:
        raise EditError("no training examples (give --repo, --synthetic N and/or --distill N)")
    from editllm.editor.models import resolve_model
    from transformers import AutoTokenizer

    api.quiet_libraries()
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(model, log=lambda m: err.print(m, markup=False)))
    write_jsonl(kept, path, tokenizer)
    err.print(f"wrote {len(kept)} example(s) to {out}", markup=False)


@train_app.command("run")
def train_run(
    data: Path = typer.Option(..., "--data", help="JSONL from `editllm train data`."),
    out: str = typer.Option(..., "--out", help="Folder for the adapter (or full weights) and checkpoints."),
    model: str = MODEL,
    lora: int = typer.Option(16, "--lora", min=0, help="LoRA rank; 0 = full fine-tuning."),
    steps: int = typer.Option(100, "--steps", min=1),
    lr: float = typer.Option(2e-4, "--lr"),
    batch_tokens: int = typer.Option(4096, "--batch-tokens", min=64),
    max_len: int = typer.Option(4096, "--max-len", min=64),
    save_every: int = typer.Option(50, "--save-every", min=1),
    device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE,
    seed: int = typer.Option(0, "--seed"),
    max_minutes: float = typer.Option(None, "--max-minutes", min=0, help="Stop early and save after this long."),
) -> None:
    """Supervised fine-tuning on program tokens (copied text and prompt masked); resumes from --out."""
    from editllm.training.data import read_jsonl
    from editllm.training.sft import TrainConfig, train
    from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    if not data.is_file():
        raise EditError(f"{data}: no such file")
    if not out:
        raise EditError("--out is empty: name a folder for the adapter and its checkpoints")
    folder = Path(out)
    blocked = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), None)
    if blocked:
        raise EditError(f"--out {out}: {blocked} is a file, not a folder")
    conf = settings(None, model, device, dtype)
    examples = read_jsonl(data)
    if not examples:
        raise EditError(f"{data}: no training examples in it")
    state = folder / "checkpoint" / "state.pt"
    if state.is_file():  # a resume: its LoRA rank must be --lora's, said before the model loads
        import torch

        try:
            saved = torch.load(state, map_location="cpu", mmap=True, weights_only=False)["model"]
        except Exception as exc:  # a damaged or foreign file: torch raises many kinds
            raise EditError(f"{state}: not a readable checkpoint ({type(exc).__name__}); remove it or pass "
                            "another --out") from None
        rank = next((v.shape[0] for k, v in saved.items() if "lora_A" in k), 0)
        if rank != lora:
            raise EditError(f"--out {out} holds a checkpoint of rank {rank}; pass --lora {rank} or another --out")
    lm = load(conf.get("model"), conf.get("device"), conf.get("dtype"), None, False, Progress(False))
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

        try:
            _, history = train(lm.model, lm.tokenizer, examples, cfg, folder, on_step)
        except ValueError as exc:  # sft's own refusals: no example fits --max-len, nothing to train
            raise EditError(str(exc)) from exc
    if history:
        err.print(f"saved to {out}: loss {history[0]['loss']} -> {history[-1]['loss']}", markup=False)


@train_app.command("eval")
def train_eval(
    adapter: str = typer.Option(..., "--adapter", help="The fine-tuned adapter (or full-weights directory)."),
    model: str = MODEL,
    cases: list[Path] = typer.Option(None, "--cases"),
    kind: list[str] = typer.Option(None, "--kind"),
    limit: int = typer.Option(None, "--limit", min=1),
    device: Device | None = DEVICE,
    dtype: Dtype | None = DTYPE,
) -> None:
    """Copy-mode exact match, tests passed and speed on the bench set: base model vs fine-tuned."""
    from editllm.bench.cases import default_cases, load_cases

    try:
        conf = settings(None, model, device, dtype)
        model, device, dtype = conf.get("model"), conf.get("device"), conf.get("dtype")
        check_model(model, adapter)
        from editllm.bench.evaluate import compare, table  # torch from here on

        paths = list(cases or default_cases())
        if not paths:
            raise EditError("no bench cases: pass --cases FILE")
        selected = load_cases(paths, kind or None, limit)
        if not selected:  # before two models load, as bench refuses
            raise EditError("no bench case matches --kind" if kind else
                            f"no bench cases in {', '.join(str(p) for p in paths)}")
        base = load(model, device, dtype, None, False, Progress(False))
        tuned = load(model, device, dtype, adapter, False, Progress(False))
        sys.stdout.write(table(compare(base, tuned, selected)))
    except EditError as exc:
        fail(str(exc))


@train_app.command("convert")
def train_convert(
    adapter: Path = typer.Argument(..., help="The peft LoRA adapter folder (`editllm train run --out`)."),
    model: str = typer.Option(None, "--model", "-m", envvar="EDITLLM_MODEL",
                              help="The base model it was trained on (else from the config)."),
    outtype: str = typer.Option("f16", "--outtype", help="f32 | f16 | bf16 | q8_0 (f16: half the size of f32)."),
) -> None:
    """Write ADAPTER/adapter.gguf for the llama.cpp engine (llama.cpp's convert_lora_to_gguf.py)."""
    from editllm.training.convert import check_lora_folder, convert_adapter

    model = settings(None, model, None, None).get("model")
    check_lora_folder(adapter)  # before the base model is prepared (a minute for a bundled one)
    api.check_model_spec(model)
    from editllm.editor.models import resolve_model

    api.quiet_libraries()
    base = resolve_model(model, log=note)
    if not isinstance(base, Path):
        raise EditError(f"--model {model}: a hub id; the converter needs the base model as a local HF folder")
    start = time.perf_counter()
    out = convert_adapter(adapter, base, outtype, log=note)
    note(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - start:.1f} s")


MODEL_ARG = typer.Argument(None, help=f"A model spec (else `model` from the config, else {DEFAULT_MODEL}).")


@model_app.command("info")
def model_info(model: str = MODEL_ARG) -> None:
    """Show where a model comes from and whether it is ready."""
    from editllm.editor.enginechoice import recorded
    from editllm.editor.models import whole_conversion, whole_gguf
    from editllm.editor.modelspec import bundled_for, cache_dir, check_model_spec

    refuse_closed_stdout("the model's details")
    model = settings(None, model, None, None).get("model")
    kind = check_model_spec(model)  # a path that names nothing, or no model, is an error here as for `fix`
    bundled = bundled_for(model)
    if bundled is None:
        print(json.dumps({"model": model, "kind": {"gguf": "GGUF file", "directory": "model directory",
                                                    "hub": "hub id (transformers resolves it)"}[kind]}))
        return
    from editllm.selector import selector_for

    converted = bundled.converted_dir()
    gguf = cache_dir() / bundled.gguf_name
    parts = bundled.part_paths()
    selector = selector_for(model)
    print(json.dumps({
        "model": f"bundled:{bundled.key}", "title": bundled.title,
        "packages": f"{bundled.package.format(i=1)}..{bundled.parts} == {bundled.version}",
        "parts_bytes": sum(p.stat().st_size for p in parts), "sha256": bundled.sha256,
        # what each engine reads: llama.cpp (the CPU default) the GGUF; the torch engine (--engine torch, a GPU, an
        # adapter) its bf16 conversion, which `model prepare` makes (a minute or two, a few GB: needless for llama.cpp)
        "gguf": {"path": str(gguf), "ready": whole_gguf(bundled, gguf)},
        "converted": {"path": str(converted), "ready": whole_conversion(converted), "for": "the torch engine"},
        # which CPU engine `--engine auto` takes here, as `model prepare` measured it (null: none measured, llama.cpp)
        "cpu_engine": None if (chosen := recorded(gguf)) is None else {
            "engine": chosen["engine"], "reference_edit_seconds": chosen["reference_edit_seconds"],
            "in_use": chosen["engine"] == "llamacpp" or whole_conversion(converted)},
        "selector": None if selector is None else {
            "adapter": str(selector.folder), "loaded": "copy mode, unless --adapter or --no-adapter",
            "files": {name: {"bytes": (selector.folder / name).stat().st_size if (selector.folder / name).exists()
                             else None, "sha256": sha} for name, sha in selector.sha256.items()},
        },
    }, indent=2))


@model_app.command("path")
def model_path(model: str = MODEL_ARG) -> None:
    """Print the directory the model loads from (preparing it first if needed)."""
    from editllm.editor.models import resolve_model

    refuse_closed_stdout("the path")
    model = settings(None, model, None, None).get("model")
    print(resolve_model(model, log=note))


@model_app.command("prepare")
def model_prepare(model: str = MODEL_ARG) -> None:
    """Assemble, verify and convert a bundled model (or a .gguf) into the cache now."""
    from editllm.editor.models import resolve_model
    from editllm.editor.modelspec import check_model_spec

    start = time.perf_counter()
    model = settings(None, model, None, None).get("model")
    api.quiet_libraries()
    if check_model_spec(model) == "hub":
        note(f"{model}: a hub id; nothing to prepare here (transformers fetches it at the first run, or reads its "
             "own cache)")
        return
    where = resolve_model(model, log=note)
    err.print(f"ready in {time.perf_counter() - start:.1f} s: {where}", markup=False)
    choose_cpu_engine(model)


def choose_cpu_engine(model: str) -> None:
    """Time both CPU engines' forwards on a GGUF model and record the faster for `--engine auto` on this machine
    (`editor.enginechoice`): a few seconds each, the measured tables kept for their drafters."""
    import importlib.util

    from editllm.editor.costs import engine_costs
    from editllm.editor.enginechoice import record
    from editllm.editor.models import gguf_of, load_model, pick_device

    gguf = gguf_of(model)
    if gguf is None or importlib.util.find_spec("llama_cpp") is None or pick_device("auto") != "cpu":
        return
    costs = {}
    for engine in ("llamacpp", "torch"):
        try:
            lm = load_model(model, device="cpu", engine=engine)
        except EditError as exc:  # the model is prepared all the same; `auto` stays on llama.cpp
            note(f"could not time the {engine} engine here ({exc}); --engine auto takes llama.cpp")
            return
        costs[engine] = engine_costs(lm.engine)
        getattr(lm.engine, "close", lambda: None)()
        del lm
    saved = record(gguf, costs["llamacpp"], costs["torch"])
    seconds = saved["reference_edit_seconds"]
    err.print(f"CPU engine for --engine auto here: {saved['engine']} (a reference edit of 1,000 tokens in and out, "
              f"95 % copied: {seconds['llamacpp']} s on llama.cpp, {seconds['torch']} s on torch)", markup=False,
              soft_wrap=True)


def main() -> None:
    """Console entry point. Interrupted while a many-files run's worker thread decodes a file, it exits at once
    rather than wait for that file (the batch has let any write under way finish and started no other)."""
    try:
        app()
    except SystemExit as exc:
        others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
        if exc.code in (130, 128 + signal.SIGTERM, 128 + signal.SIGHUP) and others:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    stream.flush()
            os._exit(exc.code)
        raise


if __name__ == "__main__":
    main()
