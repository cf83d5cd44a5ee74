"""The merge corpus: realistic files with repeated lines, each with an instruction, scripted model
outputs and the exact file intended. Every output must merge into exactly that file: no statement
duplicated, none lost, the change kept (or be refused, where the case says where it goes is
genuinely ambiguous).

A case file (`tests/merge_corpus/*.case`) is a list of sections, each opened by a line `=== NAME`:
`instruction`, `before`, `expected`, then outputs: `output whole` / `output fragment` (through
`ensure_whole`), `output focus` (what the model writes when shown `focus_of`'s text: through
`merge_focus`, then `ensure_whole`, as `edit_file` does), `output refused` (must raise EditError);
a suffix tells several outputs of one kind apart (`output fragment 2`).
An `e2e` section names outputs to run end to end through `edit_file` with a scripted model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.focus import focus_of, merge_focus
from editllm.editor.source import SourceFile
from editllm.editor.wholefile import ensure_whole

CORPUS = Path(__file__).parent / "merge_corpus"
CASES = sorted(CORPUS.glob("*.case"))


def parse(path: Path) -> dict[str, str]:
    sections: dict[str, str] = {}
    current: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("=== "):
            current = line[4:].strip()
            assert current not in sections, f"{path.name}: section {current!r} twice"
            sections[current] = ""
        elif current is not None:
            sections[current] += line
    return sections


def outputs(case: dict[str, str]) -> list[str]:
    return [name for name in case if name.startswith("output ")]


def kind(name: str) -> str:
    return " ".join(name.split()[:2])


def merged(case: dict[str, str], name: str) -> str:
    before, instruction, out = case["before"], case["instruction"].strip(), case[name]
    if kind(name) == "output focus":
        assert focus_of(before, instruction) is not None, "the instruction should focus"
        out = merge_focus(before, out, instruction)
    return ensure_whole(before, out, instruction).text


def test_the_corpus_is_large_and_varied():
    assert len(CASES) >= 20
    kinds = {kind(name) for path in CASES for name in outputs(parse(path))}
    assert {"output whole", "output fragment", "output focus", "output refused"} <= kinds


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_every_output_merges_into_exactly_the_intended_file(path):
    case = parse(path)
    assert outputs(case), f"{path.name} has no output"
    for name in outputs(case):
        if kind(name) == "output refused":
            with pytest.raises(EditError, match="nothing written"):
                merged(case, name)
            continue
        assert merged(case, name) == case["expected"], f"{path.name}: {name}"


E2E = [(path, name.strip()) for path in CASES for name in parse(path).get("e2e", "").splitlines() if name.strip()]


@pytest.mark.parametrize(("path", "name"), E2E, ids=lambda x: x.stem if isinstance(x, Path) else x)
def test_end_to_end_through_edit_file(scripted_lm, path, name):
    """The scripted model writes the output (then the closing fence); spec mode, focus as the
    output's kind says; the file gets exactly the intended text, CRLF kept."""
    case = parse(path)
    instruction = case["instruction"].strip()
    lm = scripted_lm(case[name] + "```\n")
    opts = EditOptions(mode="spec", focus=kind(name) == "output focus")
    src = SourceFile(path.stem, case["before"].replace("\n", "\r\n"))
    if kind(name) == "output refused":
        with pytest.raises(EditError, match="nothing written"):
            edit_file(lm, src, instruction, opts)
        return
    result = edit_file(lm, src, instruction, opts)
    assert result.new_text == case["expected"].replace("\n", "\r\n")
