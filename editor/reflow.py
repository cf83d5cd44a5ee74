"""A comment the model re-wrapped and nobody asked it to is put back as it was.

Small models re-wrap a comment they copy (the same words, other line breaks). The change is no edit, but it is
a hunk in the diff, and `editllm check` in a pre-commit hook then fails on a file that already does what the
rule says ("make sure CHUNK is 16384": rc 1 for a re-wrapped comment above it). A changed stretch is put back
when, before and after, it is only lines of one comment (a `/* ... */` block, a Python docstring, a Markdown or
plain-text paragraph), with the same words in the same order, the same indentation and no blank line, and the
instruction says nothing of layout ("reflow", "wrap", "format", "split", "one line", "line length", ...; a
"Copyright line" is no layout). Everything else stays as the model wrote it: code and its whitespace
(indentation is meaning in Python and YAML), strings, `//` and `#`
comments (their markers are words: turning `//` into `/* */` is an edit), headings, lists, quotes and tables.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize

from editllm.editor.prompt import language
from editllm.editor.prosefocus import in_block
from editllm.editor.wholefile import PYTHON

# Languages whose block comments are `/* ... */`.
C_STYLE = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".java", ".js", ".jsx", ".mjs", ".cjs", ".ts",
           ".tsx", ".cs", ".go", ".rs", ".kt", ".kts", ".swift", ".scala", ".php", ".css", ".scss", ".less", ".dart",
           ".m", ".mm", ".groovy")
MARKDOWN = (".md", ".markdown", ".mdx")
LAYOUT = re.compile(r"\b(?:re-?flow\w*|re-?wrap\w*|wrap\w*|unwrap\w*|format\w*|whitespace|white space|indent\w*|"
                    r"dedent\w*|spaces?|tabs?|multi-?line|columns?|width|chars?|characters|black|prettier|"
                    # "line" only as layout: "one line", "long lines", "line length", not "a Copyright line"
                    r"(?:long|short|one|single|separate|own|new|blank|empty|more|fewer|same|per|each|\d+)\s+lines?|"
                    r"lines?\s+(?:length|breaks?|width|limit|wrap\w*)|newlines?|"
                    r"tidy|clean\w* up|pep ?\d+|lint\w*|layout|split\w*|break\w*|join\w*|shorten\w*|paragraphs?|"
                    r"summary|long\w*|length)\b", re.I)
STRUCTURE = re.compile(r"^\s*(?:#|>|\||[-*+]\s|\d+[.)]\s|```|~~~|---|===|<)")  # Markdown that is not a paragraph


def keep_layout(path: str, old: list[str], new: list[str], instruction: str) -> list[str]:
    """`new` with each changed stretch that only re-wraps one comment put back as in `old` (LF lines both);
    `new` itself when nothing is put back or the instruction speaks of layout."""
    if LAYOUT.search(instruction) or old == new:
        return new
    old_notes, new_notes = commentary(path, old), commentary(path, new)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
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
COSMETIC = re.compile(r"\b(?:comments?|commented|quot\w*|triple|typos?|spell\w*|todo|fixme|style|spacing|blank)\b",
                      re.I)  # not "docstring": a docstring's words are in the syntax tree


def cosmetic_only(path: str, old: str, new: str, instruction: str) -> bool:
    """Whether `new` differs from `old` only in what the rule cannot be about: a Python file whose syntax tree is
    the same and whose comments gained no word (quotes, line breaks, a comment reworded or cut; a licence header
    added is words the rule may ask for), or prose with the same words in the same order (line breaks), where the
    instruction speaks of none of that. A real probe: `check` exited 1 on files that met their rules, for a
    comment reworded ("on self and on subdirs"), a docstring's quotes tripled, a LICENSE re-wrapped."""
    if old == new or LAYOUT.search(instruction) or COSMETIC.search(instruction):
        return False
    if path.endswith(PYTHON):
        import ast

        try:
            same = ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        return same and _comment_words(new) <= _comment_words(old)
    return language(path) in ("markdown", "text") and old.split() == new.split()


def _comment_words(text: str) -> set[str]:
    """The words of a Python text's comments (all of its words where it does not tokenize)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return {word for t in tokens if t.type == tokenize.COMMENT for word in t.string.lstrip("#").split()}
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(text.split())
