"""A definition the edit writes a second time in the scope that has it.

The later definition silently replaces the first (Python, JavaScript, Ruby, Lua, a shell script), the file no
longer builds (Go, Rust), or make warns "overriding recipe" and runs the later one. A real probe (2026-11): asked to
change a default, the bundled model wrote the module's `timeit()` and `repeat()` indented under class Timer, so the
class's own methods were replaced by functions without `self`; the file parsed and the edit passed with exit 0. A
second probe (session 35): "the cover target is missing from .PHONY, add it" fixed `.PHONY` and appended the
file's `cover:` rule again, word for word, exit 0.

A copy the output writes of a definition of the file, word for word, beside the one it keeps, is left out
(`drop_repeats`, noted by the session): it adds nothing, and refusing would lose the asked edit with it. A second
definition that differs is refused (`no_second_definition`): which of the two the user wants cannot be told.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from editllm.editor.align import line_opcodes
from editllm.editor.blocks import is_blank, split_blocks
from editllm.editor.errors import EditError, few
from editllm.editor.languages import PYTHON, language
from editllm.editor.source import python_tree

SHARED_NAME = re.compile(r"overload|register|dispatch|setter|getter|deleter")  # decorators of one name's variants

# Top-level definitions by their first line, where one name defined twice is never meant. Not TypeScript, C, C++,
# Java or C# (overload signatures and prototypes share a name on purpose), and a Rust `fn` under a `#[cfg(...)]`
# is one platform's variant; Go runs every `func init()` of a file.
LINE_DEFS = {
    "javascript": re.compile(r"^(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\("),
    "go": re.compile(r"^func\s+(?:\(\s*\w*\s*\*?(\w+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)\s*[\[(]"),
    "rust": re.compile(r'^(?:pub(?:\([\w:\s]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"\w+"\s+)?'
                       r"fn\s+(\w+)"),
    "bash": re.compile(r"^(?:function\s+([\w:.-]+)|([\w:.-]+)\s*\(\s*\))"),
    "lua": re.compile(r"^(?:local\s+)?function\s+([\w.:]+)\s*\("),
    "ruby": re.compile(r"^def\s+((?:self\.)?[\w?!=]+)"),
}
LINE_DEFS["jsx"] = LINE_DEFS["javascript"]
# TypeScript: a type alias, a class, an enum, or a function with a body (an overload signature ends in `;`)
LINE_DEFS["typescript"] = LINE_DEFS["tsx"] = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:(?:type|class|enum|abstract\s+class|const\s+enum)\s+([A-Za-z_$][\w$]*)"
    r"|(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\b[^;]*\{\s*$)")
# A make rule with a recipe: `target [target...]: [prerequisites]` (not `:=`, `::`, `VAR = x`), then a tab line
MAKE_RULE = re.compile(r"^([^\s:#=][^:#=]*?)\s*:(?![:=])(?![^#]*=)")
MAKE_IF = re.compile(r"^\s*(?:ifeq|ifneq|ifdef|ifndef)\b")
MAKEFILE = re.compile(r"^(?:GNUmakefile|[Mm]akefile)$|\.mk$")


def _python_definitions(tree: ast.AST) -> Counter:
    """How often each function or class is defined directly in a scope, by its dotted place (`Timer.timeit`). A
    property's setter, `@overload` stubs and `register`ed or `dispatch`ed variants share the name on purpose and
    are left out, and so are definitions under an `if` or `try` (one per platform or version)."""
    found: Counter = Counter()

    def visit(body: list[ast.stmt], scope: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if not any(SHARED_NAME.search(ast.unparse(d)) for d in node.decorator_list):
                    found[scope + node.name] += 1
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{scope}{node.name}.")

    visit(getattr(tree, "body", []), "")
    return found


def definitions(path: str, text: str) -> Counter | None:
    """How often each definition is written in the file, by name; None where the file's kind is not judged (or a
    Python file does not parse)."""
    if path.endswith(PYTHON):
        tree = python_tree(text)
        return None if tree is None else _python_definitions(tree)
    lines = text.split("\n")
    found: Counter = Counter()
    if MAKEFILE.search(path.rsplit("/", 1)[-1]):
        depth = 0  # a rule under `ifeq`/`ifdef` is one branch's variant; a pattern rule (`%.o:`) one of several
        for k, line in enumerate(lines[:-1]):
            depth += 1 if MAKE_IF.match(line) else -1 if line.startswith("endif") else 0
            if (m := MAKE_RULE.match(line)) and lines[k + 1].startswith("\t") and not depth and "%" not in m[1]:
                found.update(f"{t}:" for t in m[1].split())
        return found
    pattern = LINE_DEFS.get(language(path))
    if pattern is None:
        return None
    for k, line in enumerate(lines):
        variant = k and lines[k - 1].lstrip().startswith("#[cfg") or line.startswith("func init()")
        if (m := pattern.match(line)) and not variant:
            found[".".join(g for g in m.groups() if g)] += 1
    return found


def no_second_definition(path: str, old_text: str, new_text: str) -> None:
    """Refuse an edit that defines a function, class or make rule again where the file has it."""
    if old_text == new_text:
        return
    before, after = definitions(path, old_text), definitions(path, new_text)
    if before is None or after is None:
        return
    again = [name.rstrip(":") for name, n in after.items() if n > 1 and n > before[name]]
    if again:
        raise EditError(f"{path}: the edit defines {few(again)} a second time in the same scope, so the later "
                        "definition replaces the first; nothing written")


# Import statements on one line, by what each name they bind is bound to: Python's `import a.b as c`, `from m import
# a, b as c`; Rust's `use a::b::C;`, `use a::b::{C, D as E, self};`; JavaScript's and TypeScript's `import D, {a, b
# as c} from "m"`, `import * as ns from "m"`. A glob (`use a::*`, `from m import *`) binds no name we can tell.
PY_IMPORT = re.compile(r"^import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)\s*(?:#.*)?$")
PY_FROM = re.compile(r"^from\s+(\.*[\w.]*)\s+import\s+\(?\s*(\w+(?:\s+as\s+\w+)?(?:\s*,\s*\w+(?:\s+as\s+\w+)?)*)"
                     r"\s*,?\s*\)?\s*(?:#.*)?$")
RUST_USE = re.compile(r"^(?:pub(?:\([\w:\s]+\))?\s+)?use\s+([\w:]+?(?:\s+as\s+\w+)?)(?:::\{([\w\s,]+)\})?\s*;\s*(?://.*)?$")
JS_IMPORT = re.compile(r"""^import\s+(?:type\s+)?(?:([\w$]+)\s*,?\s*)?(?:\{([\w$\s,]*)\}|\*\s+as\s+([\w$]+))?\s*"""
                       r"""from\s+(['"])([^'"]+)\4\s*;?\s*(?://.*)?$""")


def _aliased(item: str, sep: str) -> tuple[str, str]:
    """("bound name", "what it names") for `x` or `x as y`."""
    parts = item.split(sep)
    return parts[-1].strip(), parts[0].strip()


def bindings(kind: str, line: str) -> frozenset[tuple[str, str]] | None:
    """The names a one-line import binds, each with what it is bound to; None for any other line (an indented
    one too: an import inside a function is that function's)."""
    text = line.rstrip("\r\n")
    if kind == "python" and (m := PY_IMPORT.match(text)):
        return frozenset((alias if alias != name else name.split(".")[0], name)
                         for alias, name in (_aliased(x, " as ") for x in m[1].split(",")))
    if kind == "python" and (m := PY_FROM.match(text)):
        return frozenset((alias, f"{m[1]}.{name}") for alias, name in (_aliased(x, " as ") for x in m[2].split(",")
                                                                         if x.strip()))
    if kind == "rust" and (m := RUST_USE.match(text)):
        if m[2] is None:
            return frozenset({_aliased(m[1], " as ")}) if " as " in m[1] else frozenset({(m[1].split("::")[-1], m[1])})
        found = set()
        for item in (x for x in m[2].split(",") if x.strip()):
            alias, name = _aliased(item, " as ")
            full = m[1] if name == "self" else f"{m[1]}::{name}"
            found.add((m[1].split("::")[-1] if alias == "self" else alias, full))
        return frozenset(found)
    if kind in ("javascript", "jsx", "typescript", "tsx") and (m := JS_IMPORT.match(text)) and (m[1] or m[2] or m[3]):
        found = {(m[1], f"{m[5]}:default")} if m[1] else set()
        found |= {(m[3], f"{m[5]}:*")} if m[3] else set()
        for item in (x for x in (m[2] or "").split(",") if x.strip()):
            alias, name = _aliased(item, " as ")
            found.add((alias, f"{m[5]}:{name}"))
        return frozenset(found)
    return None


def drop_reimports(path: str, old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """`new` without the import lines it adds that bind only what its other import lines already bind, each name
    to the same thing, and those lines; `new` itself and [] when there are none. A real probe (session 36): asked
    for a field of type Duration, the model wrote `use std::time::{Duration, Duration};` above the file's `use
    std::time::Duration;`, which rustc refuses (E0252: defined multiple times); in Python or JavaScript it is a
    line of noise. An import that binds a name to something else is no repeat: which one is meant is the user's."""
    kind = language(path)
    added = [j for op, _, _, start, end in line_opcodes(old, new) if op in ("insert", "replace")
             for j in range(start, end)]
    bound = {j: b for j in added if (b := bindings(kind, new[j]))}
    if not bound:
        return new, []
    pool = Counter(x for line in new for x in (bindings(kind, line) or ()))
    drop = []
    for j in added:
        if j in bound and all(pool[x] > 1 for x in bound[j]):
            pool.subtract(bound[j])
            drop.append(j)
    if not drop:
        return new, []
    return [line for j, line in enumerate(new) if j not in drop], [new[j].strip() for j in drop]


def drop_repeats(path: str, old: list[str], new: list[str]) -> tuple[list[str], list[str]]:
    """`new` without the stretches it adds that repeat a definition of the file word for word while keeping the
    original too, and the names of those definitions; `new` itself and [] when there are none."""
    before = definitions(path, "".join(old))
    after = definitions(path, "".join(new)) if before is not None else None
    if after is None or not any(n > 1 and n > before[name] for name, n in after.items()):
        return new, []
    text = "".join(old)
    drop: set[int] = set()
    names: list[str] = []
    for op, _, _, start, end in line_opcodes(old, new):
        if op != "insert":
            continue
        j = start  # each block the output adds here, one by one: a copy may come beside a new definition
        for block in split_blocks(new[start:end], 0):
            lead = j
            while lead > start and is_blank(new[lead - 1]) and lead - 1 not in drop:
                lead -= 1  # the blank lines that set it apart
            size = len(block.lines)
            found = definitions(path, "".join(block.lines)) if size else None
            repeated = [name for name in (found or {}) if after[name] > 1 and after[name] > before[name]]
            if repeated and "".join(block.lines) in text:
                drop.update(range(lead, j + size) if lead < j else range(j, j + size + len(block.blank)))
                names += [name.rstrip(":") for name in repeated]
            j += size + len(block.blank)
    if not drop:
        return new, []
    return [line for j, line in enumerate(new) if j not in drop], names
