"""A comment the model re-wrapped and nobody asked it to is put back as it was.

Small models re-wrap a comment they copy (the same words, other line breaks). The change is no edit, but it is
a hunk in the diff, and `editllm check` in a pre-commit hook then fails on a file that already does what the
rule says ("make sure CHUNK is 16384": rc 1 for a re-wrapped comment above it). A changed stretch is put back
when, before and after, it is only lines of one comment (a `/* ... */` block, a Python docstring, a Markdown or
plain-text paragraph), with the same words in the same order, the same indentation and no blank line, and the
instruction says nothing of layout ("reflow", "wrap", "format", "split", "line", ...; a "Copyright line" is a
thing, not layout). Everything else stays as the model wrote it: code and its whitespace
(indentation is meaning in Python and YAML), strings, `//` and `#`
comments (their markers are words: turning `//` into `/* */` is an edit), headings, lists, quotes and tables.
"""

from __future__ import annotations

import io
import re
import tokenize
from difflib import SequenceMatcher

from editllm.editor.align import line_opcodes
from editllm.editor.languages import PYTHON, language
from editllm.editor.prosefocus import in_block

# Languages whose block comments are `/* ... */`.
C_STYLE = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".java", ".js", ".jsx", ".mjs", ".cjs", ".ts",
           ".tsx", ".cs", ".go", ".rs", ".kt", ".kts", ".swift", ".scala", ".php", ".css", ".scss", ".less", ".dart",
           ".m", ".mm", ".groovy")
MARKDOWN = (".md", ".markdown", ".mdx")
LAYOUT = re.compile(r"\b(?:re-?flow\w*|re-?wrap\w*|wrap\w*|unwrap\w*|format\w*|whitespace|white space|indent\w*|"
                    r"dedent\w*|spaces?|tabs?|lines?|multi-?line|columns?|width|chars?|characters|black|prettier|"
                    r"tidy|clean\w* up|pep ?\d+|lint\w*|layout|split\w*|break\w*|join\w*|shorten\w*|paragraphs?|"
                    r"summary|long\w*|length)\b", re.I)
# A line that is a thing, not layout: "the file must contain a Copyright line" (a probe's rule)
NAMED_LINE = re.compile(r"\b(?:copyright|shebang|header|subject|title|author|licen[cs]e|heading|status|summary|"
                        r"import|signature|spdx|encoding|version)\s+lines?\b", re.I)
STRUCTURE = re.compile(r"^\s*(?:#|>|\||[-*+]\s|\d+[.)]\s|```|~~~|---|===|<)")  # Markdown that is not a paragraph


def speaks_of_layout(instruction: str) -> bool:
    return LAYOUT.search(NAMED_LINE.sub(" ", instruction)) is not None


# An instruction that may ask for the blank lines at either end of a file to go
END_BLANKS = re.compile(r"\b(?:blank|empty|leading|trailing|whitespace|white space|newlines?|eof|w391|tidy|"
                        r"clean\w* ?up|format\w*|lint\w*|prettier|black)\b", re.I)


def blank_run(lines: list[str], start: bool) -> int:
    """How many blank lines `lines` starts (or ends) with."""
    return next((k for k, line in enumerate(lines if start else reversed(lines)) if line.strip()), len(lines))


def keep_end_blanks(old: list[str], new: list[str], instruction: str) -> list[str]:
    """`new` with the blank lines `old` starts and ends with that it lost put back, and none it gained at its end:
    `new` itself when none were lost or gained, when the instruction may ask for them to go, or when they are all
    the output changes (that was the edit: "delete the last two lines"). The model drops them at both ends of what
    it writes: a real probe (session 32) asked to add an item to a README's list, and the diff also deleted the
    file's last, blank line, a hunk nobody asked for that fails `editllm check` on a file that already does what the
    rule says; another (session 33) had PyYAML's error.py, which opens with a blank line, lose it in 2 of 2 edits
    about its classes. Those at the start only above the line the file started with (or its edit): a line the edit
    puts on top (a shebang, a header) takes their place."""
    if END_BLANKS.search(instruction) or not "".join(new).strip():  # an emptied file stays empty
        return new
    old_lead, old_tail, new_lead, new_tail = (blank_run(old, True), blank_run(old, False), blank_run(new, True),
                                              blank_run(new, False))
    if new[new_lead:len(new) - new_tail] == old[old_lead:len(old) - old_tail]:
        return new
    if new_tail < old_tail:
        last = new[-1] if new[-1].endswith("\n") else new[-1] + "\n"
        new = new[:-1] + [last] + old[len(old) - old_tail + new_tail:]
    elif new_tail > old_tail:  # the blank lines that set a last definition apart, left when it went (a probe, session
        new = new[:len(new) - new_tail + old_tail]  # 37: "remove the parse_sku function" ended the file in two)
    if new_lead < old_lead < len(old) and alike(new[new_lead], old[old_lead]):  # not above a new top line (a shebang)
        new = old[:old_lead - new_lead] + new
    return new


ALIKE = 0.6  # "__all__ = ['SourceMark']" is the line "__all__ = ['Mark']" was (0.86); a shebang is not `import os`


def alike(a: str, b: str) -> bool:
    """Whether line `a` is line `b` edited (or the same)."""
    return a == b or SequenceMatcher(None, a.strip(), b.strip()).ratio() >= ALIKE


def keep_layout(path: str, old: list[str], new: list[str], instruction: str) -> list[str]:
    """`new` with each changed stretch that only re-wraps one comment put back as in `old` (LF lines both);
    `new` itself when nothing is put back or the instruction speaks of layout."""
    if speaks_of_layout(instruction) or old == new:
        return new
    old_notes, new_notes = commentary(path, old), commentary(path, new)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag != "replace":
            out += new[j1:j2]
            continue
        # the comment lines this stretch starts with and those it ends with (a comment re-wrapped right above the
        # line that really changed is one stretch with it), each put back when only its line breaks changed
        pa, pb = run(range(i1, i2), old_notes), run(range(j1, j2), new_notes)
        head = rewrapped(old[i1:i1 + pa], new[j1:j1 + pb])
        i, j = (i1 + pa, j1 + pb) if head else (i1, j1)
        sa, sb = run(range(i2 - 1, i - 1, -1), old_notes), run(range(j2 - 1, j - 1, -1), new_notes)
        tail = rewrapped(old[i2 - sa:i2], new[j2 - sb:j2])
        k, m = (i2 - sa, j2 - sb) if tail else (i2, j2)
        out += (old[i1:i] if head else new[j1:j]) + new[j:m] + (old[k:i2] if tail else new[m:j2])
    return out


def rewrapped(a: list[str], b: list[str]) -> bool:
    """Whether `b` is `a` with other line breaks only: the same words in order, the same indentation (the first
    line's, and the others' where both have others), no blank line, and not the same lines."""
    if not a or not b or a == b or any(not line.strip() for line in a + b):
        return False
    indent = [len(line) - len(line.lstrip()) for line in a], [len(line) - len(line.lstrip()) for line in b]
    rest = set(indent[0][1:]), set(indent[1][1:])  # a line's worth joined or split: one side may have no rest
    return ("".join(a).split() == "".join(b).split() and indent[0][0] == indent[1][0]
            and (rest[0] <= rest[1] or rest[1] <= rest[0])
            and [line.split() for line in a] != [line.split() for line in b])  # the breaks moved, not the spaces


def run(indices: range, notes: set[int]) -> int:
    """How many of `indices`, from the first on, are comment lines."""
    count = 0
    for k in indices:
        if k not in notes:
            break
        count += 1
    return count


def commentary(path: str, lines: list[str]) -> set[int]:
    """Indices of the lines that are text of a comment that may be re-wrapped: inside a `/* ... */` block that
    opens a line, a Python docstring, a Markdown paragraph."""
    name = path.lower()
    if name.endswith(MARKDOWN) or language(path) == "text":  # plain text (a LICENSE, a .txt) has paragraphs too
        fenced = in_block(lines)
        return {k for k, line in enumerate(lines) if not fenced[k] and line.strip() and not STRUCTURE.match(line)
                and len(line) - len(line.lstrip()) < 4}
    if name.endswith(C_STYLE):
        return block_comments(lines)
    if name.endswith(PYTHON):
        return docstrings(lines)
    return set()


def block_comments(lines: list[str]) -> set[int]:
    """Lines within a `/* ... */` comment that begins a line and ends one (no code before or after it on its
    lines): a `/*` in the middle of a line (a string, a regex literal, a glob) opens none."""
    notes: set[int] = set()
    start = None
    for k, line in enumerate(lines):
        text = line.strip()
        if start is None and text.startswith("/*"):
            start = k
        if start is not None and "*/" in text:
            if text.endswith("*/"):
                notes |= set(range(start, k + 1))
            start = None
    return notes


def docstrings(lines: list[str]) -> set[int]:
    """Lines of a Python file's docstrings (a string that is the first statement of the module, a class or a
    function, on lines of its own), doctests aside; none when the text does not tokenize."""
    notes: set[int] = set()
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO("".join(lines)).readline)
                  if t.type not in (tokenize.COMMENT, tokenize.NL)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return notes
    for n, tok in enumerate(tokens):
        if tok.type != tokenize.STRING or n + 1 >= len(tokens) or tokens[n + 1].type != tokenize.NEWLINE:
            continue
        before = tokens[n - 1] if n else None
        first = before is None or before.type == tokenize.ENCODING or (
            before.type == tokenize.INDENT and n >= 3 and tokens[n - 2].type == tokenize.NEWLINE
            and tokens[n - 3].string == ":")
        span = range(tok.start[0] - 1, tok.end[0])
        if first and ">>>" not in tok.string:
            notes |= set(span)
    return notes


# Words by which a rule speaks of comments, quoting or layout: then a change to those alone is the rule's
COSMETIC = re.compile(r"\b(?:comments?|commented|quot\w*|triple|typos?|spell\w*|todo|fixme|style|spacing|blank|"
                      r"newlines?|eof|end of (?:the )?file|ends? with|trailing|empty)\b", re.I)

# Comment text that is an instruction to a tool, or a notice: a rule may be about it without saying "comment"
MARKER = re.compile(r"type:|noqa|pragma|pylint|coding[:=]|vim?:|spdx|\bxxx\b|todo|fixme|hack|copyright|licen[cs]e|"
                    r"flake8|mypy|ruff|isort|fmt:|nosec|author", re.I)


def cosmetic_only(path: str, old: str, new: str, instruction: str) -> bool:
    """Whether `new` differs from `old` only where the rule cannot be about: in a Python file, comments reworded
    in place (the same tokens otherwise, as many comments, no new word, nothing a tool or a notice reads: `# noqa`,
    `# type:`, a licence, a shebang), or in a Markdown or text file, line breaks alone (the same words); where the
    instruction speaks of neither comments nor layout. A real probe: `check` exited 1 on complying files for a
    comment reworded ("on self and on subdirs") and a LICENSE re-wrapped. Narrow on purpose: a rule may be about
    a shebang, a pragma or a backslash continuation without naming it (a review), and a fix discarded passes a
    file that fails it."""
    if old == new or speaks_of_layout(instruction) or COSMETIC.search(instruction):
        return False
    if language(path) in ("markdown", "text"):
        return old.split() == new.split()
    if not path.endswith(PYTHON):
        return False
    before, after = _tokens(old), _tokens(new)
    if before is None or after is None or before[0] != after[0] or len(before[1]) != len(after[1]):
        return False
    for was, now in zip(before[1], after[1], strict=True):
        if was != now and (MARKER.search(was) or MARKER.search(now) or was.startswith("#!")
                           or not set(now.lstrip("#").split()) <= set(was.lstrip("#").split())):
            return False
    return True


def _tokens(text: str) -> tuple[list[tuple], list[str]] | None:
    """A Python text's tokens but its comments and blank-line breaks, each with its place (so code that moved,
    blank lines added or removed, or spacing changed, differs), and its comments; None when it does not
    tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    code = [(t.type, t.start[0]) if t.type == tokenize.NEWLINE else (t.type, t.string, t.start, t.end)
            for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL)]  # a line's end: after its comment
    return code, [t.string for t in tokens if t.type == tokenize.COMMENT]
