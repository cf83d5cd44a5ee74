"""Read input files and refuse what cannot be edited safely.

The model sees text with `\\n` line endings; `restore_line_endings` puts each unchanged line back
exactly as it was (CRLF, mixed endings, a missing final newline), so the diff touches only edited lines.
A file is split into lines once, here (`SourceFile.raw_lines`, `SourceFile.lines`); every later stage of
a request (focus, the whole-file check, copy mode's resolver, restoring line endings) is handed those.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from editllm.editor.align import line_opcodes
from editllm.editor.errors import EditError
from editllm.grammar.program import split_lines  # the grammar defines a line (re-exported from here)

BOM = "\ufeff"


@dataclass(frozen=True)
class SourceFile:
    """One input file: its display path, raw text and what is needed to write it back."""

    path: str  # as shown in the diff (relative, forward slashes)
    raw: str  # decoded text exactly as on disk, BOM removed
    bom: bool = False
    disk_path: Path | None = None  # None for stdin or blobs from the git index
    mtime_ns: int | None = None
    size: int | None = None
    mode: int | None = None

    @cached_property
    def text(self) -> str:
        """What the model sees: the raw text with every line ending as `\\n`."""
        return self.raw.replace("\r\n", "\n")

    @cached_property
    def raw_lines(self) -> list[str]:
        """The raw text's lines, each with its own ending: the one `split_lines` of this file."""
        return split_lines(self.raw)

    @cached_property
    def lines(self) -> list[str]:
        """`split_lines(self.text)`, taken from `raw_lines` without splitting again (a CRLF never spans
        two lines). Shared by every stage of a request: read it, never change it in place."""
        if "\r" not in self.raw:
            return self.raw_lines
        return [line.replace("\r\n", "\n") for line in self.raw_lines]

    @property
    def newline(self) -> str:
        """The dominant line ending, used for lines the model writes anew."""
        crlf = self.raw.count("\r\n")
        return "\r\n" if crlf and crlf >= self.raw.count("\n") - crlf else "\n"


def check_name(name: str) -> None:
    """Refuse a file name that a diff cannot carry as it is: not UTF-8 (the model's prompt and the diff are
    text), or holding a control character such as a tab or a newline (git quotes those names, which
    `patch` and the diff's own parser read differently; an error naming it would span lines)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditError(f"{os.fsencode(name)!r}: the file name is not UTF-8; rename it to edit it") from exc
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        raise EditError(f"{name!r}: a control character in the file name; rename it to edit it")


def decode_bytes(data: bytes, name: str) -> tuple[str, bool]:
    """Decode UTF-8 text; refuse binary and other encodings with a one-line reason. A NUL byte anywhere (not only
    in git's first 8,000 bytes: a text header before binary data) is valid UTF-8 but no text the model can edit."""
    if b"\x00" in data:
        raise EditError(f"{name}: binary file (contains NUL bytes); refusing to edit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EditError(f"{name}: not UTF-8 text (invalid byte at offset {exc.start}); refusing to edit") from exc
    lone_cr = text.count("\r") - text.count("\r\n")
    if lone_cr and lone_cr > text.count("\n"):  # lines end in `\n`, as the model writes them
        raise EditError(f"{name}: lines end in CR alone (classic Mac); refusing to edit")
    if text.startswith(BOM):
        return text[1:], True
    return text, False


def read_source(path: str | Path, display: str | None = None) -> SourceFile:
    """Read one file from disk for editing; errors name the path as the user gave it."""
    name = str(path)
    check_name(name)
    try:
        # a symlink is edited where it points, as editors write through one: the link stays a link, and the
        # diff names the file that changes (`display_path` resolves it too)
        p = Path(path).resolve(strict=True)
    except FileNotFoundError as exc:
        raise EditError(f"{name}: no such file") from exc
    except RuntimeError as exc:  # Python 3.11's word for a symlink loop
        raise EditError(f"{name}: symlink loop") from exc
    except OSError as exc:  # a name too long, a loop (ELOOP), a folder we may not enter
        raise EditError(f"{name}: cannot read ({exc.strerror or exc})") from exc
    if p.is_dir():
        raise EditError(f"{name}: is a directory; name files to edit")
    if not p.is_file():
        raise EditError(f"{name}: not a regular file")
    try:
        data = p.read_bytes()
        st = p.stat()
    except OSError as exc:
        raise EditError(f"{name}: cannot read ({exc.strerror})") from exc
    raw, bom = decode_bytes(data, name)
    shown = (display or name).replace(os.sep, "/")
    return SourceFile(shown, raw, bom, p, st.st_mtime_ns, st.st_size, st.st_mode)


def source_from_text(data: bytes, display: str) -> SourceFile:
    """A file that does not live on disk (stdin, a git blob)."""
    raw, bom = decode_bytes(data, display)
    return SourceFile(display, raw, bom)


def restore_line_endings(src: SourceFile, new_text: str, new_lines: list[str] | None = None) -> str:
    """Map model text (`\\n` endings) back to the file's own line endings, line by line; `new_lines`:
    `split_lines(new_text)` when the caller has it already.

    Lines the edit left alone keep their original bytes; new lines get the dominant ending. A file
    without a final newline keeps it that way: the model cannot express a missing final newline
    inside a fenced block, so its last `\\n` is an artefact of the format, not an edit.
    """
    old_raw, old = src.raw_lines, src.lines
    missing_final = bool(old) and not old[-1].endswith("\n")
    if missing_final:
        old = old[:-1] + [old[-1] + "\n"]  # a copy: src.lines is shared
    new = split_lines(new_text) if new_lines is None else new_lines
    pieces: list[str] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "equal":
            pieces.extend(old_raw[i1:i2])
        else:
            pieces.extend(line[:-1] + src.newline if line.endswith("\n") else line for line in new[j1:j2])
    for k in range(len(pieces) - 1):  # the old last line may now sit before appended lines
        if not pieces[k].endswith("\n"):
            pieces[k] += src.newline
    result = "".join(pieces)
    if missing_final and result.endswith("\n"):  # the ending the model's last line was given, not a CR of its own
        result = result[: -len(src.newline)] if result.endswith(src.newline) else result[:-1]
    return result


def python_tree(text: str):
    """The text's Python syntax tree (`ast.Module`), None when it does not parse; SyntaxWarnings for the file's
    own escapes are silenced (they are the file's, not ours). Read-only: the tree is shared (`parsed`)."""
    tree = parsed(text)
    return None if isinstance(tree, Exception) else tree


@lru_cache(maxsize=4)
def parsed(text: str):
    """The text's Python syntax tree, or the error that parsing it raised. One edit's checks (whether it still
    parses, a second definition, names left undefined, a copy program's text) read the same two texts: each was
    parsed again, four parses an edit, 80 ms of a 340 ms check on a 2,000-line module (session 27)."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return exc
