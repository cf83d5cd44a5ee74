"""The printed diff must apply with the real tools and reproduce the new text byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from editllm.editor.diff import checked_diff, file_diff
from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile, restore_line_endings, split_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LINES = st.sampled_from(["a", "b", "def f():", "    return 1", "", "  ", "é ü 中文", "x = 'y'", "# c", "\t"])


@st.composite
def texts(draw) -> str:
    lines = draw(st.lists(LINES, max_size=12))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(line + ending for line in lines)
    if text and draw(st.booleans()):
        text = text[: -len(ending)]  # no final newline
    return text


@st.composite
def edits(draw) -> tuple[str, str]:
    before = draw(texts())
    lines = split_lines(before)
    ops = draw(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(["del", "ins", "rep"]), LINES), max_size=4))
    for pos, op, new in ops:
        pos = min(pos, len(lines))
        ending = "\r\n" if "\r\n" in before else "\n"
        if op == "ins":
            lines.insert(pos, new + ending)
        elif lines and pos < len(lines):
            if op == "del":
                del lines[pos]
            else:
                lines[pos] = new + ending
    after = "".join(lines)
    if draw(st.booleans()) and after.endswith("\n"):
        after = after.rstrip("\r\n")
    return before, after


def _apply_with(tool: list[str], repo: Path, before: str, after: str) -> str:
    f = repo / "f.txt"
    f.write_bytes(before.encode())
    diff = file_diff("f.txt", before, after)
    if not diff:
        return before
    subprocess.run(tool + ["--dry-run"] if tool[0] == "patch" else tool + ["--check"], cwd=repo,
                   input=diff.encode(), check=True, capture_output=True)
    subprocess.run(tool, cwd=repo, input=diff.encode(), check=True, capture_output=True)
    return f.read_bytes().decode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits())
def test_diff_applies_with_patch_and_git(tmp_path, pair):
    before, after = pair
    assert _apply_with(["patch", "-p1", "--quiet", "--binary"], tmp_path, before, after) == after
    assert _apply_with(["git", "apply", "--whitespace=nowarn"], tmp_path, before, after) == after


@settings(max_examples=200, deadline=None)
@given(edits())
def test_checked_diff_round_trips_in_memory(pair):
    before, after = pair
    src = SourceFile("f.txt", before)
    diff = checked_diff([(src, after)])
    assert (diff == "") == (before == after)


def test_no_newline_marker_written():
    diff = file_diff("f", "a\nb", "a\nc")
    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


def test_several_files_in_one_diff_and_unchanged_skipped():
    a, b, c = SourceFile("a.py", "x\n"), SourceFile("b.py", "y\n"), SourceFile("c.py", "z\n")
    diff = checked_diff([(a, "x2\n"), (b, "y\n"), (c, "z2\n")])
    assert diff.count("diff --git") == 2
    assert "a/a.py" in diff and "a/c.py" in diff and "b.py" not in diff


def test_bom_is_kept_out_of_the_edit_but_in_the_file():
    src = SourceFile("f", "a\n", bom=True)
    diff = checked_diff([(src, "b\n")])
    assert "-\ufeffa\n+\ufeffb\n" in diff


@pytest.mark.parametrize(
    "raw,model_text,expected",
    [
        ("a\r\nb\r\n", "a\nB\n", "a\r\nB\r\n"),  # CRLF kept for new lines
        ("a\nb", "a\nb\n", "a\nb"),  # missing final newline is not an edit
        ("a\nb", "a\nc\n", "a\nc"),
        ("a\nb", "a\nb\nc\n", "a\nb\nc"),  # appended after an unterminated last line
        ("a\r\nb\nc\r\n", "a\nb\nX\n", "a\r\nb\nX\r\n"),  # mixed endings: unchanged lines keep theirs
        ("", "x\n", "x\n"),
        ("a\x0cb\n", "a\x0cb\n", "a\x0cb\n"),  # form feed is not a line break
    ],
)
def test_restore_line_endings(raw, model_text, expected):
    assert restore_line_endings(SourceFile("f", raw), model_text) == expected


@settings(max_examples=200, deadline=None)
@given(texts())
def test_unchanged_model_text_restores_the_file_exactly(raw):
    src = SourceFile("f", raw)
    model_text = src.text if src.text.endswith("\n") or not src.text else src.text + "\n"
    assert restore_line_endings(src, model_text) == raw


def test_checked_diff_refuses_a_diff_that_would_not_apply(monkeypatch):
    import editllm.editor.diff as d

    monkeypatch.setattr(d, "file_diff", lambda *a, **k: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-zzz\n+b\n")
    with pytest.raises(EditError, match="mismatch|would not reproduce"):
        d.checked_diff([(SourceFile("f", "a\n"), "b\n")])
