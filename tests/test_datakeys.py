"""editor/datakeys.py: a data file keeps every key the instruction does not speak of."""

from __future__ import annotations

import json

import pytest
from editllm.editor.datakeys import named, no_unasked_key_loss
from editllm.editor.decode import DecodeStats
from editllm.editor.edit import finish_edit
from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile

PACKAGE = {"name": "aproba", "version": "2.0.0", "description": "A ridiculously light-weight argument validator",
           "main": "lib/index.js", "directories": {"test": "test"}, "devDependencies": {"tap": "^16.0.1"},
           "keywords": ["argument", "validate"], "author": "Rebecca Turner", "license": "ISC"}
CARGO = ('[package]\nname = "helix-event"\nversion = "0.1.0"\n\n[dependencies]\nfoldhash = "0.1"\n'
         'tokio = { version = "1", features = ["rt"] }\n\n[features]\nintegration_test = []\n')
WORKFLOW = ("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
            "      - name: Check formatting\n        run: cargo fmt --check\n        env:\n          RUSTFLAGS: -D\n")


def dump(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def test_a_key_left_out_unasked_is_refused_through_finish_edit():
    """A real-model probe (session 29): "Remove the directories field and move the keywords array right after
    description" of aproba's package.json also dropped `author` and `license`, exit 0."""
    asked = {k: v for k, v in PACKAGE.items() if k != "directories"}
    lossy = {k: v for k, v in asked.items() if k not in ("author", "license")}
    instruction = "Remove the directories field and move the keywords array right after description"
    with pytest.raises(EditError, match="package.json: the output leaves out author, license, which the "
                                        r"instruction does not ask to remove; nothing written \(ask for it, or "
                                        r"--allow-deletions\)"):
        finish_edit(SourceFile("package.json", dump(PACKAGE)), dump(lossy), instruction, DecodeStats("spec"), "")
    result = finish_edit(SourceFile("package.json", dump(PACKAGE)), dump(asked), instruction, DecodeStats("spec"), "")
    assert result.new_text == dump(asked)


@pytest.mark.parametrize(("path", "old", "new", "instruction"), [
    ("package.json", dump(PACKAGE), dump({k: v for k, v in PACKAGE.items() if k != "devDependencies"}),
     "drop the dev dependencies"),  # named as words apart
    ("Cargo.toml", CARGO, CARGO.replace('tokio = { version = "1", features = ["rt"] }\n', "")
     + '\n[dependencies.tokio]\nversion = "1"\nfeatures = ["rt"]\n', "Move tokio into its own table"),  # moved
    ("Cargo.toml", CARGO, CARGO.replace('\n[features]\nintegration_test = []\n', ""), "remove the [features] table"),
    ("ci.yml", WORKFLOW, WORKFLOW.split("      - name: Check")[0], "Remove the `Check formatting` step"),  # list item
])
def test_keys_asked_away_moved_or_in_list_items_pass(path, old, new, instruction):
    no_unasked_key_loss(path, old, new, instruction)


def test_a_toml_table_left_out_unasked_is_refused():
    moved = CARGO.replace('tokio = { version = "1", features = ["rt"] }\n', "").replace(
        '\n[features]\nintegration_test = []\n', '\n[dependencies.tokio]\nversion = "1"\n')
    with pytest.raises(EditError, match=r"Cargo.toml: the output leaves out features, which"):
        no_unasked_key_loss("Cargo.toml", CARGO, moved, "Move the tokio dependency into its own table")


def test_a_key_is_named_as_a_word_or_as_its_letters():
    assert named("author", "remove the author field")
    assert named("devDependencies", "drop the dev dependencies")
    assert named("line-length", "raise the line length to 100")
    assert not named("license", "Remove the directories field")
    assert not named("ab", "grab it")  # too short to be read from letters: as a word only


def test_a_key_whose_value_is_written_under_another_name_was_renamed():
    """"Upgrade to the new config format": `[tool.black]` written as `[tool.formatter]` with the same settings."""
    old = '[tool.black]\nline-length = 100\ntarget-version = ["py311"]\n\n[project]\nname = "app"\n'
    renamed = old.replace("[tool.black]", "[tool.formatter]")
    no_unasked_key_loss("pyproject.toml", old, renamed, "upgrade to the new config format")
    with pytest.raises(EditError, match="leaves out project, which"):
        no_unasked_key_loss("pyproject.toml", old, renamed.split("\n\n[project]")[0] + "\n",
                            "upgrade to the new config format")
