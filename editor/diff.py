"""Unified diffs that `patch -p1` and `git apply` accept, and atomic writes.

The diff is computed here from old and new text, never taken from the model. difflib's own
`unified_diff` omits `\\ No newline at end of file`, which git needs, so hunks are written by hand.
Every diff is parsed back with unidiff and applied in memory before anyone sees it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from editllm.editor.align import grouped_opcodes, line_opcodes
from editllm.editor.errors import EditError
from editllm.editor.signals import uninterrupted
from editllm.editor.source import SourceFile, split_lines
from unidiff import PatchSet

NO_NEWLINE = "\\ No newline at end of file\n"


def _range(start: int, count: int) -> str:
    """Hunk range as git writes it: `start` alone for one line, `start-1,0` for none."""
    if count == 1:
        return f"{start}"
    if count == 0:
        return f"{start - 1 if start else 0},0"
    return f"{start},{count}"


def _emit(prefix: str, line: str, out: list[str]) -> None:
    out.append(prefix + line)
    if not line.endswith("\n"):
        out.append("\n" + NO_NEWLINE)


def file_diff(path: str, old: str, new: str, context: int = 3, new_file: bool = False,
              old_lines: list[str] | None = None) -> str:
    """The git-style diff of one file, or "" when nothing changed; `old_lines`: `split_lines(old)`,
    when the caller has it."""
    if old == new:
        return ""
    a, b = split_lines(old) if old_lines is None else old_lines, split_lines(new)
    tab = "\t" if " " in path else ""  # as git writes it: `patch` ends a name at a tab, else at a space
    out = [f"diff --git a/{path} b/{path}\n"]
    if new_file:
        out += ["new file mode 100644\n", "--- /dev/null\n"]
    else:
        out.append(f"--- a/{path}{tab}\n")
    out.append(f"+++ b/{path}{tab}\n")
    for group in grouped_opcodes(line_opcodes(a, b), context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@\n")
        for tag, k1, k2, l1, l2 in group:
            if tag == "equal":
                for line in a[k1:k2]:
                    _emit(" ", line, out)
                continue
            for line in a[k1:k2]:
                _emit("-", line, out)
            for line in b[l1:l2]:
                _emit("+", line, out)
    return "".join(out)


def apply_diff(old: str, patched_file, old_lines: list[str] | None = None, offsets: bool = False) -> str:
    """Apply one unidiff PatchedFile to `old` in memory; the independent check of what we print.
    `old_lines`: `split_lines(old)`, when the caller has it. `offsets`: a hunk whose lines moved (lines
    added or removed above it) is applied where its context and removed lines are found, nearest first,
    as `patch` and `git apply` do (no fuzz: every line must match)."""
    src = split_lines(old) if old_lines is None else old_lines
    out: list[str] = []
    pos = shift = 0
    for hunk in patched_file:
        start = max(hunk.source_start - 1, 0) if hunk.source_length else hunk.source_start
        if offsets:
            start = _find_hunk(src, pos, start + shift, [_strip_nl(ln.value) for ln in hunk
                                                         if ln.is_context or ln.is_removed])
            shift = start - (max(hunk.source_start - 1, 0) if hunk.source_length else hunk.source_start)
        if start < pos or start > len(src):
            raise EditError(f"internal error: hunk at line {hunk.source_start} does not fit")
        out.extend(src[pos:start])
        pos = start
        for line in hunk:
            value = line.value
            if line.is_context or line.is_removed:
                if pos >= len(src) or _strip_nl(src[pos]) != _strip_nl(value):
                    raise EditError(f"internal error: diff context mismatch at line {pos + 1}")
                if line.is_context:
                    out.append(src[pos])
                pos += 1
            elif line.is_added:
                out.append(value)
        _fix_no_newline(hunk, out)
    out.extend(src[pos:])
    return "".join(out)


def _find_hunk(src: list[str], pos: int, guess: int, block: list[str]) -> int:
    """Where `block` (a hunk's old lines) stands in `src` at or after `pos`, the nearest to `guess`; raises
    EditError when it is nowhere."""
    def fits(at: int) -> bool:
        return at + len(block) <= len(src) and all(_strip_nl(src[at + k]) == b for k, b in enumerate(block))

    for step in range(max(len(src), 1) + 1):
        for at in (guess - step, guess + step) if step else (guess,):
            if pos <= at <= len(src) and fits(at):
                return at
    raise EditError("hunk does not apply")


def _strip_nl(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def _fix_no_newline(hunk, out: list[str]) -> None:
    """unidiff keeps a line's newline even when `\\ No newline` follows; drop it on the new side."""
    lines = list(hunk)
    for k, line in enumerate(lines):
        if line.line_type == "\\" and k and lines[k - 1].line_type in ("+", " "):
            if out and out[-1].endswith("\n") and lines[k - 1].value == out[-1]:
                out[-1] = out[-1][:-1]


def checked_diff(changes: list[tuple[SourceFile, str]]) -> str:
    """One diff for several files, verified: parsed back and applied, it must give each new text."""
    parts = []
    for src, new in changes:
        old, old_lines = _with_bom(src, src.raw), _bom_lines(src)
        text = file_diff(src.path, old, _with_bom(src, new), old_lines=old_lines)
        if not text:
            continue
        try:
            patch = PatchSet(text)
        except Exception as exc:  # unidiff raises its own UnidiffParseError and ValueErrors
            raise EditError(f"{src.path}: internal error, the diff does not parse ({exc})") from exc
        if len(patch) != 1 or apply_diff(old, patch[0], old_lines) != _with_bom(src, new):
            raise EditError(f"{src.path}: internal error, the diff would not reproduce the edit; nothing printed")
        parts.append(text)
    return "".join(parts)


def _with_bom(src: SourceFile, text: str) -> str:
    return ("\ufeff" + text) if src.bom else text


def _bom_lines(src: SourceFile) -> list[str]:
    """`split_lines(_with_bom(src, src.raw))` from the file's lines, without splitting it again."""
    if not src.bom:
        return src.raw_lines
    return ["\ufeff" + src.raw_lines[0], *src.raw_lines[1:]] if src.raw_lines else ["\ufeff"]


def write_all(planned: list[tuple[SourceFile, str]], same_bytes: bool = True) -> None:
    """Write every file or none. Each new text goes to a temp file beside its file first (written, synced,
    owner and mode set); only when all are ready are they renamed over the files, so a full disk or an
    unwritable folder met at the second file leaves the first as it was. A file that changed on disk since
    it was read is refused, so a concurrent edit is never lost: its size and mtime, and (`same_bytes`, where
    the source's text is the file's: not for edits of staged blobs) its bytes, since a change within the
    mtime's granularity keeps both."""
    staged: list[tuple[str, Path]] = []
    try:
        for src, new in planned:
            path, st = _still_as_read(src, same_bytes)
            try:
                staged.append((_stage(path, _with_bom(src, new).encode("utf-8"), src, st), path))
            except OSError as exc:  # a full disk, a read-only folder: the user's to fix, not a bug
                raise EditError(f"{src.path}: cannot write ({exc.strerror or exc}); nothing written") from exc
        with uninterrupted():
            for done, ((tmp, path), (src, _)) in enumerate(zip(staged, planned, strict=True)):
                try:
                    os.replace(tmp, path)
                except OSError as exc:  # a rename within a folder: not for want of space; the folder changed
                    before = f" ({done} file(s) before it were written)" if done else "; nothing written"
                    raise EditError(f"{src.path}: cannot write ({exc.strerror or exc}){before}") from exc
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _still_as_read(src: SourceFile, same_bytes: bool) -> tuple[Path, os.stat_result]:
    """The file's path and stat, when it holds what was read; else EditError."""
    if src.disk_path is None:
        raise EditError(f"{src.path}: not a file on disk; cannot --apply")
    path = Path(src.disk_path)
    try:
        st = path.stat()
        same = st.st_mtime_ns == src.mtime_ns and st.st_size == src.size
        if same and same_bytes:
            same = path.read_bytes() == _with_bom(src, src.raw).encode("utf-8")
    except OSError as exc:
        raise EditError(f"{src.path}: vanished while editing; nothing written") from exc
    if not same:
        raise EditError(f"{src.path}: changed on disk while editing; nothing written")
    return path, st


def _stage(path: Path, data: bytes, src: SourceFile, st: os.stat_result) -> str:
    """A synced temp file beside `path` holding `data`, with the old file's owner and mode: ready to rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".editllm")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _keep_owner(tmp, st)
        if src.mode is not None:  # after chown, which clears the set-id bits
            os.chmod(tmp, src.mode & 0o7777)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _keep_owner(tmp: str, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group where we may (the owner as root; a group of ours as
    anyone): the rename would otherwise hand someone else's file to whoever ran the edit."""
    if (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except PermissionError:
        if st.st_gid in os.getgroups():
            os.chown(tmp, -1, st.st_gid)


def worktree_text(src: SourceFile, new: str) -> str:
    """What the working tree file becomes when an edit computed on its staged blob goes on top of it: the
    edit's hunks applied to the file's unstaged changes, if it has any. Raises EditError when they do not
    apply cleanly, so a multi-file write can refuse before its first file."""
    if src.disk_path is None:
        raise EditError(f"{src.path}: not in the working tree; cannot --apply")
    try:
        current = Path(src.disk_path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EditError(f"{src.path}: cannot read the working tree file; nothing written") from exc
    current = current.removeprefix("\ufeff") if src.bom else current
    # git's eol conversion (core.autocrlf, `eol=crlf`): the index holds LF, the working tree CRLF throughout
    crlf = "\r" not in src.raw and "\n" in current and current.count("\r\n") == current.count("\n")
    if crlf:
        current = current.replace("\r\n", "\n")
    if current != src.raw:
        patch = PatchSet(file_diff(src.path, src.raw, new))
        try:
            new = apply_diff(current, patch[0], offsets=True)
        except EditError as exc:
            raise EditError(f"{src.path}: the edit conflicts with unstaged changes; nothing written") from exc
    return new.replace("\n", "\r\n") if crlf else new
