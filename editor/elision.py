"""Placeholders a model writes for code it left out (`# ... existing code ...`, `// rest of the file
unchanged`, a body of `...  # unchanged`): never written into the user's file.

Asked for a whole file, models often abbreviate what they did not change with such a line. Written as it
is, the placeholder replaces the user's code (a function's body becomes `...`), or lands in the file as a
stray comment while the whole-file merge puts the code back. Here the output is aligned with the text the
model was shown (`difflib`, as the diff itself is), and each stretch that differs is judged:

- placeholders alone in place of original lines: those lines come back; in place of nothing: they go;
- placeholders beside lines the model changed: they go when every original line of the stretch has its
  rewritten counterpart there (the placeholder stood for nothing of it), else the edit is refused (one line,
  nothing written): which original lines they stand for cannot be told, and a guess could lose code.

What counts is deliberately narrow, since a real comment the model adds must stay: a comment (in the file's
own comment syntax; in prose only `<!-- -->` or a bracketed line `[...]`) whose text starts or ends with `...` and
says what was left out, or that is nothing but a description of left-out code ("rest of the file unchanged",
"existing code"). Weaker signs (a note "unchanged", a bare `...`) count only alone in place of original
lines, a bare `...` only as the whole body of a Python definition the instruction does not name, and an
instruction that asks for stubs, placeholders or ellipses turns them off.
"""

from __future__ import annotations

import re

from editllm.editor.align import line_opcodes
from editllm.editor.asks import mentioned
from editllm.editor.blocks import CLOSER, CONTAINER, DEF, METHOD, PAIRING_LIMIT, indent_of, line_likeness, paired
from editllm.editor.blocks import members as members_of
from editllm.editor.errors import EditError
from editllm.editor.source import split_lines

PROSE = (".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc")
# Where a comment starts: in code (after an optional `...` or `pass` statement), and in prose.
CODE_COMMENT = re.compile(r"^\s*(?:(?:\.\.\.|…|pass)\s*;?\s*)?(?:#+|//+|/\*+|<!--|--(?=\s)|;+|%+|\{/\*)")
PROSE_COMMENT = re.compile(r"^\s*<!--")
BRACKETED = re.compile(r"^\s*(?:\[.*\]|\(.*\))\s*$")
OPEN = re.compile(r"^\s*(?:(?:\.\.\.|…|pass)\s*;?\s*)?(?:#+|//+|/\*+|<!--|--|;+|%+|\{/\*)?\s*[\[(]?")
CLOSE = re.compile(r"[\])]?\s*(?:\*+/\}?|-->)?\s*$")
ELLIPSIS = re.compile(r"\.\.\.|…")
NOUN = (r"(?:file|code|class|function|method|module|implementation|body|document|content|component|program|"
        r"script|section|page|text|config|methods|functions|imports|lines|logic|fields|tests|definitions|"
        r"sections|properties|attributes|handlers|routes|cases|members|helpers)")
STAYS = r"(?:unchanged|omitted|as before|as is|the same|(?:remains?|stays?|is|are) (?:unchanged|the same|as before))"
# A comment that is nothing but a description of left-out code (never a bare noun: `# Helpers` heads a section).
DESCRIBES = re.compile(
    rf"(?:keep(?:ing)? )?(?:(?:the )?(?:rest|remainder) of (?:the |this )?{NOUN}(?: {STAYS})?|"
    rf"(?:existing|remaining|unchanged) (?:code|imports|methods|functions|logic|content|lines|implementation)"
    rf"(?: here)?(?: {STAYS})?|(?:the )?(?:rest|{NOUN}) {STAYS})", re.I)
# With an ellipsis at its start or end, any word saying what was left out.
LEFT_OUT = re.compile(r"\b(?:existing|unchanged|same|rest|remaining|remainder|previous|original|other|omitted|"
                      r"more|before|etc|code|here|methods?|functions?|imports?)\b", re.I)
NOTE = re.compile(r"(?:unchanged|no changes?|omitted|same as (?:before|above)|as before)", re.I)
HINT = re.compile(r"unchanged|omitted|as before|as is|the same|no change|rest of|remainder of|existing|remaining|"
                  r"same as", re.I)  # in every placeholder without an ellipsis
ASKED = re.compile(r"placeholder|stub|elid|elision|omit|ellips|abstract|protocol|interface|overload", re.I)
HEADER = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+).*:\s*(?:#.*)?$")
CLASS = re.compile(r"^(\s*)class\s+(\w+)")
LITERAL = re.compile(r"(?:=|:|\(|\bdefault)\s*\{\s*$")  # an object literal opens: `const api = {`, `handlers: {`


def note_of(line: str, path: str) -> str | None:
    """The text of the comment `line` is (its syntax stripped), or None when it is no comment."""
    prose = path.lower().endswith(PROSE)
    if not ((prose and BRACKETED.match(line)) or (PROSE_COMMENT if prose else CODE_COMMENT).match(line)):
        return None
    body = _body(line)
    if not body.strip(".… "):
        return "..." if ELLIPSIS.search(body) else ""  # `# ...` says code was left out; `#` alone says nothing
    return re.sub(r"[\s:;,.!]+$", "", body)


def strength(line: str, path: str) -> str | None:
    """"strong" for a placeholder comment, "weak" for a note of a few words or a bare `...`, else None."""
    if line.strip() in ("...", "…"):
        return "weak" if path.endswith((".py", ".pyi")) else None
    note = note_of(line, path)
    if not note or len(line) > 100:
        return None
    if note == "..." or (ELLIPSIS.search(line) and _edged(line) and LEFT_OUT.search(note)
                         and len(ELLIPSIS.sub(" ", note).split()) <= 5):  # longer: a sentence trailing off
        return "strong"
    if DESCRIBES.fullmatch(note.strip(".… ")):
        return "strong"
    return "weak" if NOTE.fullmatch(note.strip(".… ()[]")) else None


def _edged(line: str) -> bool:
    """Whether the comment's text starts or ends with an ellipsis (`# ... existing code`, `// other methods ...`):
    one in the middle of a sentence is prose."""
    body = _body(line).strip(" ()[]")
    return body.startswith(("...", "…")) or body.endswith(("...", "…"))


def _body(line: str) -> str:
    """A comment line's text, its comment syntax (and a statement before it) stripped."""
    return CLOSE.sub("", OPEN.sub("", line, count=1), count=1).strip()


def fill(shown: str, edited: str, instruction: str, path: str) -> tuple[str, bool]:
    """`edited` with the original lines in place of the model's placeholders, and whether it had any.
    `shown` is the text the model was asked to rewrite (the file, or its focus)."""
    if not ELLIPSIS.search(edited) and not HINT.search(edited):
        return edited, False  # the common case, decided without splitting the texts into lines
    old, new = split_lines(shown), split_lines(edited)
    asked = instruction.lower()
    weak_ok = ASKED.search(instruction) is None

    def kind(line: str, hunk_old: list[str]) -> str | None:
        """The line's placeholder strength in its stretch; None for the model's own line or one the original
        had right there, or a strong one whose words the instruction itself uses."""
        k = strength(line, path)
        if k is None or line in hunk_old or (k == "weak" and not weak_ok):
            return None
        if k == "strong" and (note_of(line, path) or "").lower() in asked:
            return None
        return k

    if not any(strength(line, path) for line in new):
        return edited, False
    out: list[str] = []
    filled = False
    taken = 0  # lines of the next (equal) stretch a placement already took
    ops = line_opcodes(old, new, _blank)
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if taken:
            i1, j1, taken = i1 + taken, j1 + taken, 0
        part, was = new[j1:j2], old[i1:i2]
        kinds = [kind(line, was) for line in part if line.strip()]
        if tag == "equal" or not any(kinds):
            out += part
        elif all(kinds) and tag == "replace" and ("strong" in kinds or _whole_body(new, j1, old, i2, instruction)):
            out += was  # placeholders alone in place of these lines: the lines come back
            filled = True
        elif "strong" not in kinds:
            out += part  # a weak sign beside the model's own lines: the model's text
        elif all(k == "strong" for k in kinds):
            filled = True  # placeholders in place of nothing: they go
        else:
            ahead = ops[n + 1][2] - ops[n + 1][1] if n + 1 < len(ops) and ops[n + 1][0] == "equal" else 0
            lines, taken = _beside(old, i1, i2, part, lambda line, was=was: kind(line, was) == "strong", path,
                                   new[j2:], ahead)
            out += lines
            filled = True
    return "".join(out), filled


def _blank(line: str) -> bool:
    """Blank lines extend a match but never anchor one: two blank lines between definitions would otherwise
    pair a placeholder with the wrong stretch of the original."""
    return not line.strip()


def _whole_body(new: list[str], j1: int, old: list[str], i2: int, instruction: str) -> bool:
    """Whether weak signs alone (a bare `...`, a note "unchanged") stand for `was`: the whole body of a Python
    definition the instruction names neither by itself nor by its class (`helper`'s body written `...`)."""
    if j1 == 0 or not (m := HEADER.match(new[j1 - 1])):
        return False
    indent = len(m.group(1))
    rest = next((line for line in old[i2:] if line.strip()), None)
    if rest is not None and len(rest) - len(rest.lstrip()) > indent:
        return False  # the original body goes on past the stretch: not the whole body
    names = [m.group(2)]
    for line in reversed(new[:j1 - 1]):
        c = CLASS.match(line)
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            if c:
                names.append(c.group(2))
            break
    return not any(mentioned(n, instruction) for n in names)


def _beside(old: list[str], i1: int, i2: int, part: list[str], marker, path: str, following: list[str],
            ahead: int) -> tuple[list[str], int]:
    """A stretch `old[i1:i2]` the model rewrote as `part`, placeholders beside lines it changed. Each original
    line is paired with the rewritten line most like it (one each, the most alike first, 3/4 alike at least, a
    definition only with one of its name). All paired: the placeholders stood for nothing here and go.
    Placeholders after the changed lines, the stretch anchored before it, and the unpaired lines all after the
    paired ones: they stand for those (`return t.lower()...` then `# ... rest of the file unchanged ...`); the
    same mirrored for placeholders before. Anything else could lose lines by a guess (a new function after a
    placeholder taken for the rewrite of one alike, `e = 5` for `c = 3`): refused. Returns the lines and how
    many of the `ahead` lines after the stretch (the same in both texts) they took (`_appended`)."""
    was = old[i1:i2]
    said = next(line for line in part if marker(line))
    if len(was) * len(part) > PAIRING_LIMIT:
        raise EditError(f"{path}: the model wrote a placeholder ({said.strip()!r}) for code it left out, in a long "
                        "stretch it rewrote, so which original lines it stands for is unclear; nothing written")
    lead, tail = _edge(part, marker), _edge(part[::-1], marker)
    core = [line for k, line in enumerate(part) if lead <= k < len(part) - tail and not marker(line)]
    used_old = paired(was, core, _alike, 0.75)
    unpaired = [i for i, line in enumerate(was) if line.strip() and i not in used_old]
    inner = any(marker(line) for line in part[lead:len(part) - tail])
    if not unpaired and not inner:
        return core, 0
    if lead and not inner and (placed := _appended(old, i1, i2, core, bool(tail), following, ahead)):
        return placed  # `# ... existing code ...` then a new function: the code, and the function after it
    if used_old and not inner:
        if tail and not lead and i1 > 0 and min(unpaired) > max(used_old):  # the original's spacing after
            return _strip(core, trailing=True) + was[max(used_old) + 1:], 0
        if lead and not tail and i2 < len(old) and max(unpaired) < min(used_old):
            return was[:min(used_old)] + _strip(core, trailing=False), 0
    raise EditError(f"{path}: the model wrote a placeholder ({said.strip()!r}) for code it left out, beside "
                    "lines it changed, so which original lines it stands for is unclear; nothing written")


def _appended(old: list[str], i1: int, i2: int, core: list[str], tail: bool, following: list[str],
              ahead: int) -> tuple[list[str], int] | None:
    """`_append_at`, and when the stretch ends inside a definition because the new one's last lines were matched
    to the old last member's (`  }` then `}`, or `    log(e);` then `  },`: the same text), again with those
    lines, up to its closing brace, given to the new member; then also how many lines after the stretch it
    took."""
    placed = _append_at(old, i1, i2, core, tail, following)
    if placed is not None:
        return placed, 0
    body = _strip(_strip(core, trailing=True), trailing=False)
    indent = indent_of(body[0]) if body else 0
    # the new member's own last lines, up to its closing brace, were matched to the old last member's
    k = next((n + 1 for n, line in enumerate(following) if line.strip() and indent_of(line) <= indent), 0)
    if not 0 < k <= ahead or not CLOSER.match(following[k - 1]) or indent_of(following[k - 1]) != indent:
        return None
    placed = _append_at(old, i1, i2 + k, core + following[:k], tail, following[k:])
    return (placed, k) if placed is not None else None


def _append_at(old: list[str], i1: int, i2: int, core: list[str], tail: bool, following: list[str]) -> list[str] | None:
    """A placeholder then only new definitions, the model's usual answer to "add a function" (or "a method to
    class C"): the placeholder stands for every original line of the stretch, and the definitions are added
    after them: top-level ones at the end of the stretch, methods at the end of the class they are indented
    into (the class whose header comes before the stretch, its body at their indentation), also when a second
    placeholder after them stands for the rest of the file. None for anything else (a statement, a name the
    file or class already defines: it may be a rewrite, not an addition; a top-level function between two
    placeholders: where it goes is a guess). `following`: the output's lines after the stretch."""
    was = old[i1:i2]
    body = _strip(_strip(core, trailing=True), trailing=False)
    if not body:
        return None
    indent = indent_of(body[0])
    if indent == 0 and tail:
        return None
    if indent == 0:
        scope, end = old, len(was)
    else:
        header = next((k for k in range(i1 - 1, -1, -1) if old[k].strip() and indent_of(old[k]) < indent), None)
        literal = header is not None and LITERAL.search(old[header]) is not None  # `const api = {`
        if header is None or not (CONTAINER.match(old[header]) or CLASS.match(old[header]) or literal):
            return None
        base = indent_of(old[header])
        members = old[header + 1:]
        stop = next((k for k, line in enumerate(members) if line.strip() and indent_of(line) <= base), len(members))
        scope = members[:stop]
        if next((indent_of(line) for line in scope if line.strip()), None) != indent:
            return None  # not the class body's indentation
        if literal and not next((line for line in reversed(scope) if line.strip()), "").rstrip().endswith(","):
            return None  # the last member has no comma after it: a member added after it would not parse
        end = max(0, min(len(was), header + 1 + stop - i1))
    braced = indent > 0 and old[header].rstrip().endswith("{")
    blocks = [b for b in members_of(body, indent, braced) if b.lines]
    had = {b.name for b in members_of(scope, indent, braced)} | {m.group(1) for line in scope if (m := DEF.match(line))}
    if not blocks or not all(b.name and b.name not in had for b in blocks):
        return None
    while end > 0 and not was[end - 1].strip():
        end -= 1  # after the last line of code, before the blank lines that follow it
    if not (_boundary(old[i1 + end:], indent) and _boundary(following, indent)):
        return None  # the stretch ends inside a definition (a method's `}` taken for the new one's): no addition
    gap = core[:len(core) - len(_strip(core, trailing=False))] or was[end:end + 1] or ["\n"]
    return was[:end] + gap + body + was[end:]


def _boundary(rest: list[str], indent: int) -> bool:
    """Whether code that goes on with `rest` can take a definition at `indent` before it: `rest` starts (after
    blank lines) with the end of the file, a line less indented, or one as indented that opens something
    (not the closing brace of the definition before)."""
    line = next((x for x in rest if x.strip()), None)
    return line is None or indent_of(line) < indent or (indent_of(line) == indent and not CLOSER.match(line))


def _alike(a: str, b: str) -> float:
    """How alike two lines are, for pairing an original line with its rewrite: 0 for definitions of two names
    (`def a2` is no rewrite of `def b`, nor `getPost(id) {` of `getUser(id) {`, however alike the text)."""
    da, db = DEF.match(a) or METHOD.match(a), DEF.match(b) or METHOD.match(b)
    if (da and da.group(1)) != (db and db.group(1)):
        return 0.0
    return line_likeness(a, b)


def _strip(lines: list[str], trailing: bool) -> list[str]:
    """`lines` without their blank lines at the end (or the start)."""
    content = [k for k, line in enumerate(lines) if line.strip()]
    if not content:
        return []
    return lines[:content[-1] + 1] if trailing else lines[content[0]:]


def _edge(lines: list[str], marker) -> int:
    """How many lines at the start are placeholders or blank, up to the last placeholder among them."""
    last = 0
    for k, line in enumerate(lines):
        if marker(line):
            last = k + 1
        elif line.strip():
            break
    return last
