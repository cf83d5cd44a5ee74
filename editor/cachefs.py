"""Writing entries of the machine-level cache (`$EDITLLM_CACHE`): the bundled GGUF, its bf16 conversion, a
tokenizer folder; and any other file that must be written whole (training data, bench reports).

editllm runs in pre-commit hooks, so several processes may start together on a fresh cache (parallel commits,
pre-commit over many files, an editor and a terminal). Each entry is built beside its place and renamed into
it, so no reader sees half of one; a build holds a lock, so the slow ones (the 80 s, 5 GB conversion) run once
while the others wait and then use its result; an entry another process has just put in place is kept, never
deleted under its readers; a killed build's leftovers go at the next build; and an entry gets the modes the
umask gives (a cache made in a container's image as root is readable by the user who runs it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def umask() -> int:
    """The process's umask, read from /proc where it can be: setting it to read it would, for an instant,
    change the modes of files other threads create."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def locked(dest: Path, log: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold `dest`'s build lock (a `.NAME.lock` file beside it) for the block, saying so when another process
    holds it. A file system without locks (some network and FUSE mounts) builds without one."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log:
                log(f"waiting for another editllm to finish building {dest.name}")
            fcntl.flock(f, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def building(dest: Path, valid: Callable[[Path], bool], folder: bool = False,
             log: Callable[[str], None] | None = None) -> Iterator[Path | None]:
    """Build `dest` once: yields a temp file (or folder) beside it to fill, or None when `dest` is already
    valid, maybe built by another process while this one waited for the lock. On success the temp entry is
    synced, given the umask's modes and renamed to `dest` (an invalid `dest`, damaged or of an old format,
    is moved aside first and deleted after); on failure it is removed."""
    with locked(dest, log):
        if valid(dest):
            yield None
            return
        for old in dest.parent.glob(f".{glob.escape(dest.name)}.build-*"):  # a killed build's: the lock says none runs
            _remove(old)
        if folder:
            tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.build-"))
        else:
            fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.build-")
            os.close(fd)
            tmp = Path(name)
        try:
            yield tmp
            _settle(tmp)
            aside = None
            if dest.exists() or dest.is_symlink():  # damaged or old: no reader can use it anyway
                aside = dest.with_name(f".{dest.name}.build-old")  # swept above, so free
                os.replace(dest, aside)
            os.replace(tmp, dest)
            if aside is not None:
                _remove(aside)
        finally:
            if tmp.exists():
                _remove(tmp)


@contextlib.contextmanager
def replacing(path: Path, mode: int | None = None) -> Iterator[Path]:
    """A temp file beside `path` (the same suffix: compressed alike) to fill; when the block succeeds it is
    synced, given `mode` (else the umask's modes) and renamed over `path`, else removed. Readers in other
    processes thus see the old file or the new one, never half of it; two writers at once leave one whole file;
    and a full disk, a file size limit or a kill midway leaves `path` as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp" + path.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())  # a crash right after the rename must not leave an empty file in place
        if mode is None:
            shared(tmp)
        else:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def publish_file(path: Path, data: bytes) -> None:
    """Write one cache file whole (`replacing`)."""
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def shared(path: Path) -> None:
    """Give a file written through mkstemp (0600) the modes an ordinary file gets under the umask."""
    os.chmod(path, 0o666 & ~umask())


def _settle(entry: Path) -> None:
    """fsync every file (a crash right after the rename must not leave an empty entry in place) and give
    files 0666, folders 0777, less the umask (mkstemp and mkdtemp make them the owner's alone)."""
    mask = umask()
    paths = [entry] if entry.is_file() else [entry, *entry.rglob("*")]
    for p in paths:
        if p.is_file():
            with open(p, "rb+") as f:
                os.fsync(f.fileno())
            os.chmod(p, 0o666 & ~mask)
        elif p.is_dir():
            os.chmod(p, 0o777 & ~mask)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
