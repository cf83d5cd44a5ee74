"""Names a Python edit starts to use that nothing in the file defines: a note for the user, not a refusal.

Asked to add type hints, the bundled model wrote `FrozenSet[str]` into a module that never imported it (a real-file
probe, 2026-11): the file still parses, so nothing else catches it, and it fails at import. The model may also
mean a name the user is about to add elsewhere, so the edit stands; the user is told which names to check. The
test over-counts what is defined (any binding anywhere in the file counts for every scope), so a note names
only what no line of the file binds; a star import turns it off.
"""

from __future__ import annotations

import ast
import builtins

from editllm.editor.source import python_tree
from editllm.editor.wholefile import PYTHON

KNOWN = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                              "__builtins__", "__path__", "__annotations__", "__dict__", "__class__", "__qualname__",
                              "__module__", "__debug__", "reveal_type", "__cached__",
                              "_", "WindowsError"}  # gettext.install's `_`; Windows' own exception on any system


def unbound(text: str) -> set[str] | None:
    """Names the text reads that no statement of it binds (imports, assignments, definitions, parameters,
    handlers, patterns...); None when it does not parse or has a star import."""
    tree = python_tree(text)
    if tree is None:
        return None
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # Python 3.12's `def f[T]()`
            bound.add(node.name)
    return read - bound - KNOWN


def newly_unbound(path: str, old: str, new: str) -> list[str]:
    """The names `new` reads and binds nowhere that `old` did not already read unbound (sorted); [] for files
    other than Python, or when either text cannot be judged."""
    if not path.endswith(PYTHON) or old == new:
        return []
    before, after = unbound(old), unbound(new)
    if before is None or after is None:
        return []
    return sorted(after - before)
