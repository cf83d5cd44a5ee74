"""editor/datakeys.py: keys of a data file the edit leaves out unasked are noted."""

from __future__ import annotations

import json

import pytest
from editllm.editor.datakeys import named, unasked_keys

PACKAGE = {"name": "aproba", "version": "2.0.0", "description": "A ridiculously light-weight argument validator",
           "main": "lib/index.js", "directories": {"test": "test"}, "devDependencies": {"tap": "^16.0.1"},
           "keywords": ["argument", "validate"], "author": "Rebecca Turner", "license": "ISC"}
CARGO = ('[package]\nname = "helix-event"\nversion = "0.1.0"\n\n[dependencies]\nfoldhash = "0.1"\n'
         'tokio = { version = "1", features = ["rt"] }\n\n[features]\nintegration_test = []\n')
WORKFLOW = ("on:\n  push:\n  pull_request:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n      - name: Check formatting\n        run: cargo fmt --check\n"
            "        env:\n          RUSTFLAGS: -D\n")
INSTRUCTION = "Remove the directories field and move the keywords array right after description"


def dump(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def test_keys_left_out_unasked_are_found():
    """A real-model probe (session 29): that instruction on aproba's package.json also dropped `author` and
    `license`, exit 0, and nothing said so."""
    asked = {k: v for k, v in PACKAGE.items() if k != "directories"}
    lossy = {k: v for k, v in asked.items() if k not in ("author", "license")}
    assert unasked_keys("package.json", dump(PACKAGE), dump(lossy), INSTRUCTION) == ["author", "license"]
    assert unasked_keys("package.json", dump(PACKAGE), dump(asked), INSTRUCTION) == []
    moved = CARGO.replace('tokio = { version = "1", features = ["rt"] }\n', "").replace(
        '\n[features]\nintegration_test = []\n', '\n[dependencies.tokio]\nversion = "1"\n')
    assert unasked_keys("Cargo.toml", CARGO, moved, "Move the tokio dependency into its own table") == ["features"]


@pytest.mark.parametrize(("path", "old", "new", "instruction"), [
    ("package.json", dump(PACKAGE), dump({k: v for k, v in PACKAGE.items() if k != "devDependencies"}),
     "drop the dev dependencies"),  # named as words apart
    ("package.json", dump(PACKAGE), dump({k: v for k, v in PACKAGE.items() if k != "keywords"}),
     "remove the keyword field"),  # named by a word of it
    ("Cargo.toml", CARGO, CARGO.replace('tokio = { version = "1", features = ["rt"] }\n', "")
     + '\n[dependencies.tokio]\nversion = "1"\nfeatures = ["rt"]\n', "Move tokio into its own table"),  # moved
    ("Cargo.toml", CARGO, CARGO.replace('\n[features]\nintegration_test = []\n', ""), "remove the [features] table"),
    ("ci.yml", WORKFLOW, WORKFLOW.split("      - name: Check")[0], "Remove the `Check formatting` step"),  # list item
    ("ci.yml", WORKFLOW, WORKFLOW.replace("on:", '"on":'), "quote the on key"),  # YAML keys as written, not True
    ("ci.yml", WORKFLOW, WORKFLOW.replace("  pull_request:\n", ""), "only run CI on pushes"),  # `on` named
    ("pyproject.toml", '[tool.black]\nline-length = 100\ntarget-version = ["py311"]\n',
     '[tool.formatter]\nline-length = 100\ntarget-version = ["py311"]\n', "upgrade the config format"),  # renamed
])
def test_keys_asked_away_moved_renamed_or_in_list_items_are_not(path, old, new, instruction):
    assert unasked_keys(path, old, new, instruction) == []


def test_a_key_is_named_as_a_word_as_its_letters_or_by_a_word_of_it():
    assert named("author", "remove the author field")
    assert named("devDependencies", "drop the dev dependencies")
    assert named("ts-jest", "replace jest with vitest")
    assert named("dependencies", "use the short form for each dependency")
    assert not named("license", INSTRUCTION)


def test_the_cli_writes_the_edit_and_notes_the_keys_it_left_out(tmp_path, model):
    """A note, not a refusal: a review (session 29) found 29 valid edits (migrations, a key's typo fixed, a
    dependency written in its short form) that key names alone cannot tell from a loss."""
    from test_file_conventions import run

    (tmp_path / "package.json").write_text(dump(PACKAGE))
    model["text"] = dump({k: v for k, v in PACKAGE.items() if k not in ("directories", "author", "license")}) + "```\n"
    res = run(tmp_path, "fix", "package.json", INSTRUCTION, "--no-focus")
    assert res.exit_code == 0 and '-  "author": "Rebecca Turner",\n' in res.stdout
    assert "package.json: note: the edit leaves out author, license, which the instruction does not name" in res.stderr


RELEASE = ("name: release\njobs:\n  create-release:\n    runs-on: ubuntu-latest\n    steps:\n    - run: make\n"
           "  build-release-deb:\n    needs: ['create-release']\n    runs-on: ubuntu-latest\n    env:\n"
           "      PCRE2_SYS_STATIC: 1\n    steps:\n    - run: make deb\n")


def test_a_key_put_under_another_parent_unasked_is_refused(scripted_lm):
    """A real-model probe (session 34): asked to add one variable to ripgrep's build-release-deb job's env, the model
    wrote the job two spaces shallower; the merged file parsed, with the job a top-level key outside `jobs:` (no
    runner reads it), exit 0."""
    from editllm.editor.datakeys import moved_keys
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.errors import EditError
    from editllm.editor.source import SourceFile

    ask = "In the build-release-deb job, add CARGO_TERM_COLOR: always to its env, after PCRE2_SYS_STATIC."
    right = RELEASE.replace("STATIC: 1\n", "STATIC: 1\n      CARGO_TERM_COLOR: always\n")
    job = right.index("  build-release-deb:")
    shallow = right[:job] + "".join(line[2:] + "\n" for line in right[job:].splitlines())
    assert moved_keys("release.yml", RELEASE, right, ask) == []
    assert moved_keys("release.yml", RELEASE, shallow, ask) == [("jobs.build-release-deb", "build-release-deb")]
    assert moved_keys("release.yml", RELEASE, shallow, "Move build-release-deb to the top level") == []  # asked
    with pytest.raises(EditError, match=r"release\.yml: the edit moves jobs\.build-release-deb to build-release-deb,"):
        edit_file(scripted_lm(shallow + "```\n"), SourceFile("release.yml", RELEASE), ask, EditOptions())
    # keys renamed, reordered, or made inline tables are not moved
    assert moved_keys("Cargo.toml", CARGO, CARGO.replace("[features]", "[features2]"), "rename features") == []
    inline = CARGO.replace('tokio = { version = "1", features = ["rt"] }\n', "") + \
        '\n[dependencies.tokio]\nversion = "1"\nfeatures = ["rt"]\n'
    assert moved_keys("Cargo.toml", CARGO, inline, "give tokio a table of its own") == []


MANIFEST = '''apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
data:
  LOG_LEVEL: info
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: api
          envFrom:
            - configMapRef:
                name: api-config
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  selector:
    app: api
  ports:
    - port: 80
'''


def test_a_yaml_document_removed_whole_as_asked_notes_none_of_its_keys():
    """A probe (session 36): "Remove the Service." on a three-document manifest took the Service out, exactly, and
    was noted as leaving out spec.ports and spec.selector.app: the stream's keys were pooled, so the Deployment's
    `spec` still held the path. A document taken out whole, as a removal asks, takes its keys with it."""
    from editllm.editor.datakeys import unasked_keys

    no_service = MANIFEST[:MANIFEST.rindex("---\n")]
    assert unasked_keys("deploy.yaml", MANIFEST, no_service, "Remove the Service.") == []
    no_config = MANIFEST[MANIFEST.index("---\n") + 4:].replace(
        "          envFrom:\n            - configMapRef:\n                name: api-config\n", "")
    assert unasked_keys("deploy.yaml", MANIFEST, no_config, "Remove the ConfigMap and the envFrom that uses it.") == []
    # not asked to remove anything: the lost document's keys are noted as before
    assert unasked_keys("deploy.yaml", MANIFEST, no_service, "Set the replicas to 3.") == ["spec.ports",
                                                                                           "spec.selector"]


def test_a_key_dropped_beside_a_sibling_the_instruction_names_is_noted():
    """A probe (session 40): "move eslint from devDependencies to dependencies" also dropped `@types/react`, with no
    note: the parent's name excused every key under it. A parent named for all it holds still does."""
    old = json.dumps({"dependencies": {"react": "^18"}, "devDependencies": {
        "@types/react": "^18", "eslint": "^8", "vite": "^5"}}, indent=2) + "\n"
    new = json.dumps({"dependencies": {"react": "^18", "eslint": "^8"}, "devDependencies": {"vite": "^5"}},
                     indent=2) + "\n"
    move = "Move eslint from devDependencies to dependencies."
    assert unasked_keys("package.json", old, new, move) == ["devDependencies.@types/react"]
    assert unasked_keys("package.json", old, new, "Remove the devDependencies we do not use.") == []
