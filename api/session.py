"""`EditSession`: the one way to edit files with editllm, for the CLI, the git hook, the bench and
training alike.

A session holds one model (loaded on first use, so building a session and reading inputs never
imports torch) and the decoding options; `edit` takes a list of files and returns one `FileEdit` per
file. Nothing here prints or writes unless asked: `write_edits` is the only writer.
"""

from __future__ import annotations

import ast
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from editllm.editor.asks import mentioned, renames
from editllm.editor.blocks import names, split_blocks
from editllm.editor.config import CHOICES, DEFAULT_MODEL, CopyRequests
from editllm.editor.crossfile import still_imported, still_imported_note
from editllm.editor.datakeys import unasked_keys, unasked_keys_note
from editllm.editor.drift import drifted, drifted_note, dropped_lines, dropped_note
from editllm.editor.errors import EditError, few, lines_named
from editllm.editor.focus import renamed
from editllm.editor.invariant import SERVER_ARGS, TILED_VAR
from editllm.editor.languages import PYTHON
from editllm.editor.modelspec import bundled_for, check_model_spec
from editllm.editor.prosefocus import section_kept
from editllm.editor.reflow import cosmetic_only
from editllm.editor.source import SourceFile, read_source, source_from_text, split_lines
from editllm.editor.syntax import faults_added
from editllm.editor.undefined import absent_subjects, defines, missing_asked, newly_unbound
from editllm.editor.unfinished import (
    beyond_rename,
    beyond_rename_note,
    kept_note,
    kept_removals,
    left_unrenamed,
    leftover_note,
    partly_kept,
    partly_kept_note,
    still_used,
    still_used_note,
)

if TYPE_CHECKING:  # imported only when a model is loaded
    from editllm.api.batch import BatchReport
    from editllm.editor.decode import DecodeStats
    from editllm.editor.edit import EditOptions, EditResult
    from editllm.editor.models import LoadedModel

Log = Callable[[str], None]
# Files decoded in one batch by `EditSession.edit` on the static engine: each row holds a cache of its own
# (~230 MB for the 1.5B at 8,192 tokens), and the GPU issue's batch target is 32 files.
BATCH_FILES = 32


@dataclass
class FileEdit:
    """One file's outcome: old and new text, the checked diff (empty when nothing changed) and the
    decoding stats."""

    source: SourceFile  # the file as read (its text, and where on disk `write_edits` writes it)
    new_text: str  # the whole edited file, in the original's newline style
    diff: str  # a unified diff `git apply` takes from the repository root; "" when nothing changed
    result: EditResult = field(repr=False)  # the pipeline's full result (raw model output, stats)

    @property
    def path(self) -> str:
        """The path as the diff shows it."""
        return self.source.path

    @property
    def old_text(self) -> str:
        """The file's text before the edit."""
        return self.source.raw

    @property
    def changed(self) -> bool:
        """False when the model proposed no change (a no-op)."""
        return self.new_text != self.source.raw

    @property
    def stats(self) -> DecodeStats:
        """Tokens, forwards and seconds this file cost (`editor.decode.DecodeStats`)."""
        return self.result.stats

    @property
    def merged(self) -> bool:
        """The model wrote a fragment, which was merged into the original."""
        return self.result.merged

    @property
    def complete_output(self) -> bool:
        """The model wrote the whole file (not a fragment)."""
        return self.result.complete_output

    @property
    def fallback(self) -> str | None:
        """Why copy mode fell back to spec mode, if it did."""
        return self.result.fallback

    @property
    def focused(self) -> tuple[str, ...]:
        """The definitions the model was shown alone (editor.focus)."""
        return self.result.focused

    def as_dict(self) -> dict:
        """The per-file entry of `--stats`."""
        return self.result.as_dict() | {"changed": self.changed}


def display_path(path: str | Path, for_diff: bool = False) -> str:
    """The path as the diff shows it: relative to the root of the git repository the working directory is
    in, when the file is inside it (a file of a nested repository or submodule too: named from its own
    root, `git apply` run where the user is patched the outer repository's file of that name), else to its
    own repository's root (so `git apply` and `patch -p1` work from there), else to the working directory.
    A file outside all of them has no such name: `for_diff` (a diff will be printed) refuses it; else
    (--apply) it is named by its absolute path less the leading slash."""
    from editllm.editor.gitio import repo_root

    p = Path(path).resolve()
    here = repo_root(Path.cwd())
    base = here if here is not None and p.is_relative_to(here) else repo_root(p.parent) or Path.cwd().resolve()
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        if not for_diff:
            return p.as_posix().lstrip("/")
        raise EditError(f"{path}: outside the working directory and not in a git repository, so no diff "
                        "would apply from here; run editllm from a folder that holds it, or use --apply") from None


PathArg = str | os.PathLike | SourceFile  # one file as `edit` takes it


def as_paths(paths: PathArg | Iterable[PathArg]) -> list[PathArg]:
    """`paths` as a list: one path alone is a list of one (iterating a str would give its characters).
    A wrong type is the caller's bug, so a TypeError here rather than a puzzle deep in the pipeline."""
    if isinstance(paths, str | os.PathLike | SourceFile):
        return [paths]
    if isinstance(paths, bytes | bytearray) or not isinstance(paths, Iterable):
        raise TypeError(f"paths: expected a path or a list of paths, got {type(paths).__name__}")
    paths = list(paths)
    for path in paths:
        if not isinstance(path, str | os.PathLike | SourceFile):
            raise TypeError(f"paths: expected str, os.PathLike or SourceFile items, got {path!r}")
    return paths


def read_stdin() -> bytes:
    """All of stdin as bytes; a text-only stdin (a notebook's, a test's StringIO) has no `buffer`."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer.read()
    data = sys.stdin.read()
    return data.encode("utf-8") if isinstance(data, str) else data


def read_sources(paths: PathArg | Iterable[PathArg], instruction: str, stdin_path: str = "stdin",
                 for_diff: bool = False) -> list:
    """Read every file ('-' is stdin) before any model is loaded, so bad input fails fast; `for_diff`: a
    diff will be printed, so every file needs a name it applies by (`display_path`)."""
    if not isinstance(instruction, str):
        raise TypeError(f"instruction: expected a str, got {type(instruction).__name__}")
    if not instruction.strip():
        raise EditError("the instruction is empty")
    paths = as_paths(paths)
    sources, seen = [], set()
    inodes: dict[tuple[int, int], str] = {}
    for path in paths:
        if isinstance(path, SourceFile):
            key = str(path.disk_path.resolve()) if path.disk_path else f"text:{path.path}"
        else:
            key = "-" if str(path) == "-" else os.path.realpath(path)
        if key in seen:
            raise EditError(f"{path.path if isinstance(path, SourceFile) else path}: named twice")
        seen.add(key)
        if isinstance(path, SourceFile):
            sources.append(path)
        elif str(path) == "-":
            if sys.stdin is None:  # `<&-`
                raise EditError("stdin is closed: pipe the file in, or name it")
            sources.append(source_from_text(read_stdin(), stdin_path))
        else:
            src = read_source(path)  # its checks first: `display_path` resolves the path, which may be a loop
            _refuse_link_out_of_tree(path, src.disk_path)
            st = os.stat(path)  # a hard link is the same file under another name: two edits of one file
            if (inode := (st.st_dev, st.st_ino)) in inodes:
                raise EditError(f"{path}: the same file as {inodes[inode]} (a hard link): named twice")
            inodes[inode] = str(path)
            sources.append(replace(src, path=display_path(path, for_diff)))
    stdin = [s.path for p, s in zip(paths, sources, strict=True) if str(p) == "-"]
    if stdin and stdin[0] in {s.path for s in sources if s.disk_path is not None}:
        raise EditError(f"{stdin[0]}: named twice (a file and stdin's --path)")  # two diffs of one path
    names: dict[str, PathArg] = {}
    for path, src in zip(paths, sources, strict=True):  # files of two repositories, each named from its root
        if for_diff and src.path in names and src.disk_path is not None:
            raise EditError(f"{names[src.path]} and {path}: both would be {src.path} in the diff (they are in "
                            "different git repositories); edit them in separate runs, from each repository")
        names[src.path] = path
    no_such_rename(sources, instruction)
    rename_clash(sources, instruction)
    return sources


def no_such_rename(sources: list[SourceFile], instruction: str) -> None:
    """Refuse, before any model runs, a rename of a name none of the files mentions: a probe (session 42) asked to
    rename a `parse_config()` sched.py does not have; the model rewrote the whole file for 165 s, and "no change
    proposed" never said why."""
    olds = renamed(instruction)
    if olds and sources and not any(mentioned(old, src.text) for old in olds for src in sources):
        where = f"{sources[0].path}: " if len(sources) == 1 else ""
        which = "the file does not mention" if len(sources) == 1 else \
            f"none of {few([src.path for src in sources])} mentions"
        raise EditError(f"{where}the instruction renames {few(olds)}, which {which}; nothing written")


def rename_clash(sources: list[SourceFile], instruction: str) -> None:
    """Refuse, before any model runs, a rename onto a name already defined beside the old one in a Python file (a
    module's, or a class's, top level): a probe (session 44) asked textwrap.py to rename `TextWrapper._split` to
    `_split_chunks`, which the class already has; the model wrote on for 57 s, past its token budget, and the error
    named no cause. Python only: where methods overload (Java, C++, C#), a second definition of a name is no clash."""
    pairs = renames(instruction) if renamed(instruction) else []
    for src in sources if pairs else []:
        if not src.path.endswith(PYTHON):
            continue
        try:
            tree = ast.parse(src.text)
        except (SyntaxError, ValueError):
            continue  # the model is asked to edit it as it is
        for scope in [tree, *(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))]:
            defined = top_level_names(scope.body)
            for old, new in pairs:
                if old != new and old in defined and new in defined:
                    raise EditError(f"{src.path}: {new} is already defined beside {old} (line {defined[new]}): "
                                    f"renamed, {old} would define it twice; choose another name; nothing written")


def top_level_names(body: list[ast.stmt]) -> dict[str, int]:
    """The names a module's or a class's own statements define (functions, classes, assigned names), with the line
    of the first."""
    found: dict[str, int] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, node.lineno)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, node.lineno)
    return found


def _refuse_link_out_of_tree(path: str | Path, target: Path) -> None:
    """A symlink is edited where it points; refuse one that points out of its own repository (or, outside
    a repository, out of the working directory): its diff could not name the file it changes in a way
    `git apply` here would find, and the write would land outside the tree the user is working in."""
    from editllm.editor.gitio import repo_root

    if os.path.realpath(path) == os.path.abspath(path):  # no symlink on the way
        return
    link = Path(path)
    base = repo_root(link.absolute().parent) or Path.cwd()
    if not target.is_relative_to(Path(base).resolve()):
        what = "a symlink to" if link.is_symlink() else "through a symlinked folder, the file"
        raise EditError(f"{path}: {what} {target}, outside {base}; edit that file itself")


def quiet_libraries() -> None:
    """transformers' load bars and warnings would clutter stderr and hooks (`load_model` quiets them
    itself where it imports transformers; the llama.cpp path does not import it at all)."""
    from editllm.editor.models import quiet_transformers

    quiet_transformers()


def check_adapter(adapter: str | Path) -> None:
    """Refuse an adapter that is not a peft adapter folder (or a LoRA GGUF file, for llama.cpp) before
    torch is imported; peft itself answers a wrong folder with a ValueError deep in its loader."""
    p = Path(adapter).expanduser()
    if p.suffix == ".gguf" and p.is_file():
        return
    if not p.exists():
        raise EditError(f"--adapter {adapter}: no such directory")
    if not p.is_dir():
        raise EditError(f"--adapter {adapter}: not a directory")
    if not (p / "adapter_config.json").is_file() and (p / "config.json").is_file():
        raise EditError(f"--adapter {adapter}: full model weights, not an adapter; pass it as --model")
    if not (p / "adapter_config.json").is_file():
        raise EditError(f"--adapter {adapter}: not a LoRA adapter (no adapter_config.json; "
                        "`editllm train run` writes one)")


def load_model(model: str = DEFAULT_MODEL, device: str = "auto", dtype: str = "auto", adapter: str | None = None,
               trust_remote_code: bool = False, log: Log | None = None, engine: str = "auto",
               batch_invariant: bool = False) -> LoadedModel:
    """Load a model (and adapter) for decoding; this is where torch and transformers get imported
    (except on the llama.cpp engine, which needs neither), after the model spec and the adapter were
    checked without them."""
    check_model_spec(model)
    if adapter is not None:
        check_adapter(adapter)
    from editllm.editor import models

    return models.load_model(model, device, dtype, adapter, trust_remote_code, log=log, engine=engine,
                             batch_invariant=batch_invariant)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int to Python


def check_options(mode: str = "spec", device: str = "auto", dtype: str = "auto", engine: str = "auto",
                  **options: Any) -> None:
    """Refuse a setting or decoding option (`editor.edit.EditOptions` fields) that cannot work, naming it,
    before any model loads: a typo or a bad value would otherwise surface as a TypeError or ValueError
    from deep in the pipeline after the model's load. The CLI's flags pass typer's checks and
    this, through `check_decoding`: each message starts with the option's name, which the CLI makes a flag."""
    from editllm.editor.drafter import DraftSchedule
    from editllm.editor.edit import EditOptions
    from editllm.editor.prompt import LAYOUTS

    known = sorted(f.name for f in fields(EditOptions) if f.name != "mode")
    for name in options:
        if name not in known:
            raise EditError(f"unknown option {name!r}; EditSession takes {', '.join(known)}")
    choices = {**CHOICES, "copy_requests": get_args(CopyRequests), "layout": tuple(LAYOUTS)}
    given = {"mode": mode, "device": device, "dtype": dtype, "engine": engine} | {
        k: v for k, v in options.items() if k in choices}
    for name, value in given.items():
        if value not in choices[name] and not (name == "device" and re.fullmatch(r"cuda:\d+", str(value))):
            raise EditError(f"unknown {name} {value!r}; choose one of {', '.join(choices[name])}")
    max_new = options.get("max_new_tokens")
    if max_new is not None and not (_is_int(max_new) and max_new >= 1):
        raise EditError(f"max_new_tokens {max_new!r}: give a whole number of tokens >= 1 (None: as the file needs)")
    temperature = options.get("temperature", 0.0)
    if not (isinstance(temperature, int | float) and not isinstance(temperature, bool)
            and math.isfinite(temperature) and temperature >= 0):
        raise EditError(f"temperature {temperature!r}: give a finite number >= 0 (0 = greedy)")
    if not (_is_int(options.get("gamma", 3)) and options.get("gamma", 3) >= 1):
        raise EditError(f"gamma {options['gamma']!r}: give a whole number of draft tokens >= 1")
    if not _is_int(options.get("seed", 0)):
        raise EditError(f"seed {options['seed']!r}: give a whole number")
    if "draft" in options:
        try:
            if not isinstance(options["draft"], str):
                raise ValueError(f"bad draft schedule {options['draft']!r}: give a string such as 'cost'")
            DraftSchedule.parse(options["draft"])
        except ValueError as exc:
            raise EditError(f"draft: {exc}") from None
    for name in ("monotonic", "prefill_copies", "focus", "copy_focus", "allow_deletions", "check"):
        if not isinstance(options.get(name, True), bool):
            raise EditError(f"{name} {options[name]!r}: give True or False")
    for name in ("generate", "on_ids"):
        if options.get(name) is not None and not callable(options[name]):
            raise EditError(f"{name}: give a callable or None")


def local_path(path: str | os.PathLike) -> str:
    """`path` made absolute now when it names something on disk: the session may load it after the caller
    has changed directory (a spec such as `bundled:1.5b` or a hub id is left as it is)."""
    path = os.fspath(path)
    if bundled_for(path) or not os.path.exists(os.path.expanduser(path)):
        return path
    return os.path.abspath(os.path.expanduser(path))


def left_out(result: EditResult) -> str:
    """The definitions a merge put back from the file, said in the note (" (it left out f and g, kept as they were)"):
    an output that is a whole file but renamed or dropped a definition is merged as a fragment, and the old one
    kept beside the new one (a probe, session 33: a class renamed in one of three files, the old class pasted back);
    a bare "merged it into place" hid that."""
    if result.unmerged_text is None:
        return ""
    kept = set(names(split_blocks(split_lines(result.new_text), 0)))
    kept -= set(names(split_blocks(split_lines(result.unmerged_text), 0)))
    if not kept:
        return ""
    shown = sorted(kept)
    return f" (it left out {few(shown)}, kept as {'it was' if len(shown) == 1 else 'they were'})"


class EditSession:
    """A model and decoding options, reused for every `edit` call.

    `model` is a spec (`bundled:1.5b`, a directory, a .gguf, a hub id) loaded on first use, or an
    already loaded model. `options` are `editor.edit.EditOptions` fields (max_new_tokens,
    temperature, seed, draft, monotonic, focus, layout, ...), checked here (`check_options`) before
    any model loads. A local path (model, adapter) is resolved against the working directory here.

    Threads: on a local model, concurrent `edit`/`edit_source` calls run one at a time (one engine, one
    cache; a lock orders them); through a server, or on rows opened with `open_rows`, files decode
    concurrently. `close()` (or `with EditSession(...) as s:`) drops the model; so does dropping every
    reference to the session.
    """

    def __init__(self, model: str | LoadedModel = DEFAULT_MODEL, *, mode: str = "spec", device: str = "auto",
                 dtype: str = "auto", engine: str = "auto", adapter: str | None = None,
                 trust_remote_code: bool = False, log: Log | None = None, load_log: Log | None = None,
                 status: Log | None = None, on_tokens: Callable[[int, float], None] | None = None,
                 server: str | None = None, server_lora: bool = False, batch_invariant: bool = False,
                 use_selector: bool = True, **options: Any) -> None:
        """`server`: a llama-server URL to edit through (editllm.remote); `model` then names the model it
        serves (its tokenizer builds the token ids the requests carry). `server_lora`: that server holds the
        selector's adapter as adapter 0 (`--lora FILE --lora-init-without-apply`). `batch_invariant`: the
        llama.cpp engine's kernels whose logits do not depend on the batch (`editor.invariant`: slower; spec
        then equals rewrite bit for bit, and a file edits the same alone or through a server started so).
        `use_selector`: copy mode on a bundled model with no `adapter` loads the span selector shipped for it
        (`editllm.selector`); False runs the base model."""
        from editllm.editor.models import LoadedModel

        if not isinstance(model, str | os.PathLike | LoadedModel):
            raise TypeError(f"model: expected a model spec (str or path) or a LoadedModel, got {type(model).__name__}")
        if adapter is not None and not isinstance(adapter, str | os.PathLike):
            raise TypeError(f"adapter: expected a path, got {type(adapter).__name__}")
        check_options(mode, device, dtype, engine, **options)
        if batch_invariant and server is not None:
            raise EditError("--batch-invariant sets this machine's llama.cpp kernels; a server's are set where it "
                            f"starts (llama-server {' '.join(SERVER_ARGS)}, with {TILED_VAR}=0)")
        preloaded = isinstance(model, LoadedModel)
        self.model_spec = model.name if preloaded else local_path(model)
        self._lm = model if preloaded else None
        self.server, self.server_lora = server, server_lora
        self.batch_invariant = batch_invariant
        self.mode, self.device, self.dtype, self.engine = mode, device, dtype, engine
        if adapter is not None:
            adapter = os.path.abspath(os.path.expanduser(adapter))
        if not preloaded and server is None:
            from editllm.selector import default_adapter

            adapter = default_adapter(self.model_spec, mode, adapter, use_selector)
        self.adapter, self.trust_remote_code = adapter, trust_remote_code
        self.options = options
        self.log = log or (lambda msg: None)  # one-line notes: fallbacks, merges, warnings
        self.load_log = load_log or self.log  # model preparation (the first load takes minutes)
        self.status = status or (lambda msg: None)  # what is happening now (a progress label)
        self.on_tokens = on_tokens
        self._rows = None  # editor.batched.Rows: files decoded together on the local engine (`open_rows`)
        self.connect_timeout = 600.0  # seconds for each request while connecting to `server` (edit_many: --timeout)
        self._lock = threading.RLock()  # one local engine, one cache: one file at a time (and one load)
        self._closed = False

    @property
    def loaded(self) -> LoadedModel | None:
        """The model if it was loaded (or given), else None; loads nothing."""
        return self._lm

    @property
    def lm(self) -> LoadedModel:
        """The model, loaded on first use."""
        if self._lm is not None:  # no lock once loaded: rows' threads read it while `edit` holds the lock
            return self._lm
        with self._lock:  # two threads' first edits load it once
            if self._closed:
                raise EditError("this EditSession was closed; make a new one")
            if self._lm is None and self.server is not None:
                from editllm.remote.session import connect

                self.status(f"connecting to {self.server}")
                self._lm = connect(self.server, self.model_spec, self.server_lora, log=self.load_log,
                                   timeout=self.connect_timeout)
            if self._lm is None:
                self.status(f"loading {self.model_spec}")
                self._lm = load_model(self.model_spec, self.device, self.dtype, self.adapter,
                                      self.trust_remote_code, log=self.load_log, engine=self.engine,
                                      batch_invariant=self.batch_invariant)
            return self._lm

    def close(self) -> None:
        """Drop the model (and any rows `open_rows` made), so its memory is freed once nothing else holds
        it; the session refuses edits from then on. Dropping every reference to the session does the same."""
        with self._lock:
            self.close_rows()
            self._lm = None
            self._closed = True

    def __enter__(self) -> EditSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def edit_options(self) -> EditOptions:
        """The session's decoding options as the pipeline takes them."""
        from editllm.editor.edit import EditOptions

        return EditOptions(mode=self.mode, **self.options)

    def edit(self, paths: PathArg | Iterable[PathArg], instruction: str,
             stdin_path: str = "stdin") -> list[FileEdit]:
        """Edit each file as `instruction` says; one FileEdit per file, in order. `paths`: a list of
        paths (or `SourceFile`s), or one path alone.

        Inputs are read and checked before the model is loaded; any EditError means nothing was
        decided for any file (the caller writes nothing).

        On the static engine (a GPU) several files decode together, up to `BATCH_FILES` in one batch
        (`editor.batched`: each file's forwards ride in the others'); elsewhere one after another.
        """
        sources = read_sources(paths, instruction, stdin_path)
        if self.server is not None:  # the server takes concurrent requests: no lock
            self.prepare()
            edits = one_by_one(partial(self.edit_source, together=sources), sources, instruction)
        else:
            with self._lock:  # another thread's edit waits (its rows, if any, are left alone)
                edits = self._edit_local(sources, instruction)
        for found in still_imported([(e.path, e.source.lines, e.new_text) for e in edits] if len(edits) > 1 else []):
            self.log(still_imported_note(*found))
        return edits

    def _edit_local(self, sources: list[SourceFile], instruction: str) -> list[FileEdit]:
        """`edit` on this machine's engine, under the session's lock (rows' threads take no lock)."""
        self.prepare()
        if len(sources) > 1 and self.server is None and self.lm.engine_name == "static":
            # rows left open by an earlier call are used again (a second call used to go one file at a time on
            # them); fewer rows than this call could use are given back first, so their memory counts as room
            if self._rows is None or self._rows.size < min(len(sources), BATCH_FILES):
                from editllm.editor.batched import room_for_rows

                self.close_rows()
                room = room_for_rows(self.lm)
                size = min(len(sources), BATCH_FILES, room if room is not None else BATCH_FILES)
                if size > 1:
                    self.open_rows(size)
            if self._rows is not None:
                return self._edit_together(sources, instruction)
        return one_by_one(partial(self.edit_source, together=sources), sources, instruction)

    def _edit_together(self, sources: list[SourceFile], instruction: str) -> list[FileEdit]:
        """Each file in a thread of its own on a row of the open batch; when all are done, the first error in
        input order is raised (as one file after another would have), else the edits in order."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self._rows.size, thread_name_prefix="editllm-row") as pool:
            futures = [pool.submit(self.edit_source, src, instruction, sources) for src in sources]
        outcomes = [f.exception() or f.result() for f in futures]
        for k, outcome in enumerate(outcomes):
            if isinstance(outcome, BaseException):
                if isinstance(outcome, EditError):
                    stopped(outcome, [(src.path, other) for j, (src, other) in enumerate(zip(sources, outcomes,
                                                                                            strict=True)) if j != k])
                raise outcome
        return outcomes

    def edit_many(self, paths: PathArg | Iterable[PathArg], instruction: str, **batch: Any) -> BatchReport:
        """Many files, each with its own outcome (`api.batch.edit_many`: jobs, retries, timeout, journal,
        apply): a failed file is listed, not raised, and never blocks another."""
        from editllm.api.batch import edit_many

        return edit_many(self, read_sources(paths, instruction), instruction, **batch)

    def prepare(self) -> None:
        """Check the settings, then load the model (or connect to the server), once; before any file."""
        if self._lm is None and not self._closed:  # a model to load: check what names it before torch is imported
            check_model_spec(self.model_spec)
            if self.adapter is not None and self.server is None:
                check_adapter(self.adapter)
        if self.mode not in CHOICES["mode"]:
            raise EditError(f"unknown --mode {self.mode!r}; choose one of {', '.join(CHOICES['mode'])}")
        lm = self.lm
        if self.mode == "copy" and self.adapter is None and not self.server_lora and lm.name.startswith("bundled:"):
            self.log("copy mode on the bundled model without its span selector: the base model writes poor "
                     "programs (0 of 24 bench fixes right); drop --no-adapter, or use spec")
        if self.server is not None and self.mode == "spec" and lm.info.speculative is None:
            hint = getattr(lm.client, "spec_hint", "--spec-type ngram-simple")
            self.log(f"{self.server} runs without speculation (start it with {hint}): "
                     "spec runs as its plain greedy decoding")

    def open_rows(self, jobs: int) -> str | None:
        """Decode up to `jobs` files together on the local llama.cpp engine (`editor.batched`), from now on;
        the reason when this model or these options cannot (files then go one at a time)."""
        from editllm.editor.batched import open_rows, refuse_rows

        why = refuse_rows(self.lm, self.edit_options())
        if why is None and (self._rows is None or self._rows.size != jobs):
            self.close_rows()
            self._rows = open_rows(self.lm, jobs)
        return why

    def close_rows(self) -> None:
        """Free the batched context (`open_rows`); files go one at a time again."""
        if self._rows is not None:
            self._rows.close()
            self._rows = None

    def edit_source(self, src: SourceFile, instruction: str, together: Sequence[SourceFile] = ()) -> FileEdit:
        """One read file through the loaded model or the server (`prepare` first). Concurrent with a server,
        and locally after `open_rows` (each thread's file on a row of its own); else one cache, so threads
        take turns (the session's lock). An EditError names the file first, as in a multi-file run it must.
        `together`: the files of the same edit, whose definitions this file may use."""
        from editllm.editor.diff import checked_diff  # torch from here on, after the input checks

        opts = self.edit_options()
        if (olds := renamed(instruction)) and opts.focus and not any(mentioned(old, src.text) for old in olds):
            # a rename's file that never mentions the old name (another file of the edit does: `no_such_rename`):
            # nothing of it can change, and the model, shown it whole, rewrote it for nothing (session 42's probe)
            from editllm.editor.decode import DecodeStats
            from editllm.editor.edit import EditResult

            self.log(f"{src.path}: note: the file does not mention {few(olds)}; left as it is")
            return FileEdit(src, src.raw, "", EditResult(src, src.raw, DecodeStats(self.mode), ""))
        self.status(f"{src.path} ({self.mode})")
        try:
            if self.server is not None:
                from editllm.remote.modes import edit_remote

                result = edit_remote(self.lm, src, instruction, opts)
            elif self._rows is not None:
                from editllm.editor.batched import row_model

                with self._rows.row() as row:  # the token callback is one file's progress: not with several
                    result = decode_file(row_model(self.lm, row), src, instruction, opts)
            else:
                with self._lock:
                    result = decode_file(self.lm, src, instruction, opts, self.on_tokens)
        except EditError as exc:
            if type(exc) is not EditError or str(exc).startswith(f"{src.path}:"):
                raise  # a ServerError keeps its type: edit_many retries the transient ones
            raise EditError(f"{src.path}: {exc}") from exc
        if result.fallback:
            self.log(f"{src.path}: copy mode fell back to spec mode ({result.fallback})")
        if result.imports_added:
            self.log(f"{src.path}: note: the edit uses {', '.join(result.imports_added)} without importing "
                     f"{'it' if len(result.imports_added) == 1 else 'them'}; added to the imports")
        if result.imports_dropped:
            self.log(f"{src.path}: note: the edit no longer uses {', '.join(result.imports_dropped)}; dropped from "
                     "the imports (Go does not build with an unused import)")
        if result.uncommented:
            self.log(f"{src.path}: note: the model commented out {lines_named(result.uncommented)} where the "
                     "instruction asks for removal; taken out")
        if result.repeats:
            self.log(f"{src.path}: note: the model wrote {few(list(result.repeats))} a second time, word for word; "
                     "the copy is left out")
        if result.removed_as_asked:
            self.log(f"{src.path}: note: the model did not remove {few(list(result.removed_as_asked))}, which is all "
                     "the instruction asks; removed")
        if result.reimports:
            added = few([f"`{line}`" for line in result.reimports])
            self.log(f"{src.path}: note: the model added {added}, which imports only what the file already imports; "
                     "left out")
        if result.filled or (result.merged and result.new_text != result.unmerged_text):  # not when nothing came back
            self.log(f"{src.path}: the model wrote only part of the file{left_out(result)}; merged it into place")
        for why in result.focused:  # a typo on a line the spell checker flags nothing on is never read (a probe)
            if why.startswith("spelling: "):
                self.log(f"{src.path}: note: the model read only the {why.removeprefix('spelling: ')} holding words a "
                         "spell checker flags; --no-focus has it read the whole file")
        if opts.check and cosmetic_only(src.path, src.text, result.new_text, instruction):
            self.log(f"{src.path}: note: the model's proposal changes only comments or layout, which the rule does "
                     "not speak of; no change proposed")
            result = replace(result, new_text=src.text)
        unknown = newly_unbound(src.path, src.text, result.new_text)
        if unknown and opts.check:
            raise EditError(f"{src.path}: the model's proposal uses {', '.join(unknown[:5])}, which is not defined "
                            "or imported where it is used, so it would break the file; nothing proposed, and the "
                            "file is not judged either way (run the check again, or `fix` to see the proposal)")
        for name in absent_subjects(src.text, instruction):  # unless another file of the edit has it
            if not any(name not in absent_subjects(other.text, instruction) for other in together if other is not src):
                self.log(f"{src.path}: note: the instruction edits in {name}, which the file does not have; the "
                         "model's edit is of what it took for it")
        for name in missing_asked(src.path, result.new_text, instruction):  # unless another file of the edit has it
            if not any(defines(other.text, name) for other in together if other is not src):
                self.log(f"{src.path}: note: the instruction asks for {name}, which the edit does not define")
        half_renamed = left_unrenamed(src.text, result.new_text, instruction)
        for old, new, lines in half_renamed:
            self.log(leftover_note(src.path, old, new, lines))
        if added := beyond_rename(src.text, result.new_text, instruction, bool(renamed(instruction))):
            self.log(beyond_rename_note(src.path, added))
        if kept := kept_removals(src.text, result.new_text, instruction):
            self.log(kept_note(src.path, kept))
        for name, lines in partly_kept(src.text, result.new_text, instruction):
            self.log(partly_kept_note(src.path, name, lines))
        if section := section_kept(src.path, src.lines, result.new_text, instruction):
            self.log(f"{src.path}: note: the instruction asks to remove the {section[0]} section, but the edit keeps "
                     f"{section[1]} of its {section[2]} lines")
        if keys := unasked_keys(src.path, src.text, result.new_text, instruction):
            self.log(unasked_keys_note(src.path, keys))
        lf = result.new_text.replace("\r\n", "\n")
        if drift := drifted(src.path, src.text, lf, instruction, src.lines):
            self.log(drifted_note(src.path, drift))
        was = src.text.replace("\r\n", "\n")
        if dropped := dropped_lines(src.path, was, lf, instruction):
            self.log(dropped_note(src.path, was, dropped, instruction))
        if fault := faults_added(src.path, src.text, result.new_text):
            self.log(f"{src.path}: note: the file read clean before, and tree-sitter's {fault} now; check that line "
                     "(a grammar older than the language can be wrong)")
        if not src.path.endswith(PYTHON):  # Python's names left undefined are noted below
            for name, lines in still_used(src.text, result.new_text, instruction):
                if name not in {old for old, _, _ in half_renamed}:  # said once, as a rename left half done (a
                    self.log(still_used_note(src.path, name, lines))  # probe, session 42: "the edit removes" it too)
        if unknown:
            self.log(f"{src.path}: note: the edit uses {', '.join(unknown[:5])}, which is not defined or imported "
                     "where it is used")
        return FileEdit(src, result.new_text, checked_diff([(src, result.new_text)]), result)

    def settings_key(self) -> dict:
        """What decides a file's edit besides its content and the instruction: the journal's key."""
        opts = {k: v for k, v in sorted(self.options.items()) if isinstance(v, str | int | float | bool | None)}
        return {"model": self.model_spec, "mode": self.mode, "engine": self.engine, "adapter": self.adapter,
                "server": self.server, "server_lora": self.server_lora, "options": opts,
                **({"batch_invariant": True} if self.batch_invariant else {})}


def one_by_one(edit_one: Callable[[SourceFile, str], FileEdit], sources: list[SourceFile],
               instruction: str) -> list[FileEdit]:
    """Each file in turn; the first file's EditError stops the edit (`stopped` says what that costs the others)."""
    edits: list[FileEdit] = []
    for k, src in enumerate(sources):
        try:
            edits.append(edit_one(src, instruction))
        except EditError as exc:
            stopped(exc, [(e.path, e) for e in edits] + [(later.path, None) for later in sources[k + 1:]])
            raise
    return edits


def stopped(exc: EditError, others: list[tuple[str, FileEdit | BaseException | None]]) -> None:
    """Say in a multi-file edit's error what happens to the other files. Such an edit is returned (and written)
    whole or not at all, so one file's refusal drops the others' edits too; its message named only that file,
    which left a user to guess whether the rest were written, printed or tried. `others`: each other file's
    path and its edit, its own error, or None when it was not tried. The error keeps its type (a server's
    error stays one) and gains `others_edited` (the paths whose proposed changes are dropped) for a caller
    that offers a way out (the CLI: `--journal`)."""
    if not others:
        return
    changed = [path for path, e in others if isinstance(e, FileEdit) and e.changed]
    same = [path for path, e in others if isinstance(e, FileEdit) and not e.changed]
    failed = [path for path, e in others if isinstance(e, BaseException)]
    untried = [path for path, e in others if e is None]
    parts = [f"the edit{'s' if len(changed) > 1 else ''} of {few(changed)} {'are' if len(changed) > 1 else 'is'} "
             "dropped too"] if changed else []
    parts += [f"{few(same)} had no change"] if same else []
    parts += [f"{few(failed)} failed as well"] if failed else []
    parts += [f"{few(untried)} not tried"] if untried else []
    exc.args = (f"{exc}; a multi-file edit is all or nothing: {', '.join(parts)}", *exc.args[1:])
    exc.others_edited = changed


def decode_file(lm: LoadedModel, src: SourceFile, instruction: str, opts: EditOptions,
                on_tokens: Callable[[int, float], None] | None = None) -> EditResult:
    """`edit_file`, leaving the engine fit for the next file whatever happens. An exception other than
    EditError (Ctrl-C, out of memory, a bug) may have cut a forward short with only some layers' cache
    entries written, so the cache is emptied: the next file reads the fixed prefix again."""
    from editllm.editor.edit import edit_file

    try:
        return edit_file(lm, src, instruction, opts, on_tokens)
    except EditError:
        raise
    except BaseException:
        reset = getattr(lm.engine, "reset", None)
        if reset is not None:
            reset()
        raise


def write_edits(edits: Iterable[FileEdit], worktree: bool = False) -> int:
    """Write every changed file atomically; `worktree`: the edits were made on staged blobs and go
    on top of the working tree's unstaged changes. Every refusal comes before the first write (a file
    not on disk, one changed on disk since it was read, unstaged changes the edit conflicts with), so a
    multi-file edit is written whole or not at all; two edits of one file are refused. Returns how many
    files were written."""
    from editllm.editor.diff import uninterrupted, worktree_text, write_all

    edits, planned, seen = list(edits), [], set()
    for e in edits:  # two edits of one file: whichever went last would win, after the first was written
        key = os.path.realpath(e.source.disk_path) if e.source.disk_path is not None else e.path
        if key in seen:
            raise EditError(f"{e.path}: two edits of this file; write one; nothing written")
        seen.add(key)
    for e in edits:
        if not e.changed:
            continue
        if e.source.disk_path is None:
            where = "no regular file in the working tree" if worktree else "not a file on disk"
            raise EditError(f"{e.path}: {where}; cannot --apply; nothing written")
        if read_only(e.source):
            raise EditError(f"{e.path}: read-only (mode {e.source.mode & 0o777:o}); nothing written")
        if not _unchanged_on_disk(e.source):
            raise EditError(f"{e.path}: changed on disk while editing; nothing written")
        planned.append((e.source, worktree_text(e.source, e.new_text) if worktree else e.new_text))
    with uninterrupted():  # Ctrl-C now comes after the last file, not between two
        write_all(planned, same_bytes=not worktree)  # every file ready before the first is replaced
    return len(planned)


def read_only(src: SourceFile) -> bool:
    """A file nobody may write (no w bit): --apply leaves it alone. Its folder being writable would let the
    atomic rename replace it anyway, and as root permissions would not stop it either."""
    return src.disk_path is not None and src.mode is not None and not src.mode & 0o222


def _unchanged_on_disk(src: SourceFile) -> bool:
    try:
        st = Path(src.disk_path).stat()
    except OSError:
        return False
    return st.st_mtime_ns == src.mtime_ns and st.st_size == src.size


def staged_files(only: list[str] | None = None, include: list[str] | None = None, exclude: list[str] | None = None,
                 max_size: int = 200_000, start: Path | None = None) -> tuple[list[SourceFile], list]:
    """The staged content of the repository around `start` (default: the working directory), read
    from the git index, and the entries skipped with their reasons (`gitio.Skipped`)."""
    from editllm.editor.gitio import open_repo, staged_sources

    repo = open_repo(start)
    if repo is None:
        raise EditError("--staged: not inside a git repository")
    try:
        return staged_sources(repo, only or None, include or [], exclude or [], max_size)
    except UnicodeDecodeError as exc:  # GitPython reads the whole index as UTF-8 names
        raise EditError("--staged: the git index holds a file name that is not UTF-8; GitPython cannot "
                        "read it") from exc
