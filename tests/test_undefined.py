"""editor/undefined.py: a name an edit starts to use that nothing in the file binds is pointed out on stderr."""

from __future__ import annotations

import pytest
from editllm.editor.undefined import newly_unbound, unbound
from test_file_conventions import run


def test_unbound_names_exclude_every_kind_of_binding():
    text = ("import os.path\nfrom typing import List as L\n\n\nclass C:\n    pass\n\n\n"
            "def f(a, *b, c=1, **d) -> L:\n    global G\n    try:\n        x = [y for y in a]\n"
            "    except ValueError as e:\n        raise e\n    match a:\n        case {'k': k, **rest}:\n"
            "            return k, rest\n        case [first, *others] as whole:\n"
            "            return first, others, whole\n"
            "    with open(os.path.join('p')) as fh:\n        return x, b, c, d, fh, C, len, __name__, missing\n")
    assert unbound(text) == {"missing"}
    assert unbound("from os import *\nprint(anything)\n") is None  # a star import: cannot tell
    assert unbound("def f(:\n") is None


def test_only_names_the_edit_brings_in_count():
    old = "def f(x):\n    return helper(x)\n"  # `helper` was unbound before: not the edit's doing
    new = "def f(x: FrozenSet[str]) -> Optional[int]:\n    return helper(x)\n"
    assert newly_unbound("m.py", old, new) == ["FrozenSet", "Optional"]
    assert newly_unbound("m.py", old, "from typing import Optional\n\n\n" + new) == ["FrozenSet"]
    assert newly_unbound("m.js", old, new) == []


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    box: dict = {"text": ""}
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(box["text"]))
    return box


def test_the_cli_notes_an_unbound_name_on_stderr_and_still_writes_the_diff(tmp_path, model):
    (tmp_path / "m.py").write_text("def split_what(what):\n    return set(what)\n")
    model["text"] = "def split_what(what: list) -> FrozenSet[str]:\n    return set(what)\n```\n"
    res = run(tmp_path, "fix", "m.py", "add type hints to split_what")
    assert res.exit_code == 0 and "+def split_what(what: list) -> FrozenSet[str]:" in res.stdout
    assert "m.py: note: the edit uses FrozenSet, which the file neither defines nor imports" in res.stderr
