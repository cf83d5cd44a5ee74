"""A file that parsed before the edit must parse after it, in every language editllm can read.

A small model's output can be cut short inside a block, carry a line of its own prose among the code, drop a
closing brace or a comma, or stop half-way through a new function. Written, any of these breaks the user's file
with exit 0, and in a pre-commit hook it lands in a commit. So the edited text is parsed, with the reader the
language's own users trust where one ships with Python or the machine:

- Python with `ast` (the running Python's grammar);
- JavaScript with `node --check` where Node.js is installed (as a module or a script), and with tree-sitter's grammar
  where Node is not there or cannot read the file (JSX, decorators: a build step's syntax);
- Go, Rust, TypeScript and TSX, C, C++, Java, C#, PHP, Ruby, CSS and shell with tree-sitter's grammars, the
  parsers editors use for these languages (a parser per language written here would misread them, as the line
  scan in `wholefile.still_balanced` shows it must stay modest);
- JSON with `json`, TOML with `tomllib`, YAML with PyYAML's composer (tags such as CloudFormation's `!Ref` are
  read, not resolved).

The rule is relative: a file that did not parse before the edit is not judged (a file mid-edit, a template), and
one whose macros a grammar cannot expand is judged by the faults the edit adds. Grammars lag their languages, so a
tree-sitter fault refuses only on evidence a newer grammar would not change (a closer it had to insert, brackets
no longer balanced, a line of prose, a string left open, punctuation lost); where the language's own checker is
installed (`bash -n`, `rustfmt`, `gofmt`), it decides. A reader that is missing skips its check.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from editllm.editor.align import line_opcodes
from editllm.editor.errors import EditError
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
    for op, i1, i2, j1, j2 in line_opcodes(old_lines, new_lines):
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
        for _ in yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml: 10x
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        return f"{where}{getattr(exc, 'problem', None) or exc}"
    return ""


# JSON with comments by its name: VS Code's settings, TypeScript's and jsconfig's, dev containers (a review, session
# 29: a comment added to a comment-free tsconfig.json was refused)
JSONC_NAME = re.compile(r"(?:^|/)(?:(?:ts|js)config[\w.-]*|devcontainer|\.devcontainer/[^/]+|\.vscode/[^/]+|"
                        r"\.eslintrc|\.babelrc|deno|biome|\.swcrc)\.json$")
JSON_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.S)


def jsonc_to_json(text: str) -> str:
    """JSON with comments made JSON: comments and trailing commas out, strings kept as they are."""
    return JSON_TOKEN.sub(lambda m: m[0] if m[0].startswith('"') else "", text)


def _data_fault(tag: str, text: str, path: str = "") -> str | None:
    """The reader's complaint for a data file (JSON, TOML, YAML); "" when it reads."""
    if tag == "yaml":
        return _yaml_fault(re.sub(r"[ \t]*\t(?=#)", " ", text))  # a tab before a comment: YAML's, not PyYAML's
    if tag == "json" and JSONC_NAME.search(path):
        text = jsonc_to_json(text)
    try:
        json.loads(text) if tag == "json" else tomllib.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return ""


DATA = {"json": "JSON", "toml": "TOML", "yaml": "YAML"}


TIMEOUT_S = 20  # a checker that does not answer in time is skipped, not failed


def _run(command: list[str], text: str) -> str | None:
    """A syntax checker run on `text` (stdin): "" when it reads it, its complaint (stderr) when not, None when it is
    not installed or gives no answer in time. Node and the languages' own checkers (`AUTHORITIES`) run through it."""
    program = shutil.which(command[0])
    if program is None:
        return None
    try:
        done = subprocess.run([program, *command[1:]], input=text, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return "" if done.returncode == 0 else done.stderr or "a syntax error"


# Node's part. A real-model probe (session 28) had two "convert this file to ES modules" edits written with exit 0
# that no longer parsed (an unbalanced `)` in an import line, an `await` in a function that was not `async`).
JAVASCRIPT = (".js", ".mjs", ".cjs")
# What a build step, not Node, reads in a .js file: JSX (`<App />`, `</div>`) and decorators (a review, session 28:
# the first JSX added to a React hook file was refused)
BEYOND_NODE = re.compile(r"</[A-Za-z]|<[A-Za-z][\w.]*[^<>\n]*/>|(?:\breturn|=>|[=(,?:])\s*<[A-Za-z]|^\s*@[A-Za-z_$]",
                         re.M)


def _check(text: str, module: bool) -> str | None:
    """Node's complaint about `text` as an ES module (`module`) or a CommonJS script: "" when it parses, None when
    Node cannot say (not installed, no answer in time)."""
    kind = "--input-type=module" if module else "--input-type=commonjs"
    return _run(["node", "--check", kind, "-"], text)


def _reason(err: str) -> str:
    """Node's one-line reason (`SyntaxError: Unexpected token ';'`) and the line it names, for the message."""
    where = next((line.split(":")[-1] for line in err.splitlines() if line.startswith("[stdin]:")), "")
    why = next((line.strip() for line in err.splitlines() if "Error:" in line), "a syntax error")
    return f"line {where}: {why}" if where.isdigit() else why


def _written_as_module(text: str) -> bool:
    return re.search(r"^\s*(?:import\s|import\{|export\s)", text, re.M) is not None


def _likely_first(text: str, kinds: list[bool]) -> list[bool]:
    """The kinds to try, the one the text is written as first: Node runs once a text where it parses, not twice
    (four runs an edit of an ES module were 0.22 s of a 0.26 s check, session 30)."""
    return sorted(kinds, key=lambda module: module != _written_as_module(text))


def still_parses_js(path: str, old_text: str, new_text: str) -> bool:
    """Refuse an edit that turns a JavaScript file Node parses (as a module or a script) into one it parses as
    neither. The two kinds are tried so that a file converted to ES modules, as asked, passes; Node runs at most once
    per text and kind, and its complaint about the edited text is the message. True when Node judged the edit
    (and passed it), False when it could not (tree-sitter's grammar is asked then)."""
    if not path.endswith(JAVASCRIPT) or BEYOND_NODE.search(new_text):
        return False
    kinds = [True] if path.endswith(".mjs") else [False] if path.endswith(".cjs") else [False, True]
    if not any(_check(old_text, module) == "" for module in _likely_first(old_text, kinds)):
        return False  # no Node, or the file did not parse to begin with
    errors: dict[bool, str | None] = {}
    for module in _likely_first(new_text, kinds):
        errors[module] = _check(new_text, module)
        if errors[module] == "":
            return True  # it parses as one of them
    if None in errors.values():
        return False  # Node could not say
    module = _written_as_module(new_text) if len(kinds) > 1 else kinds[0]  # the error that matters
    raise EditError(f"{path}: the edited file no longer parses as JavaScript ({_reason(errors[module])}, "
                    "by node --check); nothing written")


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
    if path.endswith(COMPONENTS) and (unclosed := _unclosed_blocks(new_text)) and not _unclosed_blocks(old_text):
        raise EditError(f"{path}: the edited file leaves its <{unclosed}> block unclosed (a closing tag lost?); "
                        "nothing written")
    tag = language(path)
    if still_parses_js(path, old_text, new_text):
        return  # Node read both texts (and raised if only the old one parses)
    if tag in DATA:
        fault = _data_fault(tag, new_text, path)
        if fault and _data_fault(tag, old_text, path) == "":
            raise EditError(f"{path}: the edited file no longer parses as {DATA[tag]} ({fault}); nothing written")
    elif tag in GRAMMARS:
        _still_reads(path, tag, old_text, new_text)


def _still_reads(path: str, tag: str, old_text: str, new_text: str) -> None:
    """The tree-sitter part of `still_parses`. A `.h` file is C or C++: the grammar that reads the file as it was
    judges the edit. A file that no grammar reads clean (macros) is judged by the faults the edit adds
    (`_unexplained`). Grammars lag their languages (a review, session 29: TypeScript's `static accessor`, CSS's
    `@container` and `@media (width >= 600px)`, C23's `auto`, bash's extglob all read as faults), so a fault
    refuses only on evidence a newer grammar would not change (`_strong`), unless the language's own checker is
    installed (`AUTHORITIES`): then it decides."""
    best: tuple[int, str, list[Any]] | None = None
    for candidate in ("c", "cpp") if tag == "c" and path.endswith(".h") else (tag,):
        new_faults = _faults(candidate, new_text)
        if not new_faults:
            return  # it reads (or the grammar is not installed)
        old_faults = _faults(candidate, old_text) or []
        added = _unexplained(old_text, new_text, old_faults, new_faults) if old_faults else new_faults
        if best is None or len(old_faults) < best[0]:
            best = (len(old_faults), candidate, added)
    if best is None or not best[2]:
        return
    verdict = _authority(best[1], old_text, new_text)
    if verdict == "":
        return  # the language's own checker reads it
    name = GRAMMARS[best[1]][2]
    if verdict is not None:
        raise EditError(f"{path}: the edited file no longer parses as {name} ({verdict}); nothing written")
    if _broken_throughout(best[1], old_text, new_text):
        strong = best[2][0]
    else:
        strong = next((fault for fault in best[2] if _strong(fault, best[1], old_text, new_text)), None)
    if strong is not None:
        raise EditError(f"{path}: the edited file no longer parses as {name} "
                        f"({_describe(strong, new_text)}, by tree-sitter); nothing written")


# Single-file components: `<template>`, `<script>` and `<style>` blocks at the margin (a probe, session 40: a Vue
# file's `</style>` lost with a rule written after it, exit 0, no word; no grammar reads the file)
COMPONENTS = (".vue", ".svelte")
BLOCK_TAG = re.compile(r"^<(template|script|style)\b[^>]*>|</(template|script|style)>\s*$", re.M)


def _unclosed_blocks(text: str) -> str:
    """The first top-level block of a single-file component opened at the margin and never closed, else ""."""
    open_: list[str] = []
    for m in BLOCK_TAG.finditer(text):
        if m.group(1):
            line_end = text.find("\n", m.end())
            rest = text[m.end():line_end if line_end >= 0 else len(text)]
            if f"</{m.group(1)}>" not in rest:  # `<style>a{}</style>` on one line opens nothing
                open_.append(m.group(1))
        elif open_ and open_[-1] == m.group(2):
            open_.pop()
    return open_[0] if open_ else ""


def faults_added(path: str, old_text: str, new_text: str) -> str | None:
    """What tree-sitter finds wrong in an edited file it read clean before, where `still_parses` let the edit pass
    (a fault on a line the edit wrote may be syntax newer than the grammar): said as a note, not a refusal. A probe
    (session 40) had a TSX file gain an invalid `onSelect?: ...` in a destructuring pattern, without a word. None
    when the old text had faults, the new one has none, or no grammar reads the file."""
    tag = language(path)
    if old_text == new_text or path.endswith(PYTHON) or tag not in GRAMMARS or tag in DATA:
        return None
    for candidate in ("c", "cpp") if tag == "c" and path.endswith(".h") else (tag,):
        old_faults = _faults(candidate, old_text)
        if old_faults is None or old_faults:
            continue  # not installed, or the file did not read clean (macros): judged by `still_parses` alone
        new_faults = _faults(candidate, new_text)
        if not new_faults or still_parses_js(path, old_text, new_text):
            return None  # Node, asked only then (it runs as a process), read the JavaScript it judges
        return f"{GRAMMARS[candidate][2]} ({_describe(new_faults[0], new_text)})"
    return None


# The evidence of a broken text that no newer grammar explains away (`_strong`, `_broken_throughout`): a closer or
# separator tree-sitter had to insert; a line of the model's prose; a string left open within NEAR lines above
CLOSERS = {"}", ")", "]", ";", ",", '"', "end", "fi", "done", "esac", "then", "do"}
# "Here's the updated code:", "Sure! Here is the file with the change applied:"
PROSE_LINE = re.compile(r"^\s*[A-Z][A-Za-z']*(?:[,!.:]?\s+[A-Za-z][A-Za-z']*){3,}[.:!]?\s*$")
NEAR = 3
SHELL_PAIRS = re.compile(r"(?<![\w$-])(?:(if|case|do)|(fi|esac|done))(?![\w-])")  # shell's `if` ... `fi`


def _balance(text: str, tag: str) -> int:
    """Opening brackets less closing ones in `text`, outside what reads as a string or comment on its line; in
    shell also `if`, `case`, `do` less `fi`, `esac`, `done`."""
    if tag == "bash":
        code = re.sub(r"(?m)(?:^|\s)#.*$|'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"", "", text)
        pairs = SHELL_PAIRS.findall(code)
        return sum(1 if opener else -1 for opener, _ in pairs) + sum(map(code.count, "([{")) - \
            sum(map(code.count, ")]}"))
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`\n]*`|//[^\n]*|/\*.*?\*/', "", text,
                  flags=re.S)
    return sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))


def _broken_throughout(tag: str, old_text: str, new_text: str) -> bool:
    """Evidence that makes every fault a real one: the brackets (or shell's `if`/`fi` pairs) no longer balance as
    they did, or a line the edit wrote is prose (tree-sitter may read a CSS rule's worth past one)."""
    if _balance(new_text, tag) != _balance(old_text, tag):
        return True
    had = set(old_text.splitlines())
    return any(PROSE_LINE.match(line) for line in new_text.splitlines() if line not in had)


def _strong(fault: Any, tag: str, old_text: str, new_text: str) -> bool:
    """Whether a fault shows the text broken whatever the grammar's age (besides `_broken_throughout`): tree-sitter
    inserted a closer or a separator (`missing }`, `missing ;`), a line the edit wrote at the fault or just above it
    leaves a string open or lost punctuation it had, or no line the edit wrote is near it. A fault on or just below
    a balanced line of code the edit wrote may be syntax newer than the grammar."""
    if fault.is_missing and fault.type in CLOSERS:
        return True
    lines, row = new_text.splitlines(), fault.start_point[0]
    had = set(old_text.splitlines())
    # the lines the edit wrote at the fault or just above it, where tree-sitter reads on past a string left open
    near = [lines[k] for k in range(max(0, row - NEAR), min(len(lines), row + 2)) if lines[k] not in had]
    if not near:
        return True  # no line the edit wrote is near: lines the grammar read before fault now (a merge gone wrong)
    return any(_open_string(line, tag) or _lost_punctuation(line, old_text) for line in near)


def _open_string(line: str, tag: str) -> bool:
    """Whether the line leaves a string open: an odd number of unescaped quotes of one kind (not `'` in Rust,
    whose lifetimes are written `'a`, nor in shell, whose `'` strings may span lines)."""
    code = re.sub(r"\\.", "", line)
    quotes = '"`' if tag in ("rust", "bash") else "\"'`"
    return any(code.count(quote) % 2 for quote in quotes)


def _lost_punctuation(line: str, old_text: str) -> bool:
    """Whether `line` is a line of the old text less some punctuation (`Py_INCREF(in);` written without its `;`,
    `"foo": "bar",` without its `,`): an edit that breaks what it did not mean to change."""
    words = re.sub(r"\W", "", line)
    if not words:
        return False
    stripped = line.strip()
    return any(re.sub(r"\W", "", old) == words and len(old.strip()) > len(stripped)
               for old in old_text.splitlines() if old.strip() != stripped)


# A language's own syntax check, where installed, reading the text on stdin. Rust's edition 2021: 2024 reserves
# `gen`, which crates of 2021 use as a name (a generator, session 29: the file as it was then did not read)
AUTHORITIES = {"bash": ["bash", "-O", "extglob", "-n"], "rust": ["rustfmt", "--edition", "2021", "--emit", "stdout"],
               "go": ["gofmt", "-e"]}


def _authority_says(tag: str, text: str) -> str | None:
    """The language's own checker on `text`: "" when it reads it, its first complaint when not, None when it is
    not installed or gives no answer in time."""
    command = AUTHORITIES.get(tag)
    said = None if command is None else _run(command, text)
    if not said:
        return said
    complaint = next((line.strip() for line in said.splitlines() if line.strip()), "a syntax error")
    return f"{complaint[:120]}, by {command[0]}"


def _authority(tag: str, old_text: str, new_text: str) -> str | None:
    """The checker's verdict on the edit ("" reads, a complaint, None: not installed, or it did not read the file
    before either, where tree-sitter's evidence decides)."""
    after = _authority_says(tag, new_text)
    if after in (None, ""):
        return after
    return after if _authority_says(tag, old_text) == "" else None
