"""Placeholders a model writes for code it left out (`# ... existing code ...`, `// rest of the file
unchanged`, a body of `...  # unchanged`): never written into the user's file.

Asked for a whole file, models often abbreviate what they did not change with such a line. Written as it
is, the placeholder replaces the user's code (a function's body becomes `...`), or lands in the file as a
stray comment while the whole-file merge puts the code back. Here each run of placeholder lines is aligned
with the text the model was shown (`difflib`, as the diff itself is): where it stands in place of lines of
the original, those lines come back; where it stands for nothing, it goes. A placeholder mixed into lines
the model changed cannot be placed (which original lines does it stand for?): refused, one line, nothing
written. An instruction that asks for placeholders (a stub, an elision) turns this off.
"""

from __future__ import annotations

import difflib
import re

from editllm.editor.errors import EditError
from editllm.editor.source import split_lines

# Comment syntax around a placeholder, and the `...` or `pass` statement a body placeholder starts with.
LEAD = re.compile(r"^\s*(?:(?:\.\.\.|…|pass)\s*;?\s*)?(?:#+|//+|/\*+|\*|<!--|--|;+|%+|\{/\*)?\s*[\[(]?\s*")
TRAIL = re.compile(r"\s*[\])]?\s*(?:\*+/\}?|-->)?\s*$")
ELLIPSIS = re.compile(r"\.\.\.|…")
# With an ellipsis: any word saying what was left out. Without one: a phrase that can only mean "left out".
LEFT_OUT = re.compile(r"\b(?:existing|unchanged|same|rest|remaining|remainder|previous|original|other|omitted|"
                      r"more|before|etc|code|here|methods?|functions?|imports?)\b", re.I)
# Without one: a phrase naming left-out code, or (in a note of a few words) saying it did not change.
PHRASE = re.compile(
    r"\b(?:(?:rest|remainder)\s+of\s+(?:the\s+|this\s+)?|(?:existing|remaining|previous|original|unchanged)\s+)"
    r"(?:file|code|class|function|method|module|implementation|body|document|content|component|program|script|"
    r"section|page|text|config|methods|functions|imports|lines|logic|fields|tests|definitions|sections)\b", re.I)
SHORT = re.compile(r"\b(?:unchanged|omitted|as\s+before|no\s+changes?|same\s+as\s+(?:before|above)|same)\b", re.I)
ASKED = re.compile(r"placeholder|stub|elid|elision|omit|\.\.\.|…", re.I)
BODILESS = re.compile(r"abstract|protocol|interface|overload", re.I)  # asks for bodies of a bare `...`


def trigger(line: str) -> str | None:
    """The words that make `line` a placeholder for left-out code (`...` for a bare ellipsis), or None. Only a
    comment (or a bracketed note) says it: a line of code with `...` in it (`from ...utils import x`) is code."""
    if line.strip() in ("...", "…"):
        return "..."
    if not _comment(line):
        return None
    body = TRAIL.sub("", LEAD.sub("", line, count=1), count=1)
    words = body.split()
    if not body.strip(".… "):
        return "..." if ELLIPSIS.search(line) else None
    if len(words) > 10 or len(line) > 100:  # a sentence of a real comment, not a placeholder
        return None
    if ELLIPSIS.search(body) and (m := LEFT_OUT.search(body)):
        return m.group(0)
    m = PHRASE.search(body) or (SHORT.search(body) if len(words) <= 4 else None)
    return m.group(0) if m else None


def _comment(line: str) -> bool:
    """Whether a line holds a comment (or a bracketed note): a phrase alone in code is code, not a placeholder."""
    s = line.strip()
    return bool(re.match(r"(?:(?:\.\.\.|…|pass)\s*;?\s*)?(?:#|//|/\*|\*|<!--|--|;|%|\{/\*|\[|\()", s))


def fill(shown: str, edited: str, instruction: str, path: str) -> tuple[str, bool]:
    """`edited` with the original lines in place of the model's placeholders, and whether it had any.

    `shown` is the text the model was asked to rewrite (the file, or its focus). Only lines the model added
    count: a placeholder-like comment the file already had is the user's. A bare `...` statement is code (a
    stub, a Protocol's body) unless it stands, alone, in place of the original's lines."""
    if ASKED.search(instruction) or not (ELLIPSIS.search(edited) or PHRASE.search(edited) or SHORT.search(edited)):
        return edited, False  # the common case, decided without splitting the texts into lines
    old, new = split_lines(shown), split_lines(edited)
    own = {line.strip() for line in old}
    bodiless = BODILESS.search(instruction) is not None

    def marker(line: str) -> str | None:
        """"said" for a placeholder comment, "bare" for a bare `...`, None for anything else."""
        why = trigger(line)
        if why is None or line.strip() in own:
            return None
        if _comment(line):
            return "said"
        return None if bodiless else "bare"

    if not any(marker(line) for line in new):
        return edited, False
    out: list[str] = []
    filled = False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(_blank, old, new, autojunk=False).get_opcodes():
        part = new[j1:j2]
        kinds = {marker(line) for line in part if line.strip()}
        if tag in ("equal", "delete") or "said" not in kinds and (tag == "insert" or None in kinds):
            out += part  # the model's own lines; a bare `...` among them is code it wrote
        elif kinds <= {"said", "bare"}:
            out += old[i1:i2]  # the placeholder stood for these lines (none, for an insert)
            filled = True
        else:
            out += around(old[i1:i2], part, marker, path)
            filled = True
    return "".join(out), filled


def _blank(line: str) -> bool:
    """Blank lines extend a match but never anchor one: two blank lines between definitions would otherwise
    pair a placeholder with the wrong stretch of the original."""
    return not line.strip()


def around(old: list[str], part: list[str], marker, path: str) -> list[str]:
    """Changed lines with placeholders before or after them, as one stretch of the diff: the placeholder
    after stands for the original's lines after the one the last changed line rewrites (the most alike),
    the one before for those before the first's. A placeholder between changed lines is refused."""
    def edge(lines: list[str]) -> int:  # how many lines at the start are placeholders, blank or a `pass` filler
        return next((k for k, line in enumerate(lines) if line.strip() not in ("", "pass") and not marker(line)),
                    len(lines))

    lead, tail = edge(part), edge(part[::-1])
    if lead == len(part):  # placeholders and a `pass` only: they stood for these lines
        return old
    core = part[lead:len(part) - tail]
    said = next(line for line in part if marker(line) == "said")
    if any(marker(line) == "said" for line in core):
        raise EditError(f"{path}: the model wrote a placeholder ({said.strip()!r}) for code it left out, "
                        "among lines it changed, so where the original goes is unclear; nothing written")
    lead_marked = any(marker(line) for line in part[:lead])
    tail_marked = any(marker(line) for line in part[len(part) - tail:])
    if not old:  # inserted lines: the placeholders stood for nothing
        return ([] if lead_marked else part[:lead]) + core + ([] if tail_marked else part[len(part) - tail:])
    first = _likeliest(core[0], old) if lead_marked else 0
    last = _likeliest(core[-1], old) if tail_marked else len(old) - 1
    if first is None or last is None or first > last:
        raise EditError(f"{path}: the model wrote a placeholder ({said.strip()!r}) for code it left out, and "
                        "which lines it stands for is unclear; nothing written")
    before = old[:first] if lead_marked else part[:lead]
    after = old[last + 1:] if tail_marked else part[len(part) - tail:]
    return before + core + after


def _likeliest(line: str, old: list[str]) -> int | None:
    """The index of the original line `line` most likely rewrites (None when none is much alike)."""
    scores = [difflib.SequenceMatcher(None, line.strip(), o.strip()).ratio() for o in old]
    best = max(range(len(old)), key=scores.__getitem__, default=None)
    return best if best is not None and scores[best] >= 0.5 else None
