"""Prose focus: the parts of a text file the model edits, and how they go back (issue 19).

`editor.focus` shows the model only the definitions a code instruction names. Prose has no
definitions, but it has sections: when the instruction names a heading ("in the Installation
section"), the model is shown that section alone and the rest of the file is kept byte for byte, by
construction rather than by the model's care.

Optionally (`prose.CHUNKS`), a long file is edited in parts of about `CHUNK_LINES` lines, split at
blank lines outside code blocks: a 1.5B model asked to fix every typo of an 80-line README checks a
short part more carefully than the whole (measured with `benchmarks/prose_probe.py`). Both are pure
line arithmetic on the original, so rewrite and spec see the same parts and stay identical.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from editllm.editor import prose
from editllm.editor.asks import TAKES_OUT
from editllm.editor.languages import is_prose
from editllm.editor.prompt import _fence

CHUNK_LINES = 30  # a part's size when chunking (the model's attention, not its context, is the limit)
ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")  # setext (=, -) and reST section underlines
SECTION_WORDS = re.compile(r"\b(section|heading|chapter|part|under|paragraphs?)\b", re.I)
LEADING_VERSION = re.compile(r"^\W*(v?\d+(?:\.\d+)+(?:-[\w.]+)?)(?![\w-]|\.\d)")  # `1.12.0 (June ...)`, `[v2.3]`
VERSION = re.compile(r"(?<![\w.-])v?\d+(?:\.\d+)+(?:-[\w.]+)?(?![\w-]|\.\d)")  # 1.12.0, v2.3, 3.0.0-rc1


@dataclass(frozen=True)
class Parts:
    """Line ranges [start, end) of the file that the model edits one by one; the rest is kept."""

    ranges: tuple[tuple[int, int], ...]
    why: str  # "section: NAME", "spelling: N lines" or "chunks"
    words: tuple[tuple[str, ...], ...] | None = None  # spelling focus: each range's flagged words


def in_block(lines: list[str]) -> list[bool]:
    """Per line: whether it is inside a fenced code block (its opening and closing fence lines
    included), by `editor.prompt`'s CommonMark rule, in one pass."""
    out, run = [], None
    for line in lines:
        f = _fence(line.rstrip("\n"))
        if run is None:
            out.append(f is not None)
            run = f[0] if f else None
        else:
            out.append(True)
            if f and f[0][0] == run[0] and len(f[0]) >= len(run) and not f[1]:
                run = None
    return out


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every heading outside code blocks. Underlined headings (setext,
    reST) get a level per underline character in order of appearance, as reST assigns them."""
    found, order = [], []
    inside = in_block(lines)
    for k, line in enumerate(lines):
        body = line.rstrip("\n")
        if inside[k]:
            continue
        m = ATX.match(body)
        if m:
            found.append((k, len(m.group(1)), m.group(2)))
            continue
        u = UNDERLINE.match(body)
        title = lines[k - 1].strip() if k else ""
        if u and title and not UNDERLINE.match(title) and len(body.strip()) >= len(title) - 1:
            if u.group(1) not in order:
                order.append(u.group(1))
            found.append((k - 1, order.index(u.group(1)) + 1, title))
    return found


def _words(text: str) -> str:
    """Lower-case words only (markup and punctuation gone), one space apart."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _called_a_section(title: str, said: str) -> bool:
    """Whether the instruction's words (`_words`) call `title` a section: "the Install section", "under Usage"."""
    t = re.escape(title)
    return re.search(rf"\b{t} (?:section|heading|chapter|part)\b|\b(?:section|heading|chapter|under) {t}\b",
                     said) is not None


def named_section(lines: list[str], instruction: str) -> tuple[tuple[int, int], str] | None:
    """The one section whose heading the instruction names, as a line range; None when it names none,
    names several, or does not speak of a section."""
    if not SECTION_WORDS.search(instruction):
        return None
    said = f" {_words(instruction)} "
    marks = headings(lines)

    def section(i: int) -> tuple[int, int]:
        return marks[i][0], next((j for j, lv, _ in marks[i + 1:] if lv <= marks[i][1]), len(lines))

    def named_among(candidates: list[int]) -> list[int]:
        hits = [i for i in candidates if _words(marks[i][2]) and f" {_words(marks[i][2])} " in said]
        if len(hits) > 1:  # "update the Install section: we now recommend uv tool install" in a README titled Tool
            hits = [i for i in hits if _called_a_section(_words(marks[i][2]), said)]
        return hits

    hits = named_among(list(range(len(marks))))
    # a changelog's "under 1.12.0's Fixed section": the version names `# 1.12.0 (June 18th, 2026)`, whose every
    # word the instruction never holds, and "Fixed" names one heading of it (a probe, session 34: the whole 470-line
    # file went to the model, too long for its context); a `### Fixed` of another release is not it, even when it is
    # the file's only one (a review, session 34)
    versions = set(VERSION.findall(instruction))
    by_version = [i for i, (_, _, title) in enumerate(marks)  # a release's heading starts with its version
                  if (m := LEADING_VERSION.match(title)) and m[1] in versions]
    if len(by_version) == 1:
        start, end = section(by_version[0])
        if len(hits) != 1 or not start <= marks[hits[0]][0] < end:
            inner = named_among([i for i, (k, _, _) in enumerate(marks) if start < k < end])
            hits = inner if len(inner) == 1 else by_version
    elif len(hits) != 1:
        return None
    k, _, title = marks[hits[0]]
    return section(hits[0]), title


REMOVES_SECTION = re.compile(rf"\b(?:{TAKES_OUT}|cut)\b", re.I)  # not one moved or merged: it stays, in some form


def section_kept(path: str, lines: list[str], new_text: str, instruction: str) -> tuple[str, int, int] | None:
    """(title, lines kept, lines it had) when the instruction asks a named section to go and the edit keeps most of
    its text: a probe (session 37) asked to "Remove the Features section", and the model renamed its heading and kept
    the list, exit 0 without a word (the heading's word was gone, so nothing named stayed)."""
    if not is_prose(path) or not REMOVES_SECTION.search(instruction):
        return None
    found = named_section(lines, instruction)
    if found is None:
        return None
    (start, end), title = found
    said = _words(instruction)
    if not re.search(rf"\b(?:{REMOVES_SECTION.pattern})\s+(?:the\s+)?(?:whole\s+|entire\s+)?(?:section\s+)?"
                     rf"{re.escape(_words(title))}\b", said):
        return None  # "remove the duplicate link from the Install section": something in it goes, not the section
    body = [line for line in lines[start + 1:end] if line.strip() and not UNDERLINE.match(line.rstrip("\n"))]
    left = set(new_text.splitlines(keepends=True))
    kept = sum(1 for line in body if line in left)
    return (title, kept, len(body)) if body and kept * 2 > len(body) else None


def chunks(lines: list[str], size: int = CHUNK_LINES) -> list[tuple[int, int]]:
    """Split into parts of about `size` lines at blank lines outside code blocks (a part never cuts a
    code block or a paragraph); a file without such a place stays one part."""
    ranges, start = [], 0
    inside = in_block(lines)
    for k in range(1, len(lines)):
        if k - start >= size and not lines[k - 1].strip() and not inside[k]:
            ranges.append((start, k))
            start = k
    ranges.append((start, len(lines)))
    if len(ranges) > 1 and ranges[-1][1] - ranges[-1][0] < size // 3:  # no short tail part
        ranges[-2:] = [(ranges[-2][0], ranges[-1][1])]
    return ranges


SMALL_SCOPE = 40  # lines: a named section or paragraph this short is read whole for a spelling request


def spelling_parts(lines: list[str], within: tuple[int, int] | None = None) -> Parts | None:
    """Spelling focus (`parts_of` calls it for a spelling request): the lines holding the words a spell
    checker flags (within a named section, if any), each shown alone with its words named; None when it
    flags none (the model then reads the whole text, or the section, as before).

    Why: asked to fix the typos of a whole README, the 1.5B model fixed fewer than half of them even when
    the prompt named the flagged words (`benchmarks/results/cpu-1.5b-prose-hints`); shown one line and
    its word, it has nothing else to attend to. It reads and writes only those lines (seconds instead of
    a whole-file rewrite), and every other line is kept byte for byte by construction. Typos the
    dictionary cannot flag (a real word, a capitalised or short one) are not looked at:
    `--no-focus` has the model read the whole file for them."""
    from editllm.editor.spelling import suspect_lines

    lo, hi = within or (0, len(lines))
    found = [(k, words) for k, words in suspect_lines(lines) if lo <= k < hi]
    if not found:
        return None
    return Parts(tuple((k, k + 1) for k, _ in found), f"spelling: {len(found)} line{'' if len(found) == 1 else 's'}",
                 tuple(words for _, words in found))


# "the first paragraph", "the last paragraph of the Usage section", "paragraph 2"
ORDINAL = re.compile(r"\b(first|second|third|fourth|fifth|opening|last|final|closing)\s+paragraph\b"
                     r"|\bparagraph\s+(\d+)\b", re.I)
ORDINALS = {"first": 0, "opening": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "last": -1, "final": -1,
            "closing": -1}
MOVES = re.compile(r"\b(?:move|swap|above|below|before|after|merge|combine|split)\b", re.I)
# a badge, an HTML line, a link definition, a list item: no paragraph's text ("the first paragraph" of a README that
# opens with a list of links is the prose after it)
NOT_PROSE = re.compile(r"^\s*(?:\[?!\[|<|\[//\]:|\[[^\]]+\]:\s|[-*+]\s|\d+[.)]\s)")


def paragraphs(lines: list[str], within: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """The paragraphs of a text as line ranges: runs of lines outside code blocks that are not blank, not a heading
    (nor its underline) and not only badges, HTML or list items."""
    inside = in_block(lines)
    heads = {j for k, _, _ in headings(lines) for j in (k, k + 1) if j == k or UNDERLINE.match(lines[j].rstrip("\n"))}
    lo, hi = within or (0, len(lines))
    runs: list[tuple[int, int]] = []
    start = None
    for k in range(lo, hi + 1):
        text = k < hi and lines[k].strip() and not inside[k] and k not in heads
        if text and start is None:
            start = k
        elif not text and start is not None:
            if not all(NOT_PROSE.match(line) for line in lines[start:k]):
                runs.append((start, k))
            start = None
    return runs


def named_paragraph(lines: list[str], instruction: str, within: tuple[int, int] | None = None) \
        -> tuple[tuple[int, int], str] | None:
    """The paragraph the instruction names by its place ("the first paragraph"), in the named section if any, and
    how it was named; None when it names none, or several. A probe (session 37): "Fix the typo in the first
    paragraph" showed the model every line of the README holding a flagged word, and it also changed `pydantic`
    in the Features list."""
    said = ORDINAL.findall(instruction)
    if len(said) != 1:
        return None
    word, number = said[0]
    index = ORDINALS[word.lower()] if word else int(number) - 1
    runs = paragraphs(lines, within)
    if not -len(runs) <= index < len(runs):
        return None
    return runs[index], f"{word.lower()} paragraph" if word else f"paragraph {number}"


def parts_of(path: str, lines: list[str], instruction: str) -> Parts | None:
    """What of a prose file the model edits: a named section or paragraph, the lines of the flagged words of a
    spelling request (in the section or paragraph, if one is named), or (chunking on) every part of a long file;
    None for code files and where the whole file is one part."""
    if not is_prose(path) or not lines:
        return None
    section = named_section(lines, instruction)
    moves = MOVES.search(instruction)
    if section and moves and re.search(
            rf"\b(?:above|below|before|after|into|to|under)\s+(?:the\s+)?{re.escape(_words(section[1]))}\b",
            _words(instruction)):
        section = None  # where text goes, not what is edited: "move the first paragraph below the Usage section"
    paragraph = None if moves else named_paragraph(lines, instruction, section[0] if section else None)
    scope = paragraph or section
    if prose.WORDS and prose.HINTS and prose.asks_spelling(instruction):
        words = spelling_parts(lines, scope[0] if scope else None)
        if words is not None and scope is not None and scope[0][1] - scope[0][0] <= SMALL_SCOPE:
            # a short section or paragraph named is read whole, its flagged words named: a probe (session 42) asked
            # to "fix the typo in the Disclosure policy section", and the model saw only the one line holding a
            # flagged word (`nodejs`), not the typo (`dtae`: short words are never flagged); no change, exit 0
            flagged = tuple(dict.fromkeys(w for ws in words.words or () for w in ws))
            return Parts((scope[0],), f"{'paragraph' if paragraph else 'section'}: {scope[1]}", (flagged,))
        if words is not None:
            return words
    if paragraph is not None:
        return Parts((paragraph[0],), f"paragraph: {paragraph[1]}")
    if section is not None:
        return Parts((section[0],), f"section: {section[1]}")
    if prose.CHUNKS:
        ranges = chunks(lines)
        if len(ranges) > 1:
            return Parts(tuple(ranges), "chunks")
    return None


def merge_parts(lines: list[str], parts: Parts, edited: list[str]) -> str:
    """The file with each range replaced by its edited text (each ending with a newline or empty)."""
    out, at = [], 0
    for (start, end), text in zip(parts.ranges, edited, strict=True):
        out += lines[at:start]
        out.append(text)
        at = end
    out += lines[at:]
    return "".join(out)
