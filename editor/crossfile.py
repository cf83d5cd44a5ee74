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
import re
from pathlib import PurePosixPath

from editllm.editor.blocks import split_blocks
from editllm.editor.languages import PYTHON
from editllm.editor.source import split_lines

JS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
# `import { a, b as c } from "./x"`, `import type { T } from "./x"` (over lines too); `const { a } = require("./x")`
JS_IMPORT = re.compile(r"""\bimport\s+(?:type\s+)?\{([^}]*)\}\s*from\s*["'](\.{1,2}/[^"']+)["']""")
JS_REQUIRE = re.compile(r"""\b(?:const|let|var)\s*\{([^}]*)\}\s*=\s*require\(\s*["'](\.{1,2}/[^"']+)["']\s*\)""")


def defined(lines: list[str]) -> set[str]:
    """The names a file's lines define at its top level (functions, classes, and what `blocks` names)."""
    return {b.name for b in split_blocks(lines, 0) if b.name}


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
    """Whether `module`, as file `importer` writes it, can be file `target` (paths as the diff shows them): its
    last part names the target's file (`from ._registry import`, `from filelock._registry import`, `"./registry.js"`;
    a package's `__init__.py` and a folder's `index.js` by the package or folder)."""
    path = PurePosixPath(target)
    stem, folder = path.stem, path.parent.name
    if importer.endswith(PYTHON):
        last = module.rsplit(".", 1)[-1]
        return last == stem or (stem == "__init__" and last in ("", folder))
    last = PurePosixPath(module).name
    return stem in (last, PurePosixPath(last).stem) or (stem == "index" and last in ("", ".", "..", folder))


def still_imported(edits: list[tuple[str, list[str], str]]) -> list[tuple[str, int, str, str]]:
    """(importing file, its line, name, file whose edit removed it) for each name a file's edit removes that another
    file of the same edit still imports from it and does not define itself. `edits`: (path, the original's lines,
    the new text)."""
    new_lines = {path: split_lines(new) for path, _, new in edits}
    gone = {path: defined(old) - defined(new_lines[path]) for path, old, _ in edits}
    out = []
    for path, _old, new in edits:
        if path.endswith(PYTHON):
            found = python_imports(new)
        elif path.endswith(JS):
            found = js_imports(new)
        else:
            continue
        own = defined(new_lines[path])
        for module, line, name in found:
            for target, names in gone.items():
                if target != path and name in names and name not in own and imports_from(path, module, target):
                    out.append((path, line, name, target))
    return out


def still_imported_note(path: str, line: int, name: str, target: str) -> str:
    """The note for one of `still_imported`'s findings."""
    return f"{path}: note: line {line} imports {name} from {target}, whose edit removes it"
