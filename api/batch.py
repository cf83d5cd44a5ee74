"""Many files through one session: bounded concurrency, retries with backoff, a deadline per file, a
journal to resume from, and one outcome per file (local and server sessions share it).

Rules, so that a thousand-file run is safe to interrupt: a file that succeeds is written atomically (with
`apply`) or its diff kept for printing in input order; a file that fails is listed with its reason and never
blocks or corrupts another; a journal keyed by path, content sha256, instruction and settings lets a rerun
skip the files already done (a written file is recognised by its new content, so an instruction is never
applied twice: by its bytes on disk, under any settings, so a rerun with a larger --max-new-tokens or
another mode does not apply it again).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from editllm.editor.cachefs import replacing
from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile

JOURNAL_NAME = ".editllm-journal.jsonl"
SHARED_LIMIT = 8 << 20  # bytes of the cache's journal, which every run without --journal shares


def content_sha(text: str, bom: bool = False) -> str:
    """sha256 of a file's text as written (BOM included), the journal's notion of "the same content"."""
    return hashlib.sha256((("\ufeff" if bom else "") + text).encode("utf-8")).hexdigest()


def disk_sha(path: str | os.PathLike | None) -> str | None:
    """sha256 of a file's bytes on disk (None when it cannot be read): equal to `content_sha` of the text an
    edit wrote there, BOM included."""
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


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

    def __init__(self, folder: str | Path, limit: int | None = None) -> None:
        """`limit` (bytes): the journal every run shares (the cache's, not a `--journal DIR`) is cut to its
        newest half past it, so it cannot grow without end (each record holds a diff)."""
        self.path = Path(folder).expanduser() / JOURNAL_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the folder should be, a read-only parent
            raise EditError(f"--journal {folder}: cannot make the folder ({exc.strerror or exc})") from exc
        try:  # now, not after every file was decoded: a journal that cannot be written is one line up front
            with open(self.path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise EditError(f"--journal {folder}: cannot write {self.path.name} there ({exc.strerror or exc})") from exc
        self._lock = threading.Lock()
        if limit is not None:
            self._compact(limit)
        self.records: dict[str, list[dict]] = {}
        self.applied: dict[tuple[str, str], list[dict]] = {}  # (path, instruction's sha) -> records of writes
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                self._index(rec)

    def _index(self, rec: dict) -> None:
        self.records.setdefault(rec.get("key", ""), []).append(rec)
        if rec.get("applied") and rec.get("ask"):
            self.applied.setdefault((rec.get("path", ""), rec["ask"]), []).append(rec)

    @staticmethod
    def ask(instruction: str) -> str:
        """The instruction's sha256: what an earlier run applied, whatever its settings were."""
        return hashlib.sha256(instruction.encode("utf-8")).hexdigest()

    @staticmethod
    def key(path: str, instruction: str, settings: dict) -> str:
        blob = json.dumps({"path": path, "instruction": instruction, "settings": settings}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _compact(self, limit: int) -> None:
        """Past `limit` bytes, keep the newest whole lines of about `limit // 2` (at least the newest record):
        written beside and renamed over it, with its modes, under an exclusive lock that another process's
        append waits for (it then appends to the new file). Best effort: a journal that is a link, or a folder
        where no file can be made, is left to grow rather than failing the run."""
        if self.path.is_symlink():
            return
        try:
            with open(self.path, "rb") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                st = os.fstat(f.fileno())
                if st.st_size <= limit or st.st_ino != self.path.stat().st_ino:
                    return  # small, or compacted by another process while this one waited
                data = f.read()
                start = data.rfind(b"\n", 0, len(data) - limit // 2) + 1  # the line the cut falls in, whole
                with replacing(self.path, mode=st.st_mode & 0o777) as tmp:
                    tmp.write_bytes(data[start:])
        except OSError:
            return

    def append(self, rec: dict) -> None:
        with self._lock:
            while True:
                with open(self.path, "a", encoding="utf-8") as f:
                    fcntl.flock(f, fcntl.LOCK_SH)  # not while another process compacts the journal
                    if os.fstat(f.fileno()).st_ino != self.path.stat().st_ino:
                        continue  # compacted meanwhile: this is the old file, append to the new one
                    line = json.dumps(rec, sort_keys=True) + "\n"
                    if not _ends_a_line(self.path):  # a killed run's cut-off line: end it, so that this record
                        line = "\n" + line            # is not read as part of that one and lost
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
                    break
            self._index(rec)

    def finished(self, key: str, sha: str, apply: bool, path: str = "", instruction: str = "",
                 on_disk: str | None = None) -> dict | None:
        """The record that makes this file done, given its current content sha: edited from this content
        (and, with `apply`, nothing to write), or already written to it: the bytes on disk (`on_disk`) are
        those an earlier run wrote for this path and instruction, under any settings, even if it died
        between the write and its `done` record (`check --staged --apply` writes the working tree, not
        the staged blob, so it is the disk's bytes that say)."""
        if apply and on_disk is not None:
            for rec in reversed(self.applied.get((path, self.ask(instruction)), [])):
                if rec.get("written_sha") == on_disk:
                    return rec | {"diff": "", "changed": False}  # the edit is on disk already
        for rec in reversed(self.records.get(key, [])):
            if apply and rec.get("applied") and rec.get("new_sha") == sha:  # a record of an older editllm
                return rec | {"diff": "", "changed": False}
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


def check_batch(jobs: object, retries: object, timeout: object, backoff: object) -> None:
    """Refuse batch settings that cannot work, before the model loads (a library caller's `jobs="2"` or
    `timeout=-1` failed every file with an internal error; the CLI's `--timeout inf` did too)."""
    def whole(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if not whole(jobs) or jobs < 1:
        raise EditError(f"jobs {jobs!r}: give a whole number of files at once >= 1")
    if not whole(retries) or retries < 0:
        raise EditError(f"retries {retries!r}: give a whole number >= 0")
    for name, value in (("timeout", timeout), ("backoff", backoff)):
        if value is None and name == "timeout":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise EditError(f"{name} {value!r}: give a finite number of seconds > 0")


def connect(session, retries: int, timeout: float | None, backoff: float) -> None:
    """`session.prepare()`, with a server's transient refusals retried as a file's are: llama-server answers
    503 to everything while it loads its model, so a run started just after it failed at once. `timeout`
    bounds each request of the connection too (it waited 600 s on a server that never answered)."""
    from editllm.remote.client import ServerError

    if timeout is not None and hasattr(session, "connect_timeout"):
        session.connect_timeout = timeout
    for attempt in range(retries + 1):
        try:
            return session.prepare()
        except ServerError as exc:
            if not exc.transient or attempt == retries:
                raise
            time.sleep(min(30.0, backoff * 2 ** attempt))


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
    from editllm.editor.diff import worktree_text, write_all

    started = time.perf_counter()
    check_batch(jobs, retries, timeout, backoff)
    if journal is not None and not isinstance(journal, Journal):
        journal = Journal(journal)
    log = log or (lambda msg: None)
    previous = getattr(session, "connect_timeout", None)  # the session's own, put back at the end
    connect(session, retries, timeout, backoff)
    jobs = max(1, min(jobs, len(sources)))  # no more rows (or threads) than files: `--jobs 255` on 2 files
    if session.server is None and jobs > 1:
        why = session.open_rows(jobs)  # the llama.cpp engine decodes `jobs` files together in one batch
        if why is not None:
            log(f"--jobs: {why}; editing one file at a time (--server runs files concurrently)")
            jobs = 1
    client = getattr(getattr(session, "lm", None), "client", None) if session.server is not None else None
    old_timeout = getattr(client, "timeout", None)
    if client is not None and timeout is not None:
        client.timeout = timeout  # this run's; the session's own is put back at the end
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
        on_disk = disk_sha(src.disk_path) if apply and journal else None
        done = journal.finished(key, sha, apply, src.path, instruction, on_disk) if journal else None
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
                wait = min(30.0, backoff * 2 ** (outcome.attempts - 1))
                out_of_time = timeout is not None and time.monotonic() - t0 + wait >= timeout  # no time to try again
                if not exc.transient or outcome.attempts > retries or out_of_time:
                    outcome.error = str(exc)
                    return report(outcome)
                time.sleep(wait)
            except EditError as exc:
                outcome.error = str(exc)
                return report(outcome)
            except Exception as exc:  # a bug for one file must not take the others down
                outcome.error = f"internal error: {type(exc).__name__}: {exc}"
                return report(outcome)
        outcome.edit, outcome.diff, outcome.changed = edit, edit.diff, edit.changed
        rec = {"key": key, "path": src.path, "sha": sha, "changed": edit.changed, "diff": edit.diff,
               "new_sha": content_sha(edit.new_text, src.bom), "applied": False, "ask": Journal.ask(instruction)}
        with writing:
            if stopped.is_set():
                return
            try:
                if apply and edit.changed:
                    text = worktree_text(src, edit.new_text) if worktree else edit.new_text  # what lands on disk
                    rec["written_sha"] = content_sha(text, src.bom)
                    if journal:
                        journal.append(rec | {"status": "pending", "applied": True, "diff": ""})
                    # with `worktree`, the edit on top of the file's unstaged lines (the source is the staged blob)
                    write_all([(src, text)], same_bytes=not worktree)
                    outcome.written = True
                    rec["applied"] = True
            except EditError as exc:
                outcome.error, outcome.changed = str(exc), False
            except OSError as exc:
                outcome.error, outcome.changed = f"{src.path}: cannot write ({exc.strerror or exc}); not written", False
            if journal and outcome.error is None:
                try:
                    journal.append(rec | {"status": "done"})
                except OSError as exc:  # the file is written (or its diff kept); only the record of it is missing
                    outcome.error = (f"{src.path}: {'written, but ' if outcome.written else ''}the journal could "
                                     f"not record it ({exc.strerror or exc})")
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
    finally:
        if timeout is not None:
            if previous is not None:
                session.connect_timeout = previous
            if client is not None:  # made by `connect` with this run's timeout, or given it above
                client.timeout = previous if previous is not None else old_timeout
    pool.shutdown()
    return BatchReport(outcomes, time.perf_counter() - started)
