"""Many files through one session: bounded concurrency, retries with backoff, a deadline per file, a
journal to resume from, and one outcome per file (local and server sessions share it).

Rules, so that a thousand-file run is safe to interrupt: a file that succeeds is written atomically (with
`apply`) or its diff kept for printing in input order; a file that fails is listed with its reason and never
blocks or corrupts another; a journal keyed by path, content sha256, instruction and settings lets a rerun
skip the files already done (a written file is recognised by its new content, so an instruction is never
applied twice).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile

JOURNAL_NAME = ".editllm-journal.jsonl"


def content_sha(text: str, bom: bool = False) -> str:
    """sha256 of a file's text as written (BOM included), the journal's notion of "the same content"."""
    return hashlib.sha256((("\ufeff" if bom else "") + text).encode("utf-8")).hexdigest()


def _ends_a_line(path: Path) -> bool:
    """The file is empty, missing or ends with a newline."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return True
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True


class Journal:
    """An append-only JSONL file of per-file records; a torn last line (a killed run) is ignored.

    A record is `pending` (about to write `new_sha`) or `done` (with the diff, so a resumed run without
    `--apply` prints it again). Appends are flushed and fsynced under a lock: threads share one journal.
    """

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder).expanduser() / JOURNAL_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the folder should be, a read-only parent
            raise EditError(f"--journal {folder}: cannot make the folder ({exc.strerror or exc})") from exc
        self._lock = threading.Lock()
        self.records: dict[str, list[dict]] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                self.records.setdefault(rec.get("key", ""), []).append(rec)

    @staticmethod
    def key(path: str, instruction: str, settings: dict) -> str:
        blob = json.dumps({"path": path, "instruction": instruction, "settings": settings}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def append(self, rec: dict) -> None:
        line = json.dumps(rec, sort_keys=True) + "\n"
        with self._lock:
            if not _ends_a_line(self.path):  # a killed run's cut-off line: end it, so that this record is
                line = "\n" + line            # not read as part of that one and lost
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.records.setdefault(rec["key"], []).append(rec)

    def finished(self, key: str, sha: str, apply: bool) -> dict | None:
        """The record that makes this file done, given its current content sha: edited from this content
        (and, with `apply`, nothing to write), or already written to it (`new_sha`, even if the run died
        between the write and its `done` record)."""
        for rec in reversed(self.records.get(key, [])):
            if apply and rec.get("applied") and rec.get("new_sha") == sha:
                return rec | {"diff": "", "changed": False}  # the edit is on disk already
            if rec.get("status") == "done" and rec.get("sha") == sha and (not apply or not rec.get("changed")):
                return rec
        return None


@dataclass
class FileOutcome:
    """One file's fate in a batch run: edited (and maybe written), resumed from the journal, or failed with
    its reason; a failure is recorded here rather than raised, so one file never stops the others."""

    source: SourceFile
    edit: object | None = None  # the FileEdit, when this run edited the file
    error: str | None = None  # why it failed (one line)
    diff: str = ""
    changed: bool = False
    resumed: bool = False  # done in an earlier run (from the journal)
    written: bool = False
    attempts: int = 0
    seconds: float = 0.0

    @property
    def path(self) -> str:
        """The path as the diff shows it."""
        return self.source.path


@dataclass
class BatchReport:
    """What `edit_many` returns: one outcome per file, in input order, and the run's wall time."""

    outcomes: list[FileOutcome]
    seconds: float = 0.0

    @property
    def failed(self) -> list[FileOutcome]:
        """The files that failed (each with its `error`)."""
        return [o for o in self.outcomes if o.error is not None]

    @property
    def changed(self) -> list[FileOutcome]:
        """The files with a proposed (or, with `apply`, written) change."""
        return [o for o in self.outcomes if o.changed]

    def exit_code(self, check: bool = False) -> int:
        """2 if any file failed (over `check`'s 1 for a proposed change), else 1/0 as `check` says."""
        if self.failed:
            return 2
        return 1 if check and self.changed else 0

    def summary(self) -> str:
        """One line for stderr: counts and seconds."""
        resumed = sum(o.resumed for o in self.outcomes)
        return (f"{len(self.outcomes)} file(s): {len(self.changed)} changed, {len(self.failed)} failed, "
                f"{resumed} resumed from the journal, {self.seconds:.1f} s")


Progress = Callable[[int, int, int], None]  # (files finished, total, failed so far)


def edit_many(session, sources: Sequence[SourceFile], instruction: str, *, jobs: int = 1, retries: int = 2,
              timeout: float | None = None, backoff: float = 1.0, journal: Journal | str | os.PathLike | None = None,
              apply: bool = False, worktree: bool = False, progress: Progress | None = None,
              log: Callable[[str], None] | None = None) -> BatchReport:
    """Edit every source through `session` (an EditSession, `prepare`d here); never raises for one file.

    `jobs` workers run at once: requests to a server, or rows of one batch on the local llama.cpp engine
    (`editor.batched`; other local engines run one file at a time).
    A transient server error (down, restarting, busy) is retried `retries` times with exponential backoff;
    `timeout` (seconds) bounds each request to the server and the file's retries as a whole.
    `journal`: a Journal, or the folder to keep one in. With `apply`, a file that cannot be written
    (read-only, or not on disk) fails before it is decoded, as `write_edits` would refuse it."""
    from editllm.api.session import read_only
    from editllm.editor.diff import apply_to_worktree, write_atomic

    started = time.perf_counter()
    if journal is not None and not isinstance(journal, Journal):
        journal = Journal(journal)
    log = log or (lambda msg: None)
    session.prepare()
    if session.server is None and jobs > 1:
        why = session.open_rows(jobs)  # the llama.cpp engine decodes `jobs` files together in one batch
        if why is not None:
            log(f"--jobs: {why}; editing one file at a time (--server runs files concurrently)")
            jobs = 1
    if session.server is not None and timeout is not None:
        session.lm.client.timeout = timeout
    settings = session.settings_key()
    outcomes = [FileOutcome(src) for src in sources]
    lock = threading.Lock()
    writing = threading.Lock()  # a file's write with its journal records; Ctrl-C waits for it, no longer
    stopped = threading.Event()  # set by Ctrl-C: no write starts after it
    finished = [0, 0]

    def report(outcome: FileOutcome) -> None:
        with lock:
            finished[0] += 1
            finished[1] += outcome.error is not None
            if progress:
                progress(finished[0], len(outcomes), finished[1])

    def one(outcome: FileOutcome) -> None:
        from editllm.remote.client import ServerError

        src = outcome.source
        t0 = time.monotonic()
        sha = content_sha(src.raw, src.bom)
        key = Journal.key(src.path, instruction, settings)
        done = journal.finished(key, sha, apply) if journal else None
        if done is not None:
            outcome.resumed, outcome.diff, outcome.changed = True, done.get("diff", ""), bool(done.get("changed"))
            return report(outcome)
        if apply and read_only(src):
            outcome.error = f"{src.path}: read-only (mode {src.mode & 0o777:o}); not written"
            return report(outcome)
        if apply and src.disk_path is None:
            outcome.error = f"{src.path}: not a file on disk; cannot apply; not written"
            return report(outcome)
        while True:
            outcome.attempts += 1
            try:
                edit = session.edit_source(src, instruction)
                break
            except ServerError as exc:
                out_of_time = timeout is not None and time.monotonic() - t0 >= timeout
                if not exc.transient or outcome.attempts > retries or out_of_time:
                    outcome.error = str(exc)
                    return report(outcome)
                time.sleep(min(30.0, backoff * 2 ** (outcome.attempts - 1)))
            except EditError as exc:
                outcome.error = str(exc)
                return report(outcome)
            except Exception as exc:  # a bug for one file must not take the others down
                outcome.error = f"internal error: {type(exc).__name__}: {exc}"
                return report(outcome)
        outcome.edit, outcome.diff, outcome.changed = edit, edit.diff, edit.changed
        rec = {"key": key, "path": src.path, "sha": sha, "changed": edit.changed, "diff": edit.diff,
               "new_sha": content_sha(edit.new_text, src.bom), "applied": False}
        try:
            with writing:
                if stopped.is_set():
                    return
                if apply and edit.changed:
                    if journal:
                        journal.append(rec | {"status": "pending", "applied": True, "diff": ""})
                    (apply_to_worktree if worktree else write_atomic)(src, edit.new_text)
                    outcome.written = True
                    rec["applied"] = True
                if journal:
                    journal.append(rec | {"status": "done"})
        except EditError as exc:
            outcome.error = str(exc)
        except OSError as exc:
            outcome.error = f"{src.path}: cannot write ({exc.strerror or exc}); not written"
        outcome.seconds = time.monotonic() - t0
        report(outcome)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        list(pool.map(one, outcomes))
    except KeyboardInterrupt:
        # Ctrl-C, or SIGTERM through the CLI: files not begun are dropped, a write under way finishes with its
        # journal lines and no other starts; a file being decoded is abandoned (the CLI exits without waiting
        # for it), and a rerun with the journal edits it and the rest
        from editllm.editor.diff import uninterrupted

        pool.shutdown(wait=False, cancel_futures=True)
        stopped.set()
        with uninterrupted(), writing:  # a second Ctrl-C must not cut that write (nor leave its temp file)
            pass
        raise
    pool.shutdown()
    return BatchReport(outcomes, time.perf_counter() - started)
