"""Edit programs: the two-primitive language of copy mode.

    program := op*        op := copy | gen
    copy    := '<copy lines="' I '-' J '"/>'     1 <= I <= J <= N
    gen     := '<gen>' TEXT '</gen>'              TEXT: any text without '</gen>'

`Copy(i, j)` emits input lines i..j inclusive, each with its own line ending; `Gen(text)` emits
text verbatim. Ops are plain frozen dataclasses so a finer primitive (copy a span of tokens inside a
line) can join them later without touching the others.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

GEN_OPEN, GEN_CLOSE = "<gen>", "</gen>"
COPY_RE = re.compile(r'<copy lines="([1-9][0-9]*)-([1-9][0-9]*)"/>')


def split_lines(text: str) -> list[str]:
    """Split after each `\n` only, keeping it; `str.splitlines` would also split on `\r`, `\f`, U+2028...

    This is what `Copy(i, j)` counts, so it lives in the grammar, the lowest layer; `editor.source`
    re-exports it."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


class ProgramError(ValueError):
    """A program that does not parse or does not fit its input; the message says where."""


@dataclass(frozen=True)
class Copy:
    i: int
    j: int

    def render(self) -> str:
        return f'<copy lines="{self.i}-{self.j}"/>'


@dataclass(frozen=True)
class Gen:
    text: str

    def render(self) -> str:
        return f"{GEN_OPEN}{self.text}{GEN_CLOSE}"


Op = Copy | Gen


def render(ops: list[Op]) -> str:
    return "".join(op.render() for op in ops)


def parse(text: str) -> list[Op]:
    """Parse program text; a ProgramError names the character offset of the first problem."""
    ops: list[Op] = []
    pos = 0
    while pos < len(text):
        if text.startswith(GEN_OPEN, pos):
            end = text.find(GEN_CLOSE, pos + len(GEN_OPEN))
            if end < 0:
                raise ProgramError(f"offset {pos}: <gen> is never closed")
            ops.append(Gen(text[pos + len(GEN_OPEN) : end]))
            pos = end + len(GEN_CLOSE)
            continue
        m = COPY_RE.match(text, pos)
        if m:
            ops.append(Copy(int(m.group(1)), int(m.group(2))))
            pos = m.end()
            continue
        raise ProgramError(f"offset {pos}: expected <copy lines=\"I-J\"/> or <gen>, found {text[pos:pos + 20]!r}")
    return ops


def check(ops: list[Op], n_lines: int, monotonic: bool = True) -> None:
    """Raise ProgramError unless every copy has 1 <= I <= J <= N (and spans increase, if monotonic)."""
    last = 0
    for k, op in enumerate(ops):
        if isinstance(op, Copy):
            if not 1 <= op.i <= op.j <= n_lines:
                raise ProgramError(f"op {k}: lines {op.i}-{op.j} out of range 1..{n_lines}")
            if monotonic and op.i <= last:
                raise ProgramError(f"op {k}: lines {op.i}-{op.j} start at or before line {last}, copied already")
            last = op.j
        elif GEN_CLOSE in op.text:
            raise ProgramError(f"op {k}: gen text contains {GEN_CLOSE}")


def resolve(ops: list[Op], lines: list[str]) -> str:
    """The text a program denotes over input `lines` (each with its own ending).

    A gen span is whole lines: one whose text does not end with a newline gets one, or the next op's line
    would be glued to its last (`<gen>b = 5</gen><copy lines="3-3"/>` is `b = 5` then line 3, not
    `b = 5c = 3`), and a last span would drop the file's final newline. The ending added is the input's
    last line's; a last span over an input without a final newline (or an empty one) keeps its text as written."""
    check(ops, len(lines), monotonic=False)
    ending = "\r\n" if lines and lines[-1].endswith("\r\n") else "\n"
    unterminated = not lines or not lines[-1].endswith("\n")
    parts = []
    for k, op in enumerate(ops):
        if isinstance(op, Copy):
            parts.append("".join(lines[op.i - 1 : op.j]))
        elif op.text and not op.text.endswith("\n") and (k + 1 < len(ops) or not unterminated):
            parts.append(op.text + ending)
        else:
            parts.append(op.text)
    return "".join(parts)


def replaced(ops: list[Op], k: int, n_lines: int) -> tuple[int, int]:
    """The input lines gen op `k` stands in for, as a slice (0-based start, end): those after the last copy
    before it and before the first copy after it."""
    start = next((o.j for o in reversed(ops[:k]) if isinstance(o, Copy)), 0)
    end = next((o.i - 1 for o in ops[k + 1:] if isinstance(o, Copy)), n_lines)
    return start, end


def idle_copy(ops: list[Op], lines: list[str]) -> Copy | None:
    """The copy right before the first gen span that only writes again the input lines it stands in for.

    A gen span is new text: the oracle copies every line an edit keeps, so it never writes one that repeats
    the input. A model that does has misread its line numbers. The span selector's commonest miss is of this
    kind: it copies a line too far or too few, then writes the next line as it was, so the fix it meant
    never comes. Copy mode then asks again without that copy (`editor.copymode.run_copy`). None when every
    gen span changes something (or when an idle one has no copy before it)."""
    for k, op in enumerate(ops):
        if isinstance(op, Gen) and k and isinstance(ops[k - 1], Copy):
            start, end = replaced(ops, k, len(lines))
            if end > start and op.text == "".join(lines[start:end]):
                return ops[k - 1]
    return None


def oracle(before: str, after: str) -> list[Op]:
    """The program a perfect model would write: equal line runs copied, everything else generated.

    Raises ProgramError when the new text contains `</gen>`, which the grammar cannot express.
    """
    if GEN_CLOSE in after:
        raise ProgramError(f"the new text contains {GEN_CLOSE}, which a gen span cannot hold")
    a, b = split_lines(before), split_lines(after)
    ops: list[Op] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append(Copy(i1 + 1, i2))
        elif j2 > j1:
            text = "".join(b[j1:j2])
            if ops and isinstance(ops[-1], Gen):
                ops[-1] = Gen(ops[-1].text + text)
            else:
                ops.append(Gen(text))
    return ops
