"""A file that parsed before the edit must parse after it, in every language editllm can read.

A small model's output can be cut short inside a block, carry a line of its own prose among the code, drop a
closing brace or a comma, or stop half-way through a new function. Written, any of these breaks the user's file
with exit 0, and in a pre-commit hook it lands in a commit. So the edited text is parsed, with the reader the
language's own users trust where one ships with Python or the machine:

- Python with `ast` (the running Python's grammar);
- JavaScript with `node --check` where Node.js is installed (`editor.jssyntax`), and with tree-sitter's grammar
  where Node is not there or cannot read the file (JSX, decorators: a build step's syntax);
- Go, Rust, TypeScript and TSX, C, C++, Java, C#, PHP, Ruby, CSS and shell with tree-sitter's grammars, the
  parsers editors use for these languages (a parser per language written here would misread them, as the line
  scan in `wholefile.still_balanced` shows it must stay modest);
- JSON with `json`, TOML with `tomllib`, YAML with PyYAML's composer (tags such as CloudFormation's `!Ref` are
  read, not resolved).

The rule is relative: a file that did not parse before the edit is not judged (a file mid-edit, a template, a C
header whose macros tree-sitter cannot expand, newer syntax than the reader knows), so a reader's gaps refuse
nothing the user had. A reader that is missing (no Node, a grammar package not installed) skips its check.
"""

from __future__ import annotations

import difflib
import importlib
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from editllm.editor.errors import EditError
from editllm.editor.jssyntax import BEYOND_NODE, JAVASCRIPT, still_parses_js
from editllm.editor.languages import PYTHON, language
from editllm.editor.source import parsed

# language tag (editor.languages) -> (tree-sitter grammar module, its function returning the language, name)
GRAMMARS = {
    "go": ("tree_sitter_go", "language", "Go"),
    "rust": ("tree_sitter_rust", "language", "Rust"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "TypeScript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "TSX"),
    "jsx": ("tree_sitter_javascript", "language", "JavaScript"),
    "javascript": ("tree_sitter_javascript", "language", "JavaScript"),
    "c": ("tree_sitter_c", "language", "C"),
    "cpp": ("tree_sitter_cpp", "language", "C++"),
    "java": ("tree_sitter_java", "language", "Java"),
    "csharp": ("tree_sitter_c_sharp", "language", "C#"),
    "php": ("tree_sitter_php", "language_php", "PHP"),
    "ruby": ("tree_sitter_ruby", "language", "Ruby"),
    "css": ("tree_sitter_css", "language", "CSS"),
    "bash": ("tree_sitter_bash", "language", "shell"),
}


@cache
def _grammar(tag: str) -> Any:
    """tree-sitter's Language for a tag, or None where tree-sitter or the grammar's package is not installed."""
    module, function, _ = GRAMMARS[tag]
    try:
        import tree_sitter

        return tree_sitter.Language(getattr(importlib.import_module(module), function)())
    except (ImportError, AttributeError, ValueError, TypeError):  # not installed, or a grammar of another ABI
        return None


def _faults(tag: str, text: str) -> list[Any] | None:
    """The nodes tree-sitter's grammar for `tag` marks as errors or as missing in `text`, in the file's order (an
    error's own subtree is not searched); None when the grammar is not installed."""
    grammar = _grammar(tag)
    if grammar is None:
        return None
    import tree_sitter

    found: list[Any] = []

    def visit(node: Any) -> None:
        if node.is_error or node.is_missing:
            found.append(node)
            return
        for child in node.children:
            if child.has_error:
                visit(child)

    root = tree_sitter.Parser(grammar).parse(text.encode("utf-8")).root_node
    if root.has_error:
        visit(root)
        found = found or [root]  # has_error without a marked child: the file itself is the place
    elif tag == "go":
        found = _go_commas(root)
    return found


@dataclass(frozen=True)
class Fault:
    """A fault tree-sitter's grammar reads past, found by a rule of the language (`_go_commas`); shaped as
    tree-sitter's nodes are, for `_describe` and `_unexplained`."""

    start_point: tuple[int, int]
    type: str
    text: bytes = b""
    is_missing: bool = True


GO_LISTS = ("argument_list", "literal_value", "parameter_list", "type_parameter_list")


def _go_commas(root: Any) -> list[Fault]:
    """Go's missing commas before a newline, which tree-sitter's grammar reads past: Go ends a line after a name,
    a literal or a closing bracket with a `;`, so the last element of a list that spans lines needs its `,`
    (`foo(\n\ta,\n\tb\n)` does not compile). A generator (session 29) had five such outputs written."""
    found: list[Fault] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in GO_LISTS:
            kids = [kid for kid in node.children if kid.type != "comment"]  # `"SC2034", // why` ends in its `,`
            for element, after in zip(kids, kids[1:], strict=False):
                if element.is_named and after.type in (")", "}") and after.start_point[0] > element.end_point[0]:
                    found.append(Fault((element.end_point[0], element.end_point[1]), ","))
        stack.extend(node.children)
    return sorted(found, key=lambda fault: fault.start_point)


def _describe(node: Any, text: str) -> str:
    """A fault for the message: "line 12: missing `}`", "line 3: unexpected `Here is the`"."""
    row = node.start_point[0]
    where = "at the end of the file" if row >= len(text.splitlines()) else f"line {row + 1}"
    if node.is_missing:
        return f"{where}: missing `{node.type}`"
    got = node.text.decode("utf-8", "replace").strip().splitlines()
    return f"{where}: unexpected `{got[0][:40]}`" if got else f"{where}: a syntax error"


def tree_fault(tag: str, text: str) -> str | None:
    """Where and why tree-sitter's grammar for `tag` cannot read `text`; "" when it reads it; None when the grammar
    is not installed."""
    faults = _faults(tag, text)
    return None if faults is None else _describe(faults[0], text) if faults else ""


def _shape(line: str) -> str:
    """A line with its names and numbers made one: `local int f(FILE *in)` and `local int g(FILE *out)` match."""
    return re.sub(r"\w+", "w", line.strip())


def _unexplained(old_text: str, new_text: str, old_faults: list[Any], new_faults: list[Any]) -> list[Any]:
    """The faults of the edited text that the file's own faults do not explain. A C file whose macros the grammar
    cannot expand (`BZ_EXTERN int BZ_API(f) (`) has faults before any edit; one of the edited text is the file's
    own when it sits on a line the edit kept that was a fault before, on a line rewritten from lines that held one
    (a declaration with a macro put on one line), or on a line of the same shape as one of them (the model wrote
    another function like one, `local int f(FILE *in)` with zlib's `local` macro, or moved one)."""
    old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
    old_rows = {node.start_point[0] for node in old_faults}
    own = {_shape(old_lines[row]) for row in old_rows if row < len(old_lines)}
    explained: set[int] = set()  # rows of the new text whose faults the old text explains
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if op == "equal":
            explained.update(j1 + k for k in range(i2 - i1) if i1 + k in old_rows)
        elif old_rows.intersection(range(i1, i2)):
            explained.update(range(j1, j2))
    return [node for node in new_faults if node.start_point[0] not in explained
            and (node.start_point[0] >= len(new_lines) or _shape(new_lines[node.start_point[0]]) not in own)]


def _yaml_fault(text: str) -> str | None:
    """PyYAML's complaint about `text`, read as a stream of documents; "" when it reads; None without PyYAML."""
    try:
        import yaml
    except ImportError:
        return None
    try:
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"{where}{getattr(exc, 'problem', None) or exc}"
    return ""


def _data_fault(tag: str, text: str) -> str | None:
    """The reader's complaint for a data file (JSON, TOML, YAML); "" when it reads."""
    if tag == "yaml":
        return _yaml_fault(text)
    try:
        json.loads(text) if tag == "json" else tomllib.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return ""


DATA = {"json": "JSON", "toml": "TOML", "yaml": "YAML"}


def _python(path: str, old_text: str, new_text: str) -> None:
    """Python with `ast`: a result cut short inside a definition, a line of the model's prose among the code, or
    half a statement merged in parse no longer. The message names this Python: newer syntax fails in an older
    one."""
    if isinstance(parsed(old_text), Exception):
        return
    exc = parsed(new_text)
    if isinstance(exc, SyntaxError | ValueError):
        where = f"line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
        version = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        why = f"{where}{getattr(exc, 'msg', exc)}"
        raise EditError(f"{path}: the edited file is no longer valid {version} ({why}); nothing written") from None


def still_parses(path: str, old_text: str, new_text: str) -> None:
    """Refuse an edit that turns a file its language's reader reads into one it does not (see the module's
    docstring for the readers); a file the reader did not read before, or a reader that is not installed, refuses
    nothing."""
    if old_text == new_text:
        return
    if path.endswith(PYTHON):
        _python(path, old_text, new_text)
        return
    tag = language(path)
    if path.endswith(JAVASCRIPT) and not BEYOND_NODE.search(new_text) and still_parses_js(path, old_text, new_text):
        return  # Node read both texts (and raised if only the old one parses)
    if tag in DATA:
        fault = _data_fault(tag, new_text)
        if fault and _data_fault(tag, old_text) == "":
            raise EditError(f"{path}: the edited file no longer parses as {DATA[tag]} ({fault}); nothing written")
    elif tag in GRAMMARS:
        _still_reads(path, tag, old_text, new_text)


def _still_reads(path: str, tag: str, old_text: str, new_text: str) -> None:
    """The tree-sitter part of `still_parses`. A `.h` file is C or C++: the grammar that reads the file as it was
    judges the edit. A file that no grammar reads clean (macros) is judged by the faults the edit adds
    (`_unexplained`)."""
    best: tuple[int, str, list[Any]] | None = None
    for candidate in ("c", "cpp") if tag == "c" and path.endswith(".h") else (tag,):
        new_faults = _faults(candidate, new_text)
        if not new_faults:
            return  # it reads (or the grammar is not installed)
        old_faults = _faults(candidate, old_text) or []
        added = _unexplained(old_text, new_text, old_faults, new_faults) if old_faults else new_faults
        if best is None or len(old_faults) < best[0]:
            best = (len(old_faults), candidate, added)
    if best is not None and best[2]:
        raise EditError(f"{path}: the edited file no longer parses as {GRAMMARS[best[1]][2]} "
                        f"({_describe(best[2][0], new_text)}, by tree-sitter); nothing written")
