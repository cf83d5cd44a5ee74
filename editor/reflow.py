"""Layout the instruction did not ask for is put back: comments and prose re-wrapped, trailing spaces dropped.

Small models re-wrap a comment they copy (the same words, other line breaks) or drop a line's trailing spaces.
The change is no edit, but it is a hunk in the diff, and `editllm check` in a pre-commit hook then fails on a
file that already does what the rule says ("make sure CHUNK is 16384": rc 1 for a re-wrapped comment above
it). A stretch that changed is put back to the original when its words are the same and every line of it,
before and after, is a comment, a docstring or prose (or differs only in trailing whitespace), unless the
instruction asks for layout ("reflow", "wrap", "format", "indent", ...). Code's own whitespace is never
touched: indentation is meaning in Python and YAML.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize

from editllm.editor.elision import PROSE
from editllm.editor.prosefocus import in_block

# Languages whose comments are `/* ... */` and `//`, and those whose comments start with `#`.
C_STYLE = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".java", ".js", ".jsx", ".mjs", ".cjs", ".ts",
           ".tsx", ".cs", ".go", ".rs", ".kt", ".kts", ".swift", ".scala", ".php", ".css", ".scss", ".less", ".dart",
           ".m", ".mm", ".groovy")
HASH_STYLE = (".py", ".pyi", ".pyw", ".sh", ".bash", ".zsh", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".cfg",
              ".ini", ".conf", ".mk", ".cmake", ".tf", ".nix")
LAYOUT = re.compile(r"\b(?:re-?flow\w*|re-?wrap\w*|wrap\w*|unwrap\w*|format\w*|whitespace|white space|indent\w*|"
                    r"dedent\w*|"
                    r"trailing|spaces?|tabs?|line length|long lines|short(?:er)? lines|one line|single line|join\w*|"
                    r"columns?|width|black|prettier|tidy|clean\w* up|pep ?8|lint\w*|layout|line breaks?)\b", re.I)


def keep_layout(path: str, old: list[str], new: list[str], instruction: str) -> list[str]:
    """`new` with each changed stretch that only re-lays out comments, docstrings or prose put back as in `old`
    (LF lines both); `new` itself when nothing is put back or the instruction asks for layout."""
    if LAYOUT.search(instruction) or old == new:
        return new
    old_notes, new_notes = commentary(path, old), commentary(path, new)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "replace":
            out += new[j1:j2]
            continue
        # the comment lines this stretch starts with and those it ends with (a comment re-wrapped right above the
        # line that really changed is one stretch with it), each put back when only its layout changed
        pa, pb = run(range(i1, i2), old_notes), run(range(j1, j2), new_notes)
        head = same_words(old[i1:i1 + pa], new[j1:j1 + pb]) and pa + pb > 0
        i, j = (i1 + pa, j1 + pb) if head else (i1, j1)
        sa, sb = run(range(i2 - 1, i - 1, -1), old_notes), run(range(j2 - 1, j - 1, -1), new_notes)
        tail = same_words(old[i2 - sa:i2], new[j2 - sb:j2]) and sa + sb > 0
        k, m = (i2 - sa, j2 - sb) if tail else (i2, j2)
        a, b = old[i:k], new[j:m]
        spaced = len(a) == len(b) and all(x.rstrip() == y.rstrip() for x, y in zip(a, b, strict=True))
        out += (old[i1:i] if head else new[j1:j]) + (a if spaced else b) + (old[k:i2] if tail else new[m:j2])
    return out


def run(indices: range, notes: set[int]) -> int:
    """How many of `indices`, from the first on, are comment lines."""
    count = 0
    for k in indices:
        if k not in notes:
            break
        count += 1
    return count


def same_words(a: list[str], b: list[str]) -> bool:
    return "".join(a).split() == "".join(b).split()


def commentary(path: str, lines: list[str]) -> set[int]:
    """Indices of the lines that hold only comment, docstring or prose text (or nothing)."""
    name = path.lower()
    if name.endswith(PROSE):
        return {k for k, inside in enumerate(in_block(lines)) if not inside}
    if name.endswith(C_STYLE):
        return c_comments(lines)
    if name.endswith(HASH_STYLE) or name.rsplit("/", 1)[-1] in ("Makefile", "Dockerfile", "CMakeLists.txt"):
        notes = {k for k, line in enumerate(lines) if not line.strip() or line.lstrip().startswith("#")}
        return notes | (docstrings(lines) if name.endswith((".py", ".pyi", ".pyw")) else set())
    return set()


def c_comments(lines: list[str]) -> set[int]:
    """Lines of C-family text that are blank or all comment (`// ...`, inside or around `/* ... */`), by one
    scan that knows string and character literals."""
    notes: set[int] = set()
    block = False
    for k, line in enumerate(lines):
        code = False  # a character of the line that is not comment
        i, quote = 0, ""
        while i < len(line):
            ch, pair = line[i], line[i:i + 2]
            if block:
                if pair == "*/":
                    block, i = False, i + 2
                    continue
            elif quote:
                code = True
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif pair == "/*":
                block, i = True, i + 2
                continue
            elif pair == "//":
                break
            elif ch in "\"'`":
                quote, code = ch, True
            elif not ch.isspace():
                code = True
            i += 1
        if not code:
            notes.add(k)
    return notes


def docstrings(lines: list[str]) -> set[int]:
    """Lines of a Python file inside a string that is a statement of its own (a docstring); none when the
    text does not tokenize."""
    notes: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return notes
    before = tokenize.NEWLINE
    for tok in tokens:
        if tok.type == tokenize.STRING and before in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
            notes |= set(range(tok.start[0] - 1, tok.end[0]))
        if tok.type not in (tokenize.COMMENT,):
            before = tok.type
    return notes
