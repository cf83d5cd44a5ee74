"""Merging a fragment, the part of a file the model wrote, back into the file.

An in-order alignment of blocks: identical blocks are anchors matched in order, a definition replaces the
old one of the same name (a lone method lands in its class, a class shown with one member keeps the others),
a changed statement replaces the old statement it aligns with, and prose goes into the region it matches
best (`merge_region`). A placement that depends on which of two identical blocks is meant, or which of two
classes a lone method belongs to, is refused with a one-line reason. Blocks the output shows in a new order
move only when the instruction asks for a move; decorators of a definition shown bare stay unless asked away.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field

from editllm.editor.align import line_opcodes
from editllm.editor.asks import (
    ITEM,
    OVERLOAD,
    REORDERING,
    SPAN,
    asks_removal,
    mentioned,
    placement,
    removal,
    renames,
    swap,
)
from editllm.editor.blocks import (
    ATTRIBUTE,
    CLOSER,
    CONTAINER,
    DECORATOR,
    DECORATOR_NAME,
    DEF,
    HEADING,
    IDENT,
    LINE_COMMENT,
    METHOD,
    PAIRING_LIMIT,
    PREPROCESSOR,
    Block,
    brace_delta,
    braced,
    child_indent,
    class_members,
    closing,
    defines,
    defining_line,
    ending,
    head,
    header_end,
    header_size,
    imported,
    indent_of,
    is_blank,
    joined,
    labelled,
    line_likeness,
    members,
    names,
    notes_above,
    opening,
    paired,
    params,
    property_name,
    signature,
    split_blocks,
)
from editllm.editor.errors import EditError

# How every refusal of a merge starts; `wholefile.ensure_whole` says it otherwise where the model was shown the
# whole file and wrote part of it (a probe, session 41: "partial output" read wrong for a whole file written anew)
PARTIAL = "cannot place the model's partial output"


def same_statement(old: Block, new: Block, interior: bool, instruction: str = "") -> bool:
    """Whether an unnamed new block is a changed version of an old one (not an addition).

    Imports: only when the new one keeps every name the old one imported (so no name is lost).
    Assignments and compound statements: the same target or header. Other statements only between
    two anchors and when they are alike (one that no longer defines a name of the old one only where the instruction
    names it: a rename): as text, and keeping at least half the old one's words (a review, session
    34: "add a --verbose flag" shown as `parser.add_argument("--verbose", action="store_true")` between two anchors
    took the place of the alike `parser.add_argument("input", help="the file to read")`, which was lost).
    """
    if old.name or new.name:
        return False
    old_import, new_import = imported(old), imported(new)
    if old_import or new_import:
        return bool(old_import and new_import and old_import[0] == new_import[0]
                    and new_import[1] >= old_import[1])
    if head(old) == head(new):
        return True
    if not interior or difflib.SequenceMatcher(None, old.text, new.text).ratio() < 0.6:
        return False
    lost = defines(old) - defines(new)
    if lost and not any(mentioned(name, instruction) for name in lost):
        return False  # `const log = require('./log')` is not `const newmod = require('newmod')`, unless renamed
    words = set(IDENT.findall(old.text))
    return len(words & set(IDENT.findall(new.text))) * 2 >= len(words)


ALIGN_WORK = 4_000_000  # pairs of blocks `identical` compares one by one (a few seconds of Python)


def identical(old: list[Block], new: list[Block], latest: bool) -> dict[int, int]:
    """Pairs of identical blocks (new index → old index): the in-order matching that keeps the
    most lines (a weighted longest common subsequence), each at its earliest old place, or its
    latest with `latest`. Unlike SequenceMatcher's longest-run-first, a repeated one-line
    statement cannot pull the matching across the rest of the fragment."""
    n, m = len(old), len(new)
    if latest:
        return {m - 1 - j: n - 1 - i for j, i in identical(old[::-1], new[::-1], False).items()}
    # Blocks both open with pair with each other, at their earliest places: exactly what the matching below does.
    # Only the rest is matched cell by cell, which for two texts of thousands of blocks would be minutes and
    # gigabytes (a block cut from a script of 20,000 one-line statements).
    same = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a.text != b.text), min(n, m))
    if same:
        return {j: j for j in range(same)} | {
            same + j: same + i for j, i in identical(old[same:], new[same:], False).items()}
    # So do the blocks both close with, when no text of theirs comes earlier in either: nothing earlier can pair with
    # them, and the rest is matched alone (a fragment that is the file's opening blocks, in the `latest` pass)
    tail = next((k for k in range(min(n, m)) if old[n - 1 - k].text != new[m - 1 - k].text), min(n, m))
    if tail and not {b.text for b in old[n - tail:]} & {b.text for b in old[:n - tail] + new[:m - tail]}:
        return identical(old[:n - tail], new[:m - tail], False) | {m - tail + k: n - tail + k for k in range(tail)}
    if n * m > ALIGN_WORK:
        raise EditError(PARTIAL + f": {n} blocks of the file and {m} of the output are "
                        "too many to align; nothing written")
    return full_matching(old, new)


def full_matching(old: list[Block], new: list[Block]) -> dict[int, int]:
    """`identical`'s earliest matching, cell by cell over every pair of blocks: what its shortcuts must agree with."""
    n, m = len(old), len(new)
    best = [[0] * (m + 1) for _ in range(n + 1)]  # best[i][j]: lines matched within old[i:], new[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = max(best[i + 1][j], best[i][j + 1])
            if old[i].text == new[j].text:
                best[i][j] = max(best[i][j], len(old[i].lines) + best[i + 1][j + 1])
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if old[i].text == new[j].text and best[i][j] == len(old[i].lines) + best[i + 1][j + 1]:
            pairs[j] = i
            i, j = i + 1, j + 1
        elif best[i + 1][j] == best[i][j]:
            i += 1
        else:
            j += 1
    return pairs


# a statement that is a string literal (at the top: the docstring; a class's too, indented: a probe, session 38, had a
# class docstring the model rewrote merged back as a second string above the method it was shown with)
STRING = re.compile(r"^[ \t]*[rRuU]?[\"']")


DOCSTRING_ALIKE = 0.5  # less alike, the output's opening string is a note of the model's: added, nothing lost


def _first_line(block: Block) -> str | None:
    return next((line for line in block.lines if line.strip() and not line.lstrip().startswith("#")), None)


MODULE_DOCSTRING = re.compile(r"\bmodule(?:'s)?\s+docstring|\bdocstring\s+of\s+(?:the|this)\s+module", re.I)


def module_docstring(old: list[Block], new: list[Block], instruction: str = "") -> tuple[int, int] | None:
    """(old index, new index) of the file's and the output's module docstrings when the output's replaces the
    file's: both texts start with one, and of the file's string statements the output's is most like its
    docstring, and alike enough to be a version of it, or the instruction asks for the module docstring (a
    later string statement, "Deprecated helpers below.", shown rewritten first in a fragment, is that note, not
    the docstring)."""

    def first(blocks: list[Block]) -> int | None:
        for k, b in enumerate(blocks):
            line = _first_line(b)
            if line is not None:
                return k if STRING.match(line) and not b.name else None
        return None

    i, j = first(old), first(new)
    if i is None or j is None:
        return None
    strings = [k for k, b in enumerate(old) if not b.name and STRING.match(_first_line(b) or "")]
    alike = {k: difflib.SequenceMatcher(None, old[k].text, new[j].text, autojunk=False).ratio() for k in strings}
    enough = DOCSTRING_ALIKE if not MODULE_DOCSTRING.search(instruction) else 0.0
    return (i, j) if alike[i] >= max(max(alike.values()), enough) else None


def docstring_at(blocks: list[Block]) -> int | None:
    """The index of a body's docstring: its first statement, when that is a string (after the blank lines a class's
    body may open with, a block of no lines)."""
    k = next((k for k, b in enumerate(blocks) if b.lines), None)
    return k if k is not None and not blocks[k].name and STRING.match(blocks[k].lines[0]) else None


def one_name(old: Block, new: Block) -> bool:
    """Whether a definition and a constant are one name declared two ways: `export function sleep(ms)` written for
    `export const sleep = (ms) => ...`, or back (a probe, session 38: "Convert sleep to a regular function
    declaration" had the function pasted after the imports beside the constant, `sleep` declared twice)."""
    if bool(old.name) == bool(new.name):
        return False
    bare = new if old.name else old  # ... or a method made a property (`public int Count => _prices.Count;`)
    return defines(bare) == {old.name or new.name} or property_name(bare.lines) == (old.name or new.name)


def align(old: list[Block], new: list[Block], latest: bool, instruction: str) -> dict[int, int]:
    """Pair new blocks with old ones, in order (new index → old index). Identical blocks are anchors (`identical`);
    between two anchors a new block replaces an old definition of the same name (the same
    decorators first; of overloads, the one with the same parameters; none when the instruction asks for an
    overload with new ones), else a statement it is a changed version of; the output's module docstring replaces
    the file's (`module_docstring`). Among several equal candidates
    the first is taken, or the last with `latest`: `merge_blocks` compares both to find real
    ambiguity."""
    n, m = len(old), len(new)
    renamed = renamed_pairs(old, new, instruction)
    swaps = renames(instruction)  # a statement or comment the rename changed (`del _ag`, `# calls Popen()`): its own
    # old version, which the output's fits once renamed (taken for a new statement, it went in beside the old one)
    moved = [renamed_text(b.text, swaps).rstrip("\n") for b in old] if swaps else [None] * n  # a destructor `~A` too
    # (the file's last line without its newline, written with one: a fuzz, session 43)
    pairs = identical(old, new, latest)
    used = set(pairs.values())
    docs = module_docstring(old, new, instruction)  # a text has one: the output's replaces the file's
    anchors = [(-1, -1)] + sorted((j, i) for j, i in pairs.items()) + [(m, n)]
    for (j1, i1), (j2, i2) in zip(anchors[:-1], anchors[1:], strict=True):
        interior = j1 >= 0 and j2 < m
        lo, hi = min(i1, i2), max(i1, i2)  # a reordered anchor still bounds a gap
        gap_new = list(range(j1 + 1, j2))
        for j in reversed(gap_new) if latest else gap_new:
            nb = new[j]
            # the output's block renamed as the old one is: the same once both are (a word of a string the model
            # rightly kept, `"supported-versions"`, is no other statement: a fuzz, session 43, had it pasted twice)
            fitted = renamed_text(nb.text, swaps).rstrip("\n") if swaps else None
            cands = [i for i in range(lo + 1, hi) if i not in used
                     and ((nb.name and old[i].name == nb.name) or same_statement(old[i], nb, interior, instruction)
                          or (i, j) == docs or one_name(old[i], nb) or (old[i].name, nb.name) in renamed
                          or fitted is not None and moved[i] == fitted != old[i].text.rstrip("\n"))]
            added = False  # a new overload ("add an `add(long)` overload"): beside the others, replacing none
            if nb.name:
                cands = [i for i in cands if signature(old[i]) == signature(nb)] or cands
                if len(cands) > 1:  # overloads: the one whose parameters the output kept
                    cands = [i for i in cands if params(old[i]) == params(nb)] or cands
                if len(cands) > 1:  # a class and its forward declaration: the one whose line the output kept
                    cands = [i for i in cands if defining_line(old[i]) == defining_line(nb)] or cands
                if len(cands) > 1:  # two `impl Rect {` blocks: the one holding the members the output wrote
                    held = set(names(class_members(nb) or []))
                    cands = [i for i in cands if held & set(names(class_members(old[i]) or []))] or cands
                added = OVERLOAD.search(instruction) is not None and all(
                    params(b) != params(nb) for b in old if b.name == nb.name)
                cands = [] if added else cands
            else:  # `Y = 5` replaces `Y = 2`, not a `Z = 3` that is merely alike; a comment the rename changed is
                # its own old version, not each `/**` of the class (a fuzz, session 43: refused as ambiguous)
                cands = [i for i in cands if fitted is not None and moved[i] == fitted] or [
                    i for i in cands if head(old[i]) == head(nb)] or cands
            if not cands and nb.name:  # a namespace named here and not in the file (its body unindented there)
                cands = [i for i in range(lo + 1, hi) if i not in used and old[i].name is None and old[i].lines
                         and old[i].lines[0].strip() == nb.lines[0].strip()]
            if not cands and nb.name and not added:  # moved: the one unpaired old definition of that name, anywhere
                cands = [i for i, b in enumerate(old) if b.name == nb.name and i not in used]
                if len(cands) > 1:
                    raise EditError(PARTIAL + f": {nb.name} occurs {len(cands)} "
                                    "times in the file and the output does not say which one it replaces; "
                                    "nothing written")
            if cands:
                i = cands[-1] if latest else cands[0]
                pairs[j] = i
                used.add(i)
                if latest:
                    hi = i
                else:
                    lo = i
    for j in range(len(new) - 1):  # a comment shown right above a definition is the one above it in the file
        if j not in pairs and j + 1 in pairs and not new[j].blank and notes_above(new, j + 1) <= j:
            top = notes_above(old, pairs[j + 1])
            same = [i for i in range(top, pairs[j + 1]) if i not in used and old[i].text == new[j].text]
            below = j + 1  # the definition under it, past its attributes (`#[must_use]`, `[Obsolete]`)
            while below < len(new) - 1 and not new[below].blank and new[below].lines \
                    and all(ATTRIBUTE.match(line) for line in new[below].lines):
                below += 1
            if not same and new[below].name and notes_above(new, j + 1) == j and top == pairs[j + 1] - 1 \
                    and top not in used:  # its one comment, rewritten: in its place, not a second one above it
                same = [top]
            if same:
                pairs[j] = same[-1]
                used.add(same[-1])
    return pairs


@dataclass
class Moves:
    """The definitions an output moves (`moves`), by their index in the output."""

    after: dict[int, int] = field(default_factory=dict)  # the old index each now follows (-1: the top)
    taken: dict[int, int] = field(default_factory=dict)  # the old block each takes from its place
    notes: dict[int, list[str]] = field(default_factory=dict)  # comment lines above it in the file that go along
    gone: set[int] = field(default_factory=set)  # old indices that leave their place (blocks and their comments)


def moves(old: list[Block], new: list[Block], pairs: dict[int, int], instruction: str) -> Moves:
    """Which definitions the output moves, and where to. Only a move the instruction asks for is made: "move x
    above y" or "put x after y" (x shown; y's place in the file decides), "move x to the top" (before the
    first definition of its file or class; "to the end": after the last), "swap x and y" (both shown), and
    words that ask for an order without naming one ("reorder the methods", "sort the functions"), where the
    definitions outside the longest run in the file's order go where the output puts them (of runs as long,
    the one that leaves in place the names the instruction mentions last). A name the file defines more than
    once (a getter and its setter, `@overload` stubs) is never moved apart: nothing moves then. A comment
    right above a moved definition goes with it; one put before a definition goes above that one's comment."""
    result = Moves()
    count = Counter(b.name for b in old if b.name)
    unique = {b.name: i for i, b in enumerate(old) if b.name and count[b.name] == 1}
    showings = Counter(new[j].name for j in pairs if new[j].name)
    shown = {new[j].name: j for j in pairs if new[j].name and showings[new[j].name] == 1}
    asked, pair = placement(instruction), swap(instruction)
    if asked and asked.name in unique and asked.name in shown:
        mover, side, anchor = asked.name, asked.side, asked.anchor
        named = [i for i, b in enumerate(old) if b.name and b.name != mover]
        if (anchor is not None and anchor not in unique) or not named or asked.within in count:
            return result  # "to the end of main", a definition here: a place inside it, not beside it
        k = unique[anchor] if anchor is not None else named[0] if side == "first" else named[-1]
        result.after[shown[mover]] = notes_above(old, k) - 1 if side in ("before", "first") else k
    elif pair and all(name in unique and name in shown for name in pair):
        x, y = pair
        result.after[shown[x]], result.after[shown[y]] = unique[y], unique[x]
    elif REORDERING.search(instruction):
        units = [j for j in sorted(pairs) if not (new[j].name is None and j + 1 in pairs
                                                  and notes_above(old, pairs[j + 1]) <= pairs[j] < pairs[j + 1])]
        if all(pairs[a] < pairs[b] for a, b in zip(units, units[1:], strict=False)):
            return result

        def weight(j: int) -> float:  # one a block; the name the instruction mentions first a little less
            spot = re.search(rf"(?<![\w$]){re.escape(new[j].name)}(?![\w$])", instruction) if new[j].name else None
            return 1 - (0.5 / (1 + spot.start()) if spot else 0.0)

        best: dict[int, tuple[float, list[int]]] = {}  # the heaviest increasing run ending at each block
        for k, j in enumerate(units):
            total, run = max((best[a] for a in units[:k] if pairs[a] < pairs[j]), default=(0.0, []))
            best[j] = (total + weight(j), run + [j])
        stay = set(max(best.values())[1])
        movers = [j for j in units if j not in stay]
        if any(new[j].name not in unique for j in movers):
            return result
        for j in movers:
            before = [a for a in units if a < j and a in stay]
            following = min(a for a in units if a > j and a in stay) if not before else None
            result.after[j] = pairs[max(before)] if before else notes_above(old, pairs[following]) - 1
    for j in list(result.after):
        i = pairs[j]
        top = notes_above(old, i)
        result.taken[j] = i
        result.gone |= set(range(top, i + 1))
        k = j - 1  # the comments the output shows above it go along as they are; the others with the block
        while k in pairs and top <= pairs[k] < i and k not in result.after:
            result.after[k], result.taken[k] = result.after[j], pairs[k]
            k -= 1
        shown_notes = {pairs[n] for n in range(k + 1, j)}
        result.notes[j] = [line for n in range(top, i) if n not in shown_notes for line in old[n].lines]
    return result


def build(old: list[Block], new: list[Block], pairs: dict[int, int], instruction: str, where: str,
          drop: set[int]) -> list[Block]:
    """The merged blocks: old blocks in order, each paired one replaced by its new version, new
    blocks inserted after the block the preceding new block replaced; `drop` (old indices) goes when
    nothing replaces it and the output has no definition of its name (a getter stays when only the
    setter of the same name is shown); a definition the instruction asks to move goes where it says
    (`moves`), with the spacing it had."""
    shown = set(names(new))
    move = moves(old, new, pairs, instruction)
    pairs = {j: i for j, i in pairs.items() if j not in move.taken}
    rewritten, gone = rewritten_between(old, new, pairs, instruction)
    pairs, drop = pairs | rewritten, drop | gone
    spliced(old, new, pairs, instruction, where)
    inserts: dict[int, list[int]] = {}  # old index → new blocks after it (-1: at the top)
    previous: int | None = None
    for j in range(len(new)):
        if j in move.after:
            inserts.setdefault(move.after[j], []).append(j)
            continue
        if j in pairs:
            previous = pairs[j]
            continue
        following = min((pairs[k] for k in pairs if k > j), default=None)
        if previous is None or new[j].name and following is not None and following > previous + 1 \
                and brace_delta(joined(old[previous + 1:following])) > 0:
            # a definition goes before the next block the output kept when the file opens a scope in between that
            # the output did not show (C++'s `namespace plugins {` under the includes: a probe, session 40, had a
            # helper written above `Trim` merged above the namespaces, out of them); an `#include` added under the
            # includes stays there (session 41's probe: merged into the namespace)
            inserts.setdefault((following or 0) - 1, []).append(j)
        else:
            inserts.setdefault(previous, []).append(j)
    replaced = {i: j for j, i in pairs.items()}
    moved: dict[int, bool] = {}  # id of a moved block in the output → whether it is a definition (not a comment)

    def placed(j: int, blank: list[str]) -> Block:  # an added block, or a moved one merged with its old version
        if j not in move.taken:
            return Block(new[j].name, new[j].lines, blank)
        i = move.taken[j]
        merged = merge_pair(old[i], new[j], instruction, where) if old[i].name else new[j]
        block = Block(merged.name, move.notes.get(j, []) + merged.lines, old[i].blank)
        moved[id(block)] = old[i].name is not None
        return block

    out: list[Block] = []
    for ins in inserts.get(-1, []):
        out.append(placed(ins, new[ins].blank))
    for i, b in enumerate(old):
        after = inserts.get(i, [])
        if i in move.gone or (i in drop and i not in replaced and not (b.name and b.name in shown)):
            if i == len(old) - 1 and out:  # the file's last block went: the block now last ends as it did
                out[-1] = Block(out[-1].name, out[-1].lines, b.blank)
        elif i in replaced:
            nb = new[replaced[i]]
            merged = merge_pair(b, nb, instruction, where) if b.name else replaced_whole(b, nb, instruction, where)
            if after and after[0] not in move.taken:  # the fragment's own spacing up to what it adds
                merged = Block(merged.name, merged.lines, nb.blank)
            out.append(merged)
        else:
            out.append(b)
        kept_next = i + 1 < len(old) and i + 1 not in replaced  # an old block the output left out comes next
        for k, j in enumerate(after):
            last = k == len(after) - 1
            if last and i in replaced and (new[j].blank or replaced.get(i + 1) != j + 1):
                blank = b.blank if kept_next else (b.blank or new[j].blank)  # the gap before the next block: the
                # original's when that block is old (a comment written right above the next one stays right above)
            else:
                blank = new[j].blank
            out.append(placed(j, blank))
    return spaced(out, moved, old) if moved else out


REWRITTEN = 4  # old statements a fragment may rewrite in place between two blocks it shows

# Words an instruction and a statement share without the instruction speaking of that statement
PLAIN = {"the", "and", "for", "with", "from", "into", "this", "that", "these", "those", "its", "not", "are", "was",
         "add", "new", "use", "all", "one", "two", "line", "lines", "code", "file", "comment", "statement", "call",
         "import", "return", "def", "class", "const", "let", "var", "function", "if", "else", "then", "end"}


HEAD_LINES = 3  # the lines of a statement whose words say what it is (`if TYPE_CHECKING:` then its import)
# An instruction that asks for a comment added: a review (session 36) found this shadowed by the prose merge's
# ADDING of the same name further down, so "write a comment" read as a rewrite of the one beside it
ADDING = re.compile(r"\b(?:add|insert|append|include|put|write|introduce|new)\w*", re.I)
CHANGING = re.compile(r"\b(?:reword|rewrit|rephras|replac|chang|updat|fix|edit|correct|improv|shorten|clarif)\w*", re.I)


def speaks_of(instruction: str, olds: list[Block], news: list[Block], old: list[Block]) -> bool:
    """Whether the instruction speaks of old statements a fragment wrote others in place of: it names a word of
    their first lines that the new ones lack ("change the Legacy compatibility comment"), or asks such a word away
    ("replace the add_argument calls with a loop"), a word that few blocks of the file (`old`) hold. A fragment that
    only adds beside them ("add a --verbose flag", its two neighbours shown and the file's other arguments not)
    speaks of none: those are skipped, not rewritten. A fuzz (session 35) had "add a version string" take a
    74-line `module.exports = {...}` for spoken of, by a word deep inside it: the first lines only; and a licence
    comment for the place of `__version__ = ...`: comments give way to code only where the instruction says
    "comment"."""
    if comments(olds) and not comments(news) and not re.search(r"comment", instruction, re.I):
        return False
    asked = {w.lower() for w in IDENT.findall(instruction)} - PLAIN
    was = {w for b in olds for w in IDENT.findall("".join(b.lines[:HEAD_LINES])) if len(w) > 2 and w.lower() in asked}
    now = {w.lower() for b in news for w in IDENT.findall(b.text)}
    holders = Counter(w for b in old for w in set(IDENT.findall(b.text)) & was)
    return any(holders[w] <= 2 and (w.lower() not in now or asks_removal(w, instruction)) for w in was)


def rewrites_comment(instruction: str, olds: list[Block], news: list[Block]) -> bool:
    """Whether one comment written where the file has another rewrites it: unless the instruction asks to add
    without asking to change ("add a TODO comment about ...": a fuzz, session 35, had the comment it skipped lost)."""
    return len(olds) == len(news) == 1 and comments(olds + news) and not (
        ADDING.search(instruction) and not CHANGING.search(instruction))


def comments(blocks: list[Block]) -> bool:
    """Whether every line of these blocks is a line comment (`#`, `//`)."""
    return all(LINE_COMMENT.match(line) for b in blocks for line in b.lines if not is_blank(line))


def rewritten_between(old: list[Block], new: list[Block], pairs: dict[int, int],
                      instruction: str) -> tuple[dict[int, int], set[int]]:
    """Old statements a fragment rewrote in place: between two blocks it shows next to each other, that follow each
    other in the file but for statements the output lacks, it wrote other statements, and the instruction speaks of
    the old ones (`speaks_of`). Inside a fragment the model writes what is there, so these replace the old ones: a
    probe (session 33) changed a C header's `// Legacy compatibility` comment, cut the `#endif` off, and the merge
    kept the old comment under the new one, exit 0. Yet a model also skips what it does not change: a review
    (session 34) had "add a --verbose flag" shown as `parser = ...`, the new argument, `args = ...`, and the file's
    other two arguments deleted; so without the instruction speaking of them, the old ones stay and the new ones are
    added. One for one they pair (the new statement takes the old one's spacing); else the old ones go and the new
    ones are added. Not where the new statements keep any line of the old ones: that is a copy with lines lost (a Go
    import block with one import dropped, which the merge keeps), nor where an old one defines a name the file or
    the output still uses elsewhere and the new ones do not define (an import swapped for another), nor for
    definitions (a fragment may leave one out and add another beside it), nor past `REWRITTEN` old statements or one
    more than the new ones (a prose fragment matched to a code block repeated far below its place would take out
    all between, a generator: session 33)."""
    rewritten: dict[int, int] = {}
    gone: set[int] = set()
    shown = sorted(pairs)
    old_uses: Counter[str] | None = None
    new_uses: Counter[str] | None = None
    for a, b in zip(shown, shown[1:], strict=False):
        olds, news = range(pairs[a] + 1, pairs[b]), range(a + 1, b)
        if not (olds and news) or len(olds) > min(len(news) + 1, REWRITTEN) \
                or any(old[i].name or old[i].text.isspace() for i in olds) \
                or any(new[j].name or new[j].text.isspace() for j in news):
            continue
        was = {line.strip() for i in olds for line in old[i].lines if not is_blank(line)}
        if any(line.strip() in was for j in news for line in new[j].lines):  # a copy with lines lost
            continue
        before, after = [old[i] for i in olds], [new[j] for j in news]
        if not rewrites_comment(instruction, before, after) and not speaks_of(instruction, before, after, old):
            continue
        if old_uses is None or new_uses is None:  # counted once, and only when needed
            old_uses = Counter(w for block in old for w in IDENT.findall(block.text))
            new_uses = Counter(w for block in new for w in IDENT.findall(block.text))
        elsewhere = (old_uses - Counter(w for i in olds for w in IDENT.findall(old[i].text))) \
            + (new_uses - Counter(w for j in news for w in IDENT.findall(new[j].text)))
        still = {n for i in olds for n in defines(old[i]) if elsewhere[n]} - {n for j in news for n in defines(new[j])}
        if not still:  # `from .ansi import AnsiDecoder` swapped for `import logging`, `AnsiDecoder` still used
            if len(olds) == len(news) == 1:
                rewritten[news[0]] = olds[0]
            else:
                gone.update(olds)
    return rewritten, gone


# A line that says something of its own (not `}`, `return 0;`, `end`): a run of them tells where text came from
TELLING = 12


def spliced(old: list[Block], new: list[Block], pairs: dict[int, int], instruction: str, where: str) -> None:
    """Refuse a definition that runs into another one the output leaves out: a paired new block (`pairs`: new index
    → old) ends with the last lines of another old definition, three or more of them telling, which its old version
    does not end with. The model skipped from the middle of one function to the same lines in another (a probe,
    session 33: a C file's `work_queue_sizeof` ended in `work_queue_init`'s body, both opening with the same two
    lines; the merge put the skipped definitions back and kept the fused one, exit 0). Not where the instruction
    names the other definition ("inline init into sizeof"), nor the one that changed: a new ending like another's
    is then what was asked ("handle errors in insert_row the same way as the other functions" gave it their
    shared error tail, and was refused)."""
    def content(block: Block) -> list[str]:
        return [line.strip() for line in block.lines if not is_blank(line)]

    shown = set(pairs.values())
    others = [(other.name, content(other)) for k, other in enumerate(old)  # left out and not named by the instruction
              if k not in shown and other.name and not mentioned(other.name, instruction)]
    for j, i in pairs.items():
        if not others or not old[i].name or not new[j].name or mentioned(new[j].name.rsplit(".", 1)[-1], instruction):
            continue
        mine, was = content(new[j]), content(old[i])
        for name, theirs in others:
            run = 0
            while run < min(len(mine), len(theirs)) and mine[-1 - run] == theirs[-1 - run]:
                run += 1
            tail = mine[len(mine) - run:]
            if sum(len(line) >= TELLING for line in tail) >= 3 and sum(
                    line in was for line in tail if len(line) >= TELLING) * 2 < len(tail):
                raise EditError(PARTIAL + f" in {where}: its {new[j].name} ends with "
                                f"the last {run} lines of {name}, which it leaves out (the model skipped from one "
                                "to the other); nothing written")


def spaced(out: list[Block], moved: dict[int, bool], old: list[Block]) -> list[Block]:
    """`out` with the blank lines around moved definitions put right: a definition that ended the file (no blank
    lines after it) and one now followed by a moved definition get the file's usual gap between definitions, and
    the block now last ends as the file did. A comment stays right above its definition."""
    gaps = Counter(len(b.blank) for b in old[:-1] if b.blank and b.name) or Counter(len(b.blank) for b in old[:-1]
                                                                                     if b.blank)
    size = gaps.most_common(1)[0][0] if gaps else 0
    usual = next((b.blank for b in old[:-1] if len(b.blank) == size), [])  # the file's own blank lines (CRLF too)
    newline = next((line[len(line.rstrip("\r\n")):] for b in old for line in b.lines if line.endswith("\n")), "\n")
    bare_end = bool(old and old[-1].lines and not old[-1].lines[-1].endswith("\n"))  # no newline ends the file
    fixed: list[Block] = []
    for k, b in enumerate(out):
        last = k == len(out) - 1
        lines, blank = b.lines, b.blank
        if last:
            blank = old[-1].blank if id(b) in moved else blank
            if bare_end and not blank and lines:
                lines = lines[:-1] + [lines[-1].rstrip("\r\n")]
        else:
            if lines and not lines[-1].endswith("\n"):  # what was the file's last line is followed now
                lines = lines[:-1] + [lines[-1] + newline]
            if not blank and moved.get(id(b)) is not False and (id(b) in moved or id(out[k + 1]) in moved):
                blank = usual  # (a comment moved with its definition stays right above it)
        fixed.append(Block(b.name, lines, blank))
    return fixed


def merge_blocks(old: list[Block], new: list[Block], instruction: str, where: str,
                 drop: set[int] | None = None) -> list[Block]:
    """Merge fragment blocks `new` into `old` (see `align`); refuse when the result depends on which
    of two identical blocks an output block is taken to be."""
    early, late = align(old, new, False, instruction), align(old, new, True, instruction)
    if not early:
        raise EditError(PARTIAL + f" in {where}: it shares no definition "
                        "or statement with it; nothing written")
    drop = drop or set()
    result = build(old, new, early, instruction, where, drop)
    if early != late and joined(result) != joined(build(old, new, late, instruction, where, drop)):
        j = next(j for j in range(len(new)) if early.get(j) != late.get(j))
        def copies(blocks: list[Block]) -> int:  # of the block that placed differently: its text, or its name
            return sum(1 for b in blocks if b.text == new[j].text or (new[j].name and b.name == new[j].name))

        same, written = copies(old), copies(new)
        what = new[j].name or "a statement"
        # the file may hold one and the output two (a probe, session 33: "matches several places" sent the user
        # looking for a second definition in a file that has one)
        times = (f" occurs {same} times in {where}" if same > 1 else f" occurs {written} times in the output"
                 if written > 1 else f" matches several places in {where}")
        raise EditError(PARTIAL + f": {what}{times} and where it goes depends "
                        "on which one is meant; nothing written")
    return result


def renamed_text(text: str, swaps: list[tuple[str, str]]) -> str:
    """`text` with each old name of the rename written as its new one, as a word."""
    for a, b in swaps:
        text = re.sub(rf"(?<![\w$]){re.escape(a)}(?![\w$])", b, text)
    return text


def renamed_pairs(old: list[Block], new: list[Block], instruction: str) -> set[tuple[str, str]]:
    """The (old, new) names of the definitions the instruction renames that `align` pairs as one: `B` takes `A`'s
    place. Taken for a new definition, it went below the block shown above it, and `A` went (a rename focused on its
    definition and uses, session 42: `filter_names` moved up under `__all__`). Only where each name is defined once
    on each side and the output no longer defines `A`."""
    return {(a, b) for a, b in renames(instruction)
            if sum(x.name == a for x in old) == 1 and sum(x.name == b for x in new) == 1
            and all(x.name != a for x in new) and all(x.name != b for x in old)}


def replaced_whole(old: Block, new: Block, instruction: str, where: str) -> Block:
    """The new version of a statement that names nothing (`if __name__ == "__main__":`, `module.exports = {`, a
    namespace the file's syntax does not name): taken whole, unless that drops a definition inside it which the
    instruction does not ask to remove (the output showed one method of an object literal)."""
    inner = [m.group(1) for line in old.lines[1:] if (m := DEF.match(line) or METHOD.match(line))]
    kept = {m.group(1) for line in new.lines[1:] if (m := DEF.match(line) or METHOD.match(line))}
    gone = [name for name in inner if name not in kept and not asks_removal(name, instruction)]
    if gone:
        raise EditError(PARTIAL + f" in {where}: it would drop {gone[0]}, which it does "
                        "not show; nothing written")
    braces = any(line.rstrip().endswith("{") or line.strip() == "{" for line in old.lines[:3])
    written = {line.strip() for line in new.lines}
    lost = sum(1 for line in old.lines if not is_blank(line) and line.strip() not in written)
    if braces and lost > max(3, len(old.lines) // 3):  # a C++ class whose header a macro hides, shown with one member
        raise EditError(PARTIAL + f" in {where}: it would replace "
                        f"{old.lines[0].strip()!r} and drop {lost} lines of it that it does not show; nothing written")
    return Block(None, new.lines, old.blank)


def kept_decorators(decorators: list[str], instruction: str, name: str | None, signature_line: str | None) -> list[str]:
    """The decorators (lines above a definition) that stay when the output shows the definition without any:
    all but those the instruction asks to remove by name, any case ("remove `@login_required`", "drop the
    cache", "make Api not injectable": `removal`), all of them for the word "decorator" in one clause with the
    definition's name ("drop fib's decorators"), and a `@staticmethod` or `@classmethod` that the new
    signature (`signature_line`, when the definition line changed) decides against. A name merely mentioned
    ("make the total property round") keeps it. A fragment leaves out what it does not change, and `@dataclass`
    or `@app.route("/")` dropped by a merge would change what the code does with exit 0."""
    n = re.escape(name or "")
    if name and re.search(rf"decorat\w*{SPAN}{{0,20}}?(?<![\w$]){n}(?![\w$])|(?<![\w$]){n}(?![\w$]){SPAN}{{0,20}}?"
                          r"decorat", instruction, re.I):
        return []
    groups: list[list[str]] = []  # a decorator with its continuation lines (`@app.route(`, `"/x",`, `)`)
    for line in decorators:
        if DECORATOR.match(line) or not groups:
            groups.append([])
        groups[-1].append(line)
    first = re.search(r"\(\s*(\w+)", signature_line or "")
    kept: list[str] = []
    for group in groups:
        m = DECORATOR_NAME.match(group[0])
        word = m.group(1) if m else ""
        after = rf"(?=\s*(?:[.;,!?)]|$|{re.escape(name or '')}\b|decorator))"  # the clause ends, or the def's name
        asked = bool(word) and (removal(word, instruction, parts="decorator") == "asked" or re.search(
            rf"\b(?:not|no longer|without|un)[\s-]*(?:an?\s+|the\s+)?{re.escape(word)}\b{after}", instruction,
            re.I) is not None)
        kind = first.group(1) if first else ""  # none on a signature wrapped after `(`: nothing to go by
        if signature_line and kind and (word == "staticmethod" and kind in ("self", "cls")
                                        or word == "classmethod" and kind != "cls"):
            asked = True  # the new signature decides: an instance method now, or no class parameter
        if not asked:
            kept += group
    return kept


def merge_pair(old: Block, new: Block, instruction: str, where: str) -> Block:
    """The new version of a definition. A function is replaced whole (a helper the model inlined
    goes with the old body). A class has its body merged with the old body, so members the output
    does not show (a class shown with one method) stay; a method the instruction names and the
    output lacks goes ("remove `A.f`")."""
    top, top_new = header_size(old), header_size(new)
    reshaped = old.lines[top - 1].strip() != new.lines[top_new - 1].strip()  # the definition's own line changed
    if top > 1 and top_new == 1:  # shown bare: its decorators stay, but those the instruction speaks of
        kept = kept_decorators(old.lines[:top - 1], instruction, old.name, new.lines[0] if reshaped else None)
        new = Block(new.name, kept + new.lines, new.blank)
        top_new += len(kept)
    if old.text == new.text:
        return old
    blank = old.blank  # keep the original spacing after the block
    inner = child_indent(old)
    # a class written with no body at all keeps its members but those asked away: focus showed it with the one
    # member the instruction removes (`focus.narrowed`), and the model wrote back the class line alone
    # (or a member alone at the odd column the file has it: PHP's `   use Trait;` first, one column deeper than the
    # rest, or ` protected static $x` mid-class, one shallower: the class was replaced by the one member, session 41)
    body = [indent_of(line) for line in old.lines[opening(old):] if not is_blank(line)]
    odd = set(body[:1]) | {k for k in body if indent_of(old.lines[0]) < k < (inner or 0)}
    if not CONTAINER.match(old.lines[top - 1]) or inner is None or child_indent(new) not in {inner, None, *odd}:
        return Block(new.name, new.lines, blank)
    methods = braced(old)
    old_end = len(old.lines) - ending(old)
    new_end = len(new.lines) - (closing(new.lines, top_new) if methods else ending(new))
    # the body after Allman's `{` line (C#): taken for a member, it anchored what the output adds before the member it
    # was shown with at the class's top (a probe, session 39)
    old_open, new_open = opening(old), opening(new)
    old_body = members(old.lines[old_open:old_end], inner, methods)
    new_body = members(new.lines[new_open:new_end], inner, methods)
    drop = {k for k, b in enumerate(old_body) if asked_away(b, instruction)}
    doc, new_doc = docstring_at(old_body), docstring_at(new_body)
    if doc is not None and new_doc is not None:  # one class, one docstring: the output's, however unlike the file's
        # (a probe, session 39: a docstring rewritten at length was pasted above the method shown)
        old_body = old_body[:doc] + [Block(None, new_body[new_doc].lines, old_body[doc].blank)] + old_body[doc + 1:]
    if new_body or not old_body:
        body = merge_blocks(old_body, new_body, instruction, f"{where}:{old.name}", drop)
        if new_doc is not None and doc is None and new_body[new_doc] in body:
            # a docstring the output gives a class that had none: at its top, not above the member shown next (a
            # probe, session 38: "Add a docstring to scheduler.enter" also gave the class one, merged mid-class)
            body.insert(0, body.pop(body.index(new_body[new_doc])))
    else:  # written bare: every member stays but those asked away, with the comments on them
        gone = {j for k in drop for j in range(notes_above(old_body, k), k + 1)}
        body = [b for k, b in enumerate(old_body) if k not in gone]
    # ... kept where the output has the class without it (a member alone, wrapped in the class's line)
    bare = new_open == top_new and not new.lines[top_new - 1].rstrip().endswith("{")
    lines = new.lines[:new_open] + (old.lines[top:old_open] if bare else []) + joined(body)
    while lines and is_blank(lines[-1]):
        lines.pop()
    if methods:  # the class's end, whichever member the output showed last (a member alone has none)
        closers = [sum(1 for line in tail if CLOSER.match(line)) for tail in (old.lines[old_end:], new.lines[new_end:])]
        # the output's own end, unless it closes more than the class (`};` then `} // namespace a`): the file's
        lines += new.lines[new_end:] if new_end < len(new.lines) and closers[1] == closers[0] else old.lines[old_end:]
    else:  # Ruby's and Lua's `end`, the file's
        lines += old.lines[old_end:]
    return Block(new.name, lines, blank)


MEMBER_KEYWORDS = {"var", "let", "val", "const", "case", "fun", "func", "def", "fn", "public", "private",
                   "protected", "internal", "static", "final", "readonly", "override", "open", "lateinit", "weak",
                   "lazy", "abstract", "pub", "mut", "async", "suspend", "self", "this", "true", "false", "null", "nil",
                   "None"}
# What a member is called after its name ("the decoding case", "the tags field"): the member itself, not a part
MEMBER_KIND = r"(?:cases?|variants?|fields?|attributes?|propert(?:y|ies)|members?|entr(?:y|ies)|constants?|values?)"


def asked_away(member: Block, instruction: str) -> bool:
    """Whether the instruction asks a member of a class to go: a method by its name, and a field, an enum case or a
    bodyless declaration by a name on its first line (`tags: list[str] = ...`, `case decoding(Error)`, Kotlin's `fun
    findById(id: String): Order?`), which the method pattern does not name: a probe (session 36) had "Remove the
    badStatus case from NetworkError" and six more such removals written right by the model under focus, and the
    merge kept the unnamed member, "no change proposed". It goes only where the output has nothing in its place."""
    if member.name:
        return asks_removal(member.name, instruction)
    first = next((line for line in member.lines if not is_blank(line)), "")
    if LINE_COMMENT.match(first):
        return False
    words = {w.lstrip("$") for w in re.findall(r"\$?[A-Za-z_][\w]*", first.split("//")[0])} - MEMBER_KEYWORDS
    return any(removes_member(w, instruction) for w in words)


def removes_member(name: str, instruction: str) -> bool:
    """Whether the instruction asks the member `name` away, called by what it is or not ("the decoding case")."""
    return asks_removal(name, re.sub(rf"(?<![\w$])({re.escape(name)}[`'\"]?)\s+{MEMBER_KIND}\b", r"\1", instruction,
                                     flags=re.I))


def likest(blocks: list[Block], places: list[int], new: list[str], base: int, wanted: set[str]) -> list[int]:
    """The one place whose member of that name reads much like the fragment ([] when none stands out): a
    constructor that three classes define is told by its body. Only a clear margin counts (two `area()` bodies
    a line long are alike whichever the edit was meant for)."""
    text = "".join(new)
    scores = []
    for i in places:
        mine = [b.text for b in members(blocks[i].lines[header_size(blocks[i]):], base, True) if b.name in wanted]
        scores.append((max((difflib.SequenceMatcher(None, m, text, autojunk=False).ratio() for m in mine),
                           default=0.0), i))
    scores.sort(reverse=True)
    return [scores[0][1]] if scores[0][0] >= 0.5 and scores[0][0] - scores[1][0] >= 0.25 else []


def telling(blocks: list[Block], places: list[int], new: list[str], base: int, wanted: set[str]) -> list[int]:
    """The one place whose member of that name has names of its own that the fragment uses ([] when not exactly
    one): a lone `toString()` that reads `this.s` belongs to the class whose `toString` does, not to the one
    whose reads `this.r`. Names only the edit brings in count for none (a new `console.log`). Not between
    a class and one that extends it: a subclass uses its parent's names without defining them."""
    labels = {labelled(blocks[i]) for i in places} - {None}
    for i in places:
        header = blocks[i].lines[header_size(blocks[i]) - 1]
        if any(mentioned(str(label), header.split(str(labelled(blocks[i])), 1)[-1]) for label in labels):
            return []
    words = [set(IDENT.findall("".join(b.text for b in members(blocks[i].lines[header_size(blocks[i]):], base, True)
                                        if b.name in wanted))) for i in places]
    used = set(IDENT.findall("".join(new))) & set().union(*words)  # not the edit's new words: any class may have those
    own = [i for k, i in enumerate(places)
           if used & (words[k] - set().union(*(w for n, w in enumerate(words) if n != k)))]
    if len(own) != 1:
        return []
    written = set(IDENT.findall("".join(new)))
    if any(words[k] <= written for k, i in enumerate(places) if i != own[0]):
        return []  # another one could have been edited into this (its names and the new ones): no telling
    return own


STRAY = re.compile(r"(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(\s*(?:self|cls)\b")  # a Python method's first line


def stray_methods(old: list[Block], new: list[Block]) -> dict[int, str]:
    """The output's top-level blocks that are a class's methods written at column 0 (new index → the indentation
    of that class's members, as the file writes it: spaces or a tab): a `def name(self` whose name the file defines
    only as a method. A probe (session 34) had `def area(self):` merged in as a new top-level function beside the
    class's own `area`, exit 0."""
    top = set(names(old))
    out: dict[int, str] = {}
    for j, b in enumerate(new):
        first = next((m for line in b.lines if (m := STRAY.match(line))), None)
        if not b.name or first is None or first[1] != b.name or b.name in top:
            continue
        owners = [ob for ob in old if (indent := child_indent(ob)) is not None
                  and b.name in names(members(ob.lines[header_end(ob):], indent, braced(ob)))]
        if owners:
            inner = child_indent(owners[0])
            line = next(line for line in owners[0].lines[1:] if not is_blank(line) and indent_of(line) == inner)
            out[j] = line[:len(line) - len(line.lstrip(" \t"))]
    return out


def merge_code(old: list[str], new: list[str], instruction: str, drop: set[int] | None = None) -> list[str] | None:
    """Merge by blocks; None when the text has no definitions to go by. `drop`: indices of old
    top-level blocks that go when the output has nothing in their place."""
    base = min((indent_of(line) for line in new if not is_blank(line) and not PREPROCESSOR.match(line)),
               default=0)  # a C++ method's `#if` in column 0 inside its body sets no indentation of the output
    old_blocks = split_blocks(old, 0)
    first = next((k for k, line in enumerate(new) if not is_blank(line)), None)
    if base == 0 and first is not None and indent_of(new[first]) > 0:
        # The output starts inside a class (its last methods, then the rest of the file): the methods go into
        # their class, then the rest is merged at the top level (taken whole, the methods were added twice).
        c = next(k for k, line in enumerate(new) if not is_blank(line) and indent_of(line) == 0)
        k = next((k for k in range(c, len(new)) if not is_blank(new[k]) and not CLOSER.match(new[k])), len(new))
        inner = merge_code(old, new[:c], instruction, drop)
        if inner is None:
            return None
        return merge_code(inner, new[k:], instruction, drop) if k < len(new) else inner
    if base == 0:
        if not names(old_blocks):
            return None
        new_blocks = split_blocks(new, 0)
        strays = stray_methods(old_blocks, new_blocks)
        if strays:  # each into its class, as a method written alone would be; the rest at the top level
            rest = [b for j, b in enumerate(new_blocks) if j not in strays]
            merged = joined(merge_blocks(old_blocks, rest, instruction, "the file", drop)) \
                if any(b.text.strip() for b in rest) else old
            for j, indent in strays.items():
                lines = [line if is_blank(line) else indent + line for line in new_blocks[j].lines]
                merged = merge_code(merged, lines, instruction, drop)
                if merged is None:
                    return None
            return merged
        return joined(merge_blocks(old_blocks, new_blocks, instruction, "the file", drop))
    # An indented fragment (a method alone): find the one definition whose body holds its names.
    if first is not None and (indent_of(new[first]) > base or CLOSER.match(new[first])):
        raise EditError(PARTIAL + ": it starts in the middle of a definition, so "
                        "where that part goes cannot be told; nothing written")
    new_names = set(names(members(new, base, methods=True)))
    if not new_names:
        return None
    parents = [i for i, b in enumerate(old_blocks) if child_indent(b) == base
               and new_names & set(names(members(b.lines[header_end(b):], base, braced(b))))]
    # Blocks that define such a member too, where the merge cannot go by names (an object literal's `get(url) {`,
    # an `abstract class`): never a wrong parent's by default.
    others = [i for i, b in enumerate(old_blocks) if i not in parents and any(
        indent_of(line) == base and (m := DEF.match(line) or METHOD.match(line)) and m.group(1) in new_names
        for line in b.lines)]
    places = parents + others
    if len(places) > 1:  # the same method in two classes: the instruction, or the method's own first line, says which
        named = [i for i in places if (label := labelled(old_blocks[i])) and mentioned(label, instruction)]
        opening = next((line for line in new if indent_of(line) == base and (DEF.match(line) or METHOD.match(line))),
                       "")
        same = [i for i in places if opening in old_blocks[i].lines]
        chosen = named if len(named) == 1 else same if not named and len(same) == 1 else []
        if not chosen and not named:
            chosen = (likest(old_blocks, places, new, base, new_names)
                      or telling(old_blocks, places, new, base, new_names))
        if not chosen:
            owners_ = " and ".join(labelled(old_blocks[i]) or "a block" for i in sorted(places))
            raise EditError(PARTIAL + f": {', '.join(sorted(new_names))} is defined "
                            f"in {owners_} and the instruction names {'several' if named else 'neither'}; "
                            "nothing written")
        if chosen[0] not in parents:
            return None  # not a class: placed by the text it matches (`merge_region`)
        parents = chosen
    if not parents:
        return None
    i = parents[0]
    parent = old_blocks[i]
    wrapped = Block(parent.name, parent.lines[:header_size(parent)] + new, parent.blank)
    old_blocks[i] = merge_pair(parent, wrapped, instruction, "the file")
    return joined(old_blocks)


def regions(old: list[str], new: list[str], offsets: list[int] | None,
            prose: bool = False, instruction: str = "") -> list[tuple[float, int, int]]:
    """Candidate places for a prose fragment: (similarity, start, end) of the old lines it would
    replace, from its earliest and its latest alignment with the whole file (`offsets` None) or
    with the neighbourhood of each given offset (old line - fragment line of a shared line). In `prose`, the
    fragment's unmatched first and last lines replace old ones only where they rewrite them (`added`)."""
    content = sum(1 for x in new if not is_blank(x))
    slack = 3 + len(new) // 4
    found: list[tuple[float, int, int]] = []
    windows = [(0, len(old))] if offsets is None else [
        (max(0, d - slack), min(len(old), d + len(new) + slack)) for d in offsets]
    for lo, hi in windows:
        window = old[lo:hi]
        for latest in (False, True):
            w, f = (window[::-1], new[::-1]) if latest else (window, new)
            sm = difflib.SequenceMatcher(None, w, f, autojunk=False)
            blocks = [(mb.a, mb.b, mb.size) for mb in sm.get_matching_blocks()
                      if mb.size and any(not is_blank(x) for x in f[mb.b:mb.b + mb.size])]
            if latest:
                blocks = [(len(w) - a - s, len(f) - b - s, s) for a, b, s in blocks[::-1]]
            matched = sum(sum(1 for x in new[b:b + s] if not is_blank(x)) for _, b, s in blocks)
            if not blocks or matched * 2 < content:
                continue
            (a0, b0, _), (a1, b1, s1) = blocks[0], blocks[-1]
            first, last = lo + a0, lo + a1 + s1  # the old lines the fragment's matched lines span
            start = max(0, first - b0)
            end = min(len(old), last + (len(new) - b1 - s1))
            if prose:
                while last > first and is_blank(old[last - 1]):  # from its text: blank lines it matched are spacing
                    last -= 1
                while first < last and is_blank(old[first]):
                    first += 1
                start = first if added(old[start:first][::-1], new[:b0], instruction,
                                       old[start - 1] if start else None) else start
                end = last if added(old[last:end], new[b1 + s1:], instruction,
                                    old[end] if end < len(old) else None) else end
            found.append((0.0, start, end))
    if offsets is not None:  # several places: score each by how alike its text is to the fragment
        found = [(difflib.SequenceMatcher(None, "".join(old[s:e]), "".join(new), autojunk=False).ratio(), s, e)
                 for _, s, e in set(found)]
    return found


LONG_WORD = re.compile(r"\w{4,}")  # a word that says what a text is about (not "the", "and")
# An instruction that asks for text to be added ("add a bullet", "insert a note", "a new section")
ADDING_TEXT = re.compile(r"\b(?:add\w*|insert\w*|append\w*|new)\b", re.I)
# What a prose line is, by its markup: text beside another kind was not written in its place
LINE_KINDS = (("heading", re.compile(r"^\s*#{1,6}\s")), ("link", re.compile(r"^\s*\[[^\]]+\]:\s")),
              ("item", ITEM), ("rule", re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")),
              ("table", re.compile(r"^\s*\|")), ("directive", re.compile(r"^\s*\.\.\s")))


def line_kind(line: str) -> str:
    return next((name for name, pattern in LINE_KINDS if pattern.match(line)), "text")


def added(stretch: list[str], lines: list[str], instruction: str, beyond: str | None) -> bool:
    """Whether a fragment's unmatched first (or last) `lines` are text it adds beside what it matched, rather than
    a rewrite of the `stretch` of old lines they would replace (read outward from the matched lines; `beyond`: the
    old line past it, None at the file's edge). Added: where that stretch is blank lines alone (which part
    paragraphs), or reaches past a blank line into a paragraph it ends inside (a rewrite takes a paragraph whole).
    Into a whole paragraph: rewritten when the lines share most of its words of four letters or more; added when
    they are another kind of line (a bullet beside link definitions, a heading above a paragraph) or the
    instruction asks for something new; rewritten when they share most of its short words ("Run it." made "Run it
    with --fast."); else refused, for either guess may be wrong. A real probe (session 32) added a bullet after a
    README's last paragraph, shown alone; taken as a rewrite, it replaced the first of the link definitions under
    that paragraph, exit 0. The matched paragraph's own lines are rewritten (its last sentence changed)."""
    if all(is_blank(line) for line in lines):
        return False
    gap = next((k for k, line in enumerate(stretch) if is_blank(line)), len(stretch))
    if gap and all(is_blank(line) for line in stretch[gap:]):  # the matched paragraph's lines, then spacing
        return False
    if all(is_blank(line) for line in stretch) or (beyond is not None and not is_blank(beyond)
                                                   and not is_blank(stretch[-1])):
        return True
    theirs, mine = "".join(stretch).lower(), set(re.findall(r"\w+", "".join(lines).lower()))
    words = set(LONG_WORD.findall(theirs))
    if words and len(words & mine) * 2 >= len(words):
        return False
    if line_kind(next(x for x in stretch if not is_blank(x))) != line_kind(next(x for x in lines if not is_blank(x))) \
            or ADDING_TEXT.search(instruction):
        return True
    short = set(re.findall(r"\w+", theirs))
    if not words and short and len(short & mine) * 2 >= len(short):
        return False
    raise EditError(PARTIAL + ": its first or last lines may be new text or a rewrite "
                    "of the paragraph beside what it matched; nothing written")


RUNNER_UP = 0.05  # how much better than every other place the one a fragment goes to must match it


def merge_region(old: list[str], new: list[str], prose: bool = False, instruction: str = "") -> list[str]:
    """Replace the region of `old` that the fragment matches best; refuse when too little matches,
    or when two different places match it equally well (a repeated heading and nothing else).

    The earliest and the latest alignment with the whole file settle most fragments at once; only
    when they disagree is each place the fragment could go scored by text similarity. `prose`: the file is
    prose, whose paragraphs tell text the fragment adds from text it rewrites (`added`, which reads `instruction`)."""
    counts, theirs = Counter(old), Counter(new)
    if sum(n * theirs[line] for line, n in counts.items()) > ALIGN_PAIRS:  # the pairs difflib's alignment visits
        raise EditError(REPEATED)
    found = regions(old, new, None, prose, instruction)
    if len({(s, e) for _, s, e in found}) > 1:
        found = regions(old, new, candidate_places(old, new), prose, instruction)
    if not found:
        raise EditError(PARTIAL + ": too little of it matches the file; nothing written")
    best = max(score for score, _, _ in found)
    # Places nearly as alike count as equal: a method alone that two classes define with one-line bodies
    # (`return w * h;`, `return r * r * 3;`, edited to `return 0;`) says nothing of which it was.
    places = {(start, end) for score, start, end in found if score >= best - RUNNER_UP}
    if len(places) > 1:  # of those, the ones holding the most of the fragment's lines as they are (its signature)
        shown = [line for line in new if not is_blank(line)]
        held = {(s, e): sum(1 for line in shown if line in old[s:e]) for s, e in places}
        places = {place for place in places if held[place] == max(held.values())}
    results = {tuple(old[:s] + new + old[e:]) for s, e in places}
    if len(results) > 1:
        raise EditError(PARTIAL + ": it matches several places in the file equally "
                        "well; nothing written")
    start, end = min(places)
    lost = dropped(old[start:end], new, prose)
    if lost:
        raise EditError(PARTIAL + f": where it matches best it would delete "
                        f"{lost[0].strip()!r}, which it does not show; nothing written")
    return list(results.pop())


# Pairs of equal lines one alignment of the fragment with the file visits (a few seconds of difflib at most), and
# candidate places times the square of the fragment's length, what aligning each place with it costs at worst
# (about 10 s: a 200-line fragment of identical lines took 16 ms a place)
ALIGN_PAIRS = 4_000_000
PLACES_WORK = 25_000_000
REPEATED = (PARTIAL + ": its lines repeat in too many places of the file to tell where it "
            "goes; nothing written")


def candidate_places(old: list[str], new: list[str]) -> list[int]:
    """The places the fragment `new` could go (old line - fragment line of a line both have), from its lines rarest
    in `old` first, as many as `PLACES_WORK` allows: a file of thousands of `},` or identical lines gave a fragment
    tens of thousands of places, each aligned with difflib (a block cut from 20,000 identical lines ran for minutes).
    A line `old` holds once pins the place alone; where even the rarest line allows too many, the fragment says
    nothing of where it goes and is refused."""
    where: dict[str, list[int]] = {}
    for a, line in enumerate(old):
        where.setdefault(line, []).append(a)
    mine: dict[str, list[int]] = {}
    for b, line in enumerate(new):
        if not is_blank(line) and line in where:
            mine.setdefault(line, []).append(b)
    found: set[int] = set()
    cost = len(new) ** 2  # aligning one place with the fragment
    for line in sorted(mine, key=lambda line: len(where[line])):
        if len(where[line]) * cost > PLACES_WORK:  # each of its places is at least one more
            break
        more = {a - b for b in mine[line] for a in where[line]}
        if len(found | more) * cost > PLACES_WORK:
            break
        found |= more
    if mine and not found:
        raise EditError(REPEATED)
    return sorted(found)


def dropped(old: list[str], new: list[str], prose: bool = False) -> list[str]:
    """The lines of `old` that open something (a definition, a method, a braced block, a Markdown heading; in
    `prose`, a list item with nothing in its place) at the fragment's own indentation or less and have no
    counterpart in `new`. A region is only the best guess of where a fragment goes: a definition between two lines
    it matched, which it never showed (the next method of a class, found between its first line and a later `}`),
    would be deleted by that guess, not by the model; so would a release note's bullet before one whose typo-fixed
    first line read as that bullet's own (the same words: a generator, session 32). Lines it rewrote inside what
    it shows (a body simplified, a section shortened, an item reworded) are its edit."""
    base = min((indent_of(line) for line in new if not is_blank(line) and not CLOSER.match(line)), default=0)
    if len(old) * len(new) > PAIRING_LIMIT:
        return []
    kept = paired(old, new, line_likeness, 0.6)
    cut = {i for tag, i1, i2, _, _ in line_opcodes(old, new) if tag == "delete" for i in range(i1, i2)} if prose \
        else set()  # lines with nothing in their place: a list item rewritten is the model's edit
    return [line for i, line in enumerate(old) if i not in kept and not is_blank(line) and indent_of(line) <= base
            and (DEF.match(line) or METHOD.match(line) or HEADING.match(line) or (i in cut and ITEM.match(line))
                 or (line.split("//")[0].rstrip().endswith("{") and not CLOSER.match(line)))]
