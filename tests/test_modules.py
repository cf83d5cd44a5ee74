"""The package's own modules: each top-level name defined once.

A review (session 36) found `editor/merge.py` defining `ADDING` twice, 400 lines apart: the later one (the prose
merge's words) silently replaced the earlier (the comment merge's), so "write a comment" was read as a rewrite of the
one beside it. ruff does not flag a constant assigned twice; this does.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("api", "cli", "editor", "grammar", "remote", "resolver", "selector", "training", "benchmarks")
MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def top_level_names(tree: ast.Module) -> Counter:
    """How often each name is bound at the module's top level (a `def`, a `class`, a plain assignment)."""
    found: Counter = Counter()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] += 1
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def test_there_are_modules_to_read():
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_top_level_name_is_defined_once(path):
    counts = top_level_names(ast.parse(path.read_text(encoding="utf-8")))
    assert [name for name, n in counts.items() if n > 1] == []
