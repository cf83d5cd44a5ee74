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
