"""The library API (`editllm.api`): what a caller gets back per file, lazy loading, writes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from editllm.api import EditError, EditSession, FileEdit, read_sources, stats_record, write_edits

BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"


def test_importing_the_api_does_not_import_torch():
    code = "import sys, editllm.api; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_edit_returns_one_file_edit_per_path_in_order(tmp_path, monkeypatch, scripted_lm):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(FIXED)
    session = EditSession(scripted_lm(FIXED + "```\n"), mode="spec")  # writes FIXED whatever it is shown
    edits = session.edit(["a.py", "b.py"], "fix average")
    assert [type(e) for e in edits] == [FileEdit, FileEdit] and [e.path for e in edits] == ["a.py", "b.py"]
    a, b = edits
    assert (a.old_text, a.new_text, a.changed) == (BUGGY, FIXED, True)
    assert a.diff.startswith("diff --git a/a.py b/a.py\n") and "+    return sum(xs) / len(xs)\n" in a.diff
    assert (b.changed, b.diff) == (False, "")
    assert a.stats.output_tokens > 0 and not a.merged and a.fallback is None and a.complete_output
    record = stats_record(session.lm, session.mode, edits, 0.0)
    assert (record["files_changed"], record["files_unchanged"], record["changed"]) == (1, 1, True)
    assert [f["changed"] for f in record["files"]] == [True, False]
    assert (tmp_path / "a.py").read_text() == BUGGY  # edit() never writes
    assert write_edits(edits) == 1
    assert (tmp_path / "a.py").read_text() == FIXED and (tmp_path / "b.py").read_text() == FIXED


def test_sources_are_read_and_checked_before_the_model_loads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.link(tmp_path / "ok.py", tmp_path / "same.py")  # a hard link: the same file (a probe, session 38)
    session = EditSession("nowhere/model/x")
    bad = ((["missing.py"], "x", "no such file"), (["ok.py"], "  ", "instruction is empty"),
           (["ok.py", "./ok.py"], "x", "named twice"),
           (["ok.py", "same.py"], "x", r"same.py: the same file as ok.py \(a hard link\): named twice"))
    for paths, instruction, message in bad:
        with pytest.raises(EditError, match=message):
            session.edit(paths, instruction)
    assert session._lm is None  # nothing was loaded for bad input
    with pytest.raises(EditError, match="model not found"):
        session.edit(["ok.py"], "x")


def test_source_files_can_be_passed_in(tmp_path, scripted_lm):
    from editllm.editor.source import source_from_text

    src = source_from_text(BUGGY.encode(), "pkg/m.py")
    [edit] = EditSession(scripted_lm(FIXED + "```\n")).edit(read_sources([src], "fix it"), "fix it")
    assert edit.path == "pkg/m.py" and edit.changed and edit.diff.startswith("diff --git a/pkg/m.py b/pkg/m.py")


def test_a_real_tiny_model_that_cannot_finish_raises_and_writes_nothing(tmp_path, monkeypatch, tiny_lm):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    session = EditSession(tiny_lm, mode="rewrite", max_new_tokens=8)
    with pytest.raises(EditError, match="did not finish the file within 8 new tokens"):
        session.edit(["m.py"], "fix it")
    assert (tmp_path / "m.py").read_text() == BUGGY


def test_an_output_the_context_cut_short_does_not_say_raise_max_new_tokens(tmp_path, monkeypatch, tiny_lm):
    """A probe (session 34): told to "raise --max-new-tokens" when the model's context, not the budget, was the
    limit, the user would rerun to the same end. The error says what can help instead."""
    from editllm.editor.edit import prompt_ids
    from editllm.editor.prompt import rewrite_prompt

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    n_prompt = len(prompt_ids(tiny_lm, rewrite_prompt(tiny_lm.tokenizer, "m.py", BUGGY, "fix it")))
    room = n_prompt + len(tiny_lm.tokenizer.encode(BUGGY)) + 12  # enough to start, too little to finish
    monkeypatch.setattr(type(tiny_lm), "context_length", property(lambda self: room))
    with pytest.raises(EditError, match="all the room its context leaves after the prompt") as err:
        EditSession(tiny_lm, mode="rewrite").edit(["m.py"], "fix it")
    assert "max-new-tokens" not in str(err.value)
    assert (tmp_path / "m.py").read_text() == BUGGY


def test_notes_go_to_the_log_callback(tmp_path, monkeypatch, scripted_lm):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY + "\n\ndef total(xs):\n    return sum(xs)\n")
    notes: list[str] = []
    session = EditSession(scripted_lm(FIXED + "```\n"), mode="spec", focus=False, log=notes.append)
    [edit] = session.edit(["m.py"], "fix average")
    assert edit.merged and notes == ["m.py: the model wrote only part of the file (it left out total, kept as it was); "
                                     "merged it into place"]


def test_cli_flags_reach_the_edit_options(tmp_path, monkeypatch, scripted_lm):
    """--allow-deletions and friends end up in the EditOptions each file is edited with."""
    from editllm.cli.main import app
    from typer.testing import CliRunner

    seen = []
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(FIXED)
    lm = scripted_lm(FIXED + "```\n")
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: lm)
    original = EditSession.edit_options
    monkeypatch.setattr(EditSession, "edit_options", lambda self: seen.append(original(self)) or seen[-1])
    for args in (["fix", "m.py", "x", "--allow-deletions", "--mode", "rewrite", "--no-focus"],
                 ["check", "m.py", "-i", "x", "--allow-deletions"], ["fix", "m.py", "x"]):
        assert CliRunner().invoke(app, args).exit_code == 0
    assert [(o.allow_deletions, o.mode, o.focus) for o in seen] == [(True, "rewrite", False), (True, "spec", True),
                                                                     (False, "spec", True)]


def test_a_file_changed_on_disk_stops_every_write(tmp_path, monkeypatch, scripted_lm):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY)
    edits = EditSession(scripted_lm(FIXED + "```\n")).edit(["a.py", "b.py"], "fix average")
    (tmp_path / "b.py").write_text(BUGGY + "# edited meanwhile\n")
    with pytest.raises(EditError, match="b.py: changed on disk while editing; nothing written"):
        write_edits(edits)
    assert (tmp_path / "a.py").read_text() == BUGGY  # a.py was not written first


def test_the_modes_are_listed_once(scripted_lm):
    """Issue 17: the flag's choices, the config file's check and the pipeline's check are one list."""
    from editllm.editor import edit
    from editllm.editor.config import CHOICES
    from editllm.editor.source import SourceFile

    assert edit.MODES is CHOICES["mode"]
    with pytest.raises(EditError, match=f"choose one of {', '.join(CHOICES['mode'])}$"):
        edit.edit_file(scripted_lm(FIXED + "```\n"), SourceFile("m.py", BUGGY), "x", edit.EditOptions(mode="fast"))


@pytest.fixture
def split_calls(monkeypatch):
    """Every `split_lines` call any editllm module makes, as the list of texts it split."""
    import editllm.editor.copymode  # noqa: F401 - every stage imported (binding the real split_lines) first
    import editllm.editor.diff  # noqa: F401
    import editllm.editor.edit  # noqa: F401
    from editllm.grammar import program

    calls: list[str] = []
    original = program.split_lines

    def counting(text: str) -> list[str]:
        calls.append(text)
        return original(text)

    patched = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("editllm.") and getattr(module, "split_lines", None) is original:
            monkeypatch.setattr(module, "split_lines", counting)
            patched.add(name.removeprefix("editllm."))
    assert patched >= {"editor.source", "editor.edit", "editor.focus", "editor.wholefile", "editor.diff",
                       "resolver.resolve"}
    return calls


TWO_FUNCTIONS = BUGGY + "\n\ndef total(xs):\n    return sum(xs)\n"  # 6 lines


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("mode,script", [
    ("spec", FIXED + "```\n"),  # focus: the model is shown `average` alone and writes it fixed
    ("copy", '<gen>def average(xs):\n    return sum(xs) / len(xs)\n</gen>'),  # over the focused `average`
], ids=["spec-focus", "copy-focus"])
def test_one_request_splits_each_text_into_lines_once(split_calls, scripted_lm, mode, script, newline):
    """Issue 17, work done once: the original is split once (in the SourceFile) and its lines are
    handed to focus, the focus merge, the whole-file check, the resolver and the line endings; the
    model's output and the merged file are each split once too."""
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.source import SourceFile

    src = SourceFile("m.py", TWO_FUNCTIONS.replace("\n", newline))
    result = edit_file(scripted_lm(script), src, "Fix the bug in `average`.", EditOptions(mode=mode))
    assert result.new_text == TWO_FUNCTIONS.replace(BUGGY, FIXED).replace("\n", newline)
    assert result.fallback is None and result.stats.mode == mode  # the path under test ran
    assert result.focused == ("average",)
    assert split_calls.count(src.raw) == 1 and (newline == "\n" or src.text not in split_calls)
    assert sorted(set(split_calls), key=split_calls.index) == split_calls, "a text was split twice"


@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_session_edit_splits_the_original_once_diff_included(split_calls, scripted_lm, tmp_path, monkeypatch,
                                                               bom, newline):
    """Through the API: read, focus, decode, merge, line endings and the checked diff split the file once."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(("\ufeff" if bom else "").encode() + TWO_FUNCTIONS.replace("\n", newline).encode())
    [edit] = EditSession(scripted_lm(FIXED + "```\n")).edit(["m.py"], "Fix the bug in `average`.")
    assert edit.changed and edit.focused == ("average",) and edit.source.bom == bom
    assert f"-    return sum(xs) / (len(xs) - 1){newline}" in edit.diff
    assert [t.removeprefix("\ufeff") for t in split_calls].count(edit.source.raw) == 1  # the diff's has a BOM


def test_no_merge_note_when_the_merge_put_nothing_back(tmp_path, monkeypatch, scripted_lm):
    """A real-model probe (session 28): outputs read as part of the file whose merge gave back the model's own
    text were told "the model wrote only part of the file", which was not so."""
    from editllm.editor.edit import EditResult
    from editllm.editor.source import SourceFile

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    notes: list[str] = []
    session = EditSession(scripted_lm(FIXED + "```\n"), mode="spec", focus=False, log=notes.append)
    same = EditResult(SourceFile("m.py", BUGGY), FIXED, None, FIXED, merged=True, unmerged_text=FIXED)
    monkeypatch.setattr("editllm.api.session.decode_file", lambda *a, **k: same)
    [edit] = session.edit(["m.py"], "fix average")
    assert edit.changed and notes == []


def test_files_decoded_together_name_every_other_files_outcome(scripted_lm, monkeypatch):
    """On the static engine's rows every file is tried before the first error is raised: that error says which
    others were edited (and are dropped with it), unchanged, or failed too, and keeps its own type."""
    from types import SimpleNamespace

    from editllm.editor.edit import EditResult
    from editllm.editor.source import SourceFile
    from editllm.remote.client import ServerError

    sources = [SourceFile(name, BUGGY) for name in ("a.py", "b.py", "c.py", "d.py")]
    outcomes = {"a.py": FIXED, "b.py": ServerError("b.py: busy", transient=True), "c.py": BUGGY,
                "d.py": EditError("d.py: refused")}

    def edit_source(src, instruction, together=()):
        out = outcomes[src.path]
        if isinstance(out, Exception):
            raise out
        return FileEdit(src, out, "", EditResult(src, out, None, out))

    session = EditSession(scripted_lm(FIXED), mode="spec")
    session._rows = SimpleNamespace(size=4)
    monkeypatch.setattr(session, "edit_source", edit_source)
    with pytest.raises(ServerError) as raised:
        session._edit_together(sources, "fix average")
    assert str(raised.value) == ("b.py: busy; a multi-file edit is all or nothing: the edit of a.py is dropped too, "
                                 "c.py had no change, d.py failed as well")
    assert raised.value.transient and raised.value.others_edited == ["a.py"]
    session._rows = None


def test_a_name_one_file_removes_that_another_still_imports_is_noted(tmp_path, monkeypatch, scripted_lm):
    """The files of one edit are read against each other once all are edited (`editor.crossfile`)."""
    from editllm.editor.edit import EditResult

    monkeypatch.chdir(tmp_path)
    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "app.py").write_text("from util import helper\n\nprint(helper())\n")
    wrote = {"util.py": "def assist():\n    return 1\n", "app.py": "from util import helper\n\nprint(helper())\n"}
    monkeypatch.setattr("editllm.api.session.decode_file",
                        lambda lm, src, *a, **k: EditResult(src, wrote[src.path], None, wrote[src.path]))
    notes: list[str] = []
    session = EditSession(scripted_lm(FIXED), mode="spec", log=notes.append)
    edits = session.edit(["util.py", "app.py"], "rename helper to assist")
    assert [e.changed for e in edits] == [True, False]
    assert "app.py: note: line 1 imports helper from util.py, whose edit removes it" in notes


def test_a_definition_the_instruction_does_not_touch_changed_is_noted(tmp_path, monkeypatch, scripted_lm):
    """`editor.drift` speaks through the session's log, as the other notes do."""
    from editllm.editor.edit import EditResult

    monkeypatch.chdir(tmp_path)
    old = "LIMIT = 5\n\n\ndef limit():\n    return LIMIT\n\n\ndef other(x):\n    return x\n"
    wrote = old.replace("= 5", "= 10").replace("return x", "return x + 1")
    (tmp_path / "m.py").write_text(old)
    monkeypatch.setattr("editllm.api.session.decode_file", lambda lm, src, *a, **k: EditResult(src, wrote, None, wrote))
    notes: list[str] = []
    EditSession(scripted_lm(FIXED), mode="spec", log=notes.append).edit(["m.py"], "Set LIMIT to 10.")
    assert notes == ["m.py: note: the edit also changes other, which the instruction does not speak of; check it "
                     "should change"]


def test_a_crlf_file_gets_no_drift_note_for_definitions_it_leaves_alone(tmp_path, monkeypatch, scripted_lm):
    """A review (session 34): the drift check compared the file's LF text with the CRLF edit, so every definition
    read as changed."""
    from editllm.editor.edit import EditResult

    monkeypatch.chdir(tmp_path)
    old = "LIMIT = 5\r\n\r\n\r\ndef limit():\r\n    return LIMIT\r\n\r\n\r\ndef other(x):\r\n    return x\r\n"
    wrote = old.replace("= 5", "= 10")
    (tmp_path / "m.py").write_bytes(old.encode())
    monkeypatch.setattr("editllm.api.session.decode_file", lambda lm, src, *a, **k: EditResult(src, wrote, None, wrote))
    notes: list[str] = []
    EditSession(scripted_lm(FIXED), mode="spec", log=notes.append).edit(["m.py"], "Set LIMIT to 10.")
    assert not any("also changes" in n for n in notes)
