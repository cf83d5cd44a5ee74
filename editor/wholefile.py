"""Whole-file safety: a partial rewrite must never become a diff that deletes the user's code.

Asked for a whole file, small models often write only the part they changed. A diff against that
fragment would delete everything else, so every regenerated text is checked here first:

- it is a *fragment* when it drops named top-level definitions the instruction does not mention, or
  when it loses a large run of lines at the start or end of the file that nobody asked to remove;
- a fragment is *merged* into the original: code by the names of the definitions it redefines
  (recursively, so one method of a class lands in its class), other text by the region it aligns
  with; what cannot be placed unambiguously is refused with a one-line reason.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from editllm.editor.errors import EditError
from editllm.editor.source import split_lines

DEF = re.compile(
    r"^[ \t]*(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function\*?|fn|func|interface|struct|enum|trait|impl)\s+([A-Za-z_$][\w$]*)"
)
DECORATOR = re.compile(r"^[ \t]*@")
CLOSER = re.compile(r"^[ \t]*[}\])]")
REMOVAL = re.compile(r"\b(remove|delete|drop|strip|cut|shorten|truncate|trim|only keep|keep only)\b", re.I)


@dataclass
class Block:
    """A statement at one indentation level with everything nested under it."""

    name: str | None
    lines: list[str]  # content lines (no trailing blank lines)
    blank: list[str]  # blank lines that follow it

    @property
    def text(self) -> str:
        return "".join(self.lines)


@dataclass(frozen=True)
class WholeFile:
    """The text to diff against, and how it was obtained."""

    text: str
    complete: bool  # the model's output was already a whole file
    merged: bool  # a fragment was placed into the original


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def is_blank(line: str) -> bool:
    return not line.strip()


def split_blocks(lines: list[str], indent: int) -> list[Block]:
    """Cut lines into blocks that start at a non-blank line indented exactly `indent`.

    Deeper lines, closing brackets at that level and a definition right after its decorators stay
    in the current block. Lines before the first block start (shallower text) form an unnamed block.
    """
    blocks: list[Block] = []
    for line in lines:
        starts = not is_blank(line) and indent_of(line) <= indent and not CLOSER.match(line)
        if starts and blocks and blocks[-1].lines and not blocks[-1].blank:
            last = blocks[-1]
            if DECORATOR.match(last.lines[-1]) and indent_of(last.lines[-1]) == indent:
                starts = False  # `@decorator` then `def f`: one block named f
        if starts or not blocks:
            blocks.append(Block(None, [], []))
        block = blocks[-1]
        if is_blank(line):
            block.blank.append(line)
            continue
        if block.blank:  # blank lines inside a nested body belong to the content
            block.lines.extend(block.blank)
            block.blank = []
        block.lines.append(line)
        if block.name is None:
            m = DEF.match(line)
            if m and indent_of(line) == indent:
                block.name = m.group(1)
    return blocks


def names(blocks: list[Block]) -> list[str]:
    return [b.name for b in blocks if b.name]


def mentioned(name: str, instruction: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", instruction) is not None


def child_indent(block: Block) -> int | None:
    """Indentation of the body of a block (its first deeper non-blank line), if any."""
    base = indent_of(block.lines[0])
    for line in block.lines[1:]:
        if not is_blank(line) and indent_of(line) > base:
            return indent_of(line)
    return None


def missing_names(old: list[str], new: list[str], instruction: str) -> list[str]:
    """Top-level definitions of `old` that `new` lacks and the instruction does not name."""
    have = set(names(split_blocks(new, 0)))
    return [n for n in names(split_blocks(old, 0)) if n not in have and not mentioned(n, instruction)]


def lost_edges(old: list[str], new: list[str]) -> int:
    """Non-blank lines cut off at the start or end of the file with nothing written in their place."""
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    ops = sm.get_opcodes()
    lost = 0
    for tag, i1, i2, j1, j2 in (ops[0], ops[-1]) if ops else ():
        if tag in ("delete", "replace") and (j2 - j1) * 3 < (i2 - i1):
            lost += sum(1 for line in old[i1:i2] if not is_blank(line))
    return lost


def is_fragment(old: list[str], new: list[str], instruction: str) -> bool:
    if not old:
        return False
    if missing_names(old, new, instruction):
        return True
    if REMOVAL.search(instruction):
        return False
    nonblank = sum(1 for line in old if not is_blank(line))
    return lost_edges(old, new) > max(2, nonblank // 10)


def merge_blocks(old: list[Block], new: list[Block], instruction: str, where: str) -> list[Block]:
    """Put each new block in place of the old block of the same name (or same text); new names go
    after the block that precedes them in the fragment. Unplaceable text raises EditError."""
    index: dict[str, list[int]] = {}
    for i, b in enumerate(old):
        index.setdefault(b.name or "\0" + b.text, []).append(i)
    replaced: dict[int, Block] = {}
    inserts: dict[int, list[Block]] = {}  # old index -> blocks to insert after it (-1: at the top)
    anchor: int | None = None
    leading: list[Block] = []
    for nb in new:
        key = nb.name or "\0" + nb.text
        hits = index.get(key, [])
        if len(hits) > 1:
            raise EditError(f"cannot place the model's partial output: {nb.name or 'a statement'!s} "
                            f"occurs {len(hits)} times in {where}; nothing written")
        if hits:
            i = hits[0]
            replaced[i] = merge_pair(old[i], nb, instruction, where) if nb.name else old[i]
            if leading:
                inserts.setdefault(i - 1, []).extend(leading)
                leading = []
            anchor = i
        elif anchor is None:
            leading.append(nb)
        else:
            inserts.setdefault(anchor, []).append(nb)
    if anchor is None:
        raise EditError(f"cannot place the model's partial output in {where}: it shares no definition "
                        "with the file; nothing written")
    out: list[Block] = list(inserts.get(-1, []))
    for i, b in enumerate(old):
        out.append(replaced.get(i, b))
        for ins in inserts.get(i, []):  # new definitions take the spacing of their neighbour
            out.append(Block(ins.name, ins.lines, list(b.blank) or ins.blank))
    return out


def merge_pair(old: Block, new: Block, instruction: str, where: str) -> Block:
    """The new version of a definition; if it lost nested definitions it did not mean to drop (a
    class shown with one method), merge its body with the old body instead."""
    blank = old.blank  # keep the original spacing after the block
    inner = child_indent(old)
    if inner is None or child_indent(new) != inner:
        return Block(new.name, new.lines, blank)
    old_body, new_body = split_blocks(old.lines[1:], inner), split_blocks(new.lines[1:], inner)
    have = set(names(new_body))
    if all(n in have or mentioned(n, instruction) for n in names(old_body)):
        return Block(new.name, new.lines, blank)
    head = [new.lines[0]]
    body = merge_blocks(old_body, new_body, instruction, f"{where}:{old.name}")
    lines = head + [line for b in body for line in b.lines + b.blank]
    while lines and is_blank(lines[-1]):
        lines.pop()
    return Block(new.name, lines, blank)


def merge_code(old: list[str], new: list[str], instruction: str) -> list[str] | None:
    """Merge by definition names; None when the text has no definitions to go by."""
    base = min((indent_of(line) for line in new if not is_blank(line)), default=0)
    if base == 0:
        old_blocks = split_blocks(old, 0)
        if not names(old_blocks):
            return None
        merged = merge_blocks(old_blocks, split_blocks(new, 0), instruction, "the file")
        return [line for b in merged for line in b.lines + b.blank]
    # An indented fragment (a method alone): find the one definition whose body holds its names.
    new_names = set(names(split_blocks(new, base)))
    if not new_names:
        return None
    parents = [
        (i, b) for i, b in enumerate(split_blocks(old, 0))
        if child_indent(b) == base and new_names & set(names(split_blocks(b.lines[1:], base)))
    ]
    if len(parents) != 1:
        return None
    i, parent = parents[0]
    wrapped = Block(parent.name, [parent.lines[0]] + new, parent.blank)
    blocks = split_blocks(old, 0)
    blocks[i] = merge_pair(parent, wrapped, instruction, "the file")
    return [line for b in blocks for line in b.lines + b.blank]


def merge_region(old: list[str], new: list[str]) -> list[str]:
    """Replace the region of `old` that the fragment aligns with; refuse weak or repeated anchors."""
    sm = difflib.SequenceMatcher(None, old, new, autojunk=False)
    blocks = [m for m in sm.get_matching_blocks() if m.size and any(not is_blank(x) for x in new[m.b:m.b + m.size])]
    matched = sum(sum(1 for x in new[m.b:m.b + m.size] if not is_blank(x)) for m in blocks)
    content = sum(1 for x in new if not is_blank(x))
    if not blocks or matched * 2 < content:
        raise EditError("cannot place the model's partial output: too little of it matches the file; nothing written")
    for m in (blocks[0], blocks[-1]):
        anchor = old[m.a:m.a + m.size]
        hits = sum(1 for k in range(len(old) - m.size + 1) if old[k:k + m.size] == anchor)
        if hits > 1:
            raise EditError("cannot place the model's partial output: it matches several places in the file; "
                            "nothing written")
    first, last = blocks[0], blocks[-1]
    start = max(0, first.a - first.b)
    end = min(len(old), last.a + last.size + (len(new) - last.b - last.size))
    return old[:start] + new + old[end:]


def ensure_whole(old_text: str, new_text: str, instruction: str) -> WholeFile:
    """Return a whole file to diff against: the output itself, or the fragment merged into `old`."""
    old, new = split_lines(old_text), split_lines(new_text)
    if not is_fragment(old, new, instruction):
        return WholeFile(new_text, complete=True, merged=False)
    merged = merge_code(old, new, instruction)
    if merged is None:
        merged = merge_region(old, new)
    if missing_names(old, merged, instruction):
        raise EditError("the model wrote part of the file and it could not be merged safely; nothing written")
    return WholeFile("".join(merged), complete=False, merged=True)
