"""Across the files of one edit: a name one file's edit removes that another file of the edit still imports from it.

Each file is edited alone, with the whole instruction, so nothing checks the files against each other. A real-model
multi-file probe (session 33) asked to move `path_key` from filelock's `_registry.py` into `_singleton.py` and fix
the import: the model deleted it from `_registry.py`, never defined it in `_singleton.py`, whose import still pulled
it from `_registry`; exit 0 and no word, and the module fails at import. The other files' imports say where a name
comes from, so this is read from them: Python's `from ... import` (parsed), JavaScript and TypeScript's
`import { ... } from "..."` and `const { ... } = require("...")` with a relative path. A note, not a refusal: the
import may be meant to go in a later commit, and files outside the edit are not read.
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import PurePosixPath

from editllm.editor.blocks import defines, imported, split_blocks
from editllm.editor.languages import PYTHON
from editllm.editor.source import split_lines

JS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
# `import { a, b as c } from "./x"`, `import type { T } from "./x"` (over lines too); `const { a } = require("./x")`
JS_IMPORT = re.compile(r"""\bimport\s+(?:type\s+)?\{([^}]*)\}\s*from\s*["'](\.{1,2}/[^"']+)["']""")
JS_REQUIRE = re.compile(r"""\b(?:const|let|var)\s*\{([^}]*)\}\s*=\s*require\(\s*["'](\.{1,2}/[^"']+)["']\s*\)""")


# `export const a = 1`, `export async function b()`, `export { c, d as e }`: names a JavaScript module exports
JS_EXPORT = re.compile(r"\bexport\s+(?:default\s+)?(?:async\s+)?(?:const|let|var|function\*?|class)\s+"
                       r"([A-Za-z_$][\w$]*)")
JS_EXPORT_LIST = re.compile(r"\bexport\s*\{([^}]*)\}")


def defined(lines: list[str]) -> set[str]:
    """The names a file's lines define at its top level (functions, classes, and what `blocks` names)."""
    return {b.name for b in split_blocks(lines, 0) if b.name}


def provided(lines: list[str], imports: bool = True) -> set[str]:
    """The names a file still offers to its importers: its definitions, its top-level assignments and imports (an
    alias `path_key = _key`, a re-export `from ._paths import path_key`) and JavaScript's exports. A review (session
    34) had a function turned into an alias or an `export const` noted as removed. `imports=False`: what the file
    defines itself (the names it imports from another file of the edit are that file's)."""
    blocks = [b for b in split_blocks(lines, 0) if imports or not imported(b)]
    text = "".join(lines)
    listed = {part.split(" as ")[-1].strip() for m in JS_EXPORT_LIST.finditer(text) for part in m[1].split(",")}
    return ({b.name for b in blocks if b.name} | {n for b in blocks if not b.name for n in defines(b)}
            | set(JS_EXPORT.findall(text)) | {n for n in listed if n})


def python_imports(text: str) -> list[tuple[str, int, str]]:
    """(module as written, with its leading dots; line; imported name) for each name of each `from ... import`."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [("." * node.level + (node.module or ""), alias.lineno, alias.name)
            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names]


def js_imports(text: str) -> list[tuple[str, int, str]]:
    """(relative path as written, line, imported name) for each name of each named import or destructured require."""
    out = []
    for pattern in (JS_IMPORT, JS_REQUIRE):
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for part in m[1].split(","):
                name = re.split(r"\s+as\s+|\s*:\s*", part.strip().removeprefix("type "))[0].strip()
                if name.isidentifier():
                    out.append((m[2], line, name))
    return out


def imports_from(importer: str, module: str, target: str) -> bool:
    """Whether `module`, as file `importer` writes it, is file `target` (paths as the diff shows them): a relative
    module resolved from the importer's folder (`from ._registry import`, `"./registry.js"`, `"../lib"`), an absolute
    Python one by the target path's last parts (`from filelock._registry import`); a package's `__init__.py` and a
    folder's `index.js` by the package or folder. Folders count: a review (session 34) had `pkg_a/util.py` taken for
    the `util` that `pkg_b/views.py` imports as `.util`."""
    folder = PurePosixPath(posixpath.normpath(importer)).parent
    whole = PurePosixPath(posixpath.normpath(target))
    parts = whole.with_suffix("").parts
    if importer.endswith(PYTHON):
        level = len(module) - len(module.lstrip("."))
        named = tuple(p for p in module.lstrip(".").split(".") if p)
        if level:
            base = folder.parts if folder.parts != (".",) else ()
            if level - 1 > len(base):
                return False
            wanted = base[:len(base) - (level - 1)] + named
            return parts in (wanted, wanted + ("__init__",))
        return any(parts[len(parts) - len(w):] == w for w in (named, named + ("__init__",)) if len(w) <= len(parts))
    if not module.startswith("."):
        return False
    at = PurePosixPath(posixpath.normpath(posixpath.join(str(folder), module)))
    bare = at.with_suffix("") if at.suffix in JS else at
    return parts in (bare.parts, (bare / "index").parts)


def still_imported(edits: list[tuple[str, list[str], str]]) -> list[tuple[str, int, str, str]]:
    """(importing file, its line, name, file whose edit removed it) for each name a file's edit removes that another
    file of the same edit still imports from it and does not define itself. `edits`: (path, the original's lines,
    the new text)."""
    new_lines = {path: split_lines(new) for path, _, new in edits}
    gone = {path: defined(old) - provided(new_lines[path]) for path, old, _ in edits}
    out = []
    for path, _old, new in edits:
        if path.endswith(PYTHON):
            found = python_imports(new)
        elif path.endswith(JS):
            found = js_imports(new)
        else:
            continue
        own = provided(new_lines[path], imports=False)
        for module, line, name in found:
            for target, names in gone.items():
                if target != path and name in names and name not in own and imports_from(path, module, target):
                    out.append((path, line, name, target))
    return out


def still_imported_note(path: str, line: int, name: str, target: str) -> str:
    """The note for one of `still_imported`'s findings."""
    return f"{path}: note: line {line} imports {name} from {target}, whose edit removes it"
