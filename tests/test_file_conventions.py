"""Awkward file names, places and contents: the diff applies with `git apply` and `patch -p1` from where the
user ran editllm and gives what `--apply` writes, a file's conventions survive the edit, and what cannot be
named or kept is refused in one line before the model loads. Each case was found by driving the command
line with the model scripted (session 20's audit)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from editllm.cli.main import app
from test_input_safety import one_line_error as refused  # one line on stderr, exit 2, no diff
from typer.testing import CliRunner

OLD, NEW = b"x = 1\ny = 2\n", "x = 1\ny = 3\n"


@pytest.fixture
def model(monkeypatch, scripted_lm) -> dict:
    """The scripted fake writes box["text"] as the whole new file (rewrite mode); box["loads"] counts loads."""
    box: dict = {"text": "", "loads": 0}

    def load(*args, **kwargs):
        box["loads"] += 1
        return scripted_lm(box["text"] + "```\n")

    monkeypatch.setattr("editllm.editor.models.load_model", load)
    return box


def run(cwd: Path, *args: str):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(old)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def tools_apply(cwd: Path, diff: bytes) -> None:
    """Both tools take the diff from `cwd`: checked, then really applied by `patch` (the caller compares)."""
    check = subprocess.run(["git", "apply", "--check", "-"], cwd=cwd, input=diff, capture_output=True)
    assert check.returncode == 0, check.stderr
    done = subprocess.run(["patch", "-p1", "-s"], cwd=cwd, input=diff, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_name_with_a_space_applies_with_patch_too(tmp_path, model):
    """git ends such a name with a tab on the ---/+++ lines; without it `patch` looks for `my`."""
    (tmp_path / "my file.py").write_bytes(OLD)
    model["text"] = NEW
    res = run(tmp_path, "fix", "--mode", "rewrite", "my file.py", "fix it")
    assert res.exit_code == 0, res.stderr
    assert "--- a/my file.py\t\n+++ b/my file.py\t\n" in res.stdout
    tools_apply(tmp_path, res.stdout_bytes)
    assert (tmp_path / "my file.py").read_text() == NEW


@pytest.mark.parametrize("name", ["a\tb.py", "a\nb.py"])
def test_a_name_with_a_control_character_is_refused_in_one_line(tmp_path, model, name):
    (tmp_path / name).write_bytes(OLD)
    refused(run(tmp_path, "fix", "--mode", "rewrite", name, "fix it"), "a control character in the file name")
    assert model["loads"] == 0


def test_a_name_that_is_not_utf8_is_refused_in_one_line(tmp_path, model):
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_bytes(OLD)
    refused(run(tmp_path, "fix", "--mode", "rewrite", name, "fix it"), "the file name is not UTF-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    refused(run(tmp_path, "check", "--staged", "--mode", "rewrite", "-i", "fix it"), "not UTF-8")
    assert model["loads"] == 0


def test_a_staged_name_with_a_tab_is_skipped_and_said(tmp_path, model):
    git(tmp_path, "init", "-q")
    (tmp_path / "a\tb.py").write_bytes(OLD)
    git(tmp_path, "add", "-A")
    res = run(tmp_path, "check", "--staged", "--mode", "rewrite", "-i", "fix it")
    assert res.exit_code == 0 and "skipped a\\tb.py: a control character in its name" in res.stderr


@pytest.mark.parametrize("where", ["dotdot", "absolute"])
def test_a_diff_of_a_file_outside_the_working_directory_and_any_repository_is_refused(tmp_path, model, where):
    """No name for it would apply from here (`a/../m.py` is refused by both tools; an absolute path applies
    only from /), so the user is told to run editllm where the file is, or to --apply, which needs no name."""
    (tmp_path / "w").mkdir()
    (tmp_path / "m.py").write_bytes(OLD)
    model["text"] = NEW
    arg = "../m.py" if where == "dotdot" else str(tmp_path / "m.py")
    refused(run(tmp_path / "w", "fix", "--mode", "rewrite", arg, "fix it"),
            "outside the working directory and not in a git repository")
    assert model["loads"] == 0
    res = run(tmp_path / "w", "fix", "--mode", "rewrite", "--apply", arg, "fix it")
    assert res.exit_code == 0 and (tmp_path / "m.py").read_text() == NEW, res.stderr


def test_a_file_above_the_working_directory_in_its_repository_still_applies(tmp_path, model):
    git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    (tmp_path / "m.py").write_bytes(OLD)
    model["text"] = NEW
    res = run(tmp_path / "sub", "fix", "--mode", "rewrite", "../m.py", "fix it")
    assert res.exit_code == 0 and "+++ b/m.py\n" in res.stdout, res.stderr
    tools_apply(tmp_path, res.stdout_bytes)
    assert (tmp_path / "m.py").read_text() == NEW


def test_a_file_through_a_folder_symlink_out_of_the_repository_is_refused(tmp_path, model):
    """As a file symlink out of the repository is: `--apply` would write outside it, and neither tool
    follows the diff's path through the link."""
    repo, ext = tmp_path / "repo", tmp_path / "ext"
    repo.mkdir()
    ext.mkdir()
    git(repo, "init", "-q")
    (ext / "m.py").write_bytes(OLD)
    (repo / "lnk").symlink_to(ext)
    model["text"] = NEW
    refused(run(repo, "fix", "--mode", "rewrite", "--apply", "lnk/m.py", "fix it"), "through a symlinked folder")
    assert (ext / "m.py").read_bytes() == OLD and model["loads"] == 0


def test_a_folder_symlink_inside_the_repository_names_the_real_file(tmp_path, model):
    git(tmp_path, "init", "-q")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "m.py").write_bytes(OLD)
    (tmp_path / "lnk").symlink_to("real")
    model["text"] = NEW
    res = run(tmp_path, "fix", "--mode", "rewrite", "lnk/m.py", "fix it")
    assert res.exit_code == 0 and "+++ b/real/m.py\n" in res.stdout, res.stderr
    tools_apply(tmp_path, res.stdout_bytes)
    assert (tmp_path / "real" / "m.py").read_text() == NEW


@pytest.mark.parametrize("how", ["autocrlf", "eol-attribute"])
def test_check_staged_apply_under_git_crlf_conversion(tmp_path, model, how):
    """The index holds LF, the working tree CRLF: that is git's conversion, not an unstaged change, so the
    edit is written, in CRLF."""
    git(tmp_path, "init", "-q")
    if how == "autocrlf":
        git(tmp_path, "config", "core.autocrlf", "true")
    else:
        (tmp_path / ".gitattributes").write_text("*.py text eol=crlf\n")
        git(tmp_path, "add", ".gitattributes")
        git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "attributes")
    (tmp_path / "m.py").write_bytes(b"x = 1\r\ny = 2\r\nz = 0\r\n")
    git(tmp_path, "add", "m.py")
    model["text"] = "x = 1\ny = 3\nz = 0\n"
    res = run(tmp_path, "check", "--staged", "--mode", "rewrite", "-i", "fix it", "--apply")
    assert res.exit_code == 1, res.stderr
    assert (tmp_path / "m.py").read_bytes() == b"x = 1\r\ny = 3\r\nz = 0\r\n"


def test_check_staged_apply_under_crlf_conversion_keeps_unstaged_work(tmp_path, model):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "core.autocrlf", "true")
    (tmp_path / "m.py").write_bytes(b"x = 1\r\ny = 2\r\nz = 0\r\n\r\n\r\n\r\ndef f():\r\n    pass\r\n")
    git(tmp_path, "add", "m.py")
    (tmp_path / "m.py").write_bytes(b"x = 1\r\ny = 2\r\nz = 0\r\n\r\n\r\n\r\ndef f():\r\n    return 1\r\n")
    model["text"] = "x = 1\ny = 3\nz = 0\n\n\n\ndef f():\n    pass\n"
    res = run(tmp_path, "check", "--staged", "--mode", "rewrite", "-i", "fix it", "--apply")
    assert res.exit_code == 1, res.stderr
    assert (tmp_path / "m.py").read_bytes() == b"x = 1\r\ny = 3\r\nz = 0\r\n\r\n\r\n\r\ndef f():\r\n    return 1\r\n"


def test_classic_mac_line_endings_are_refused(tmp_path, model):
    (tmp_path / "m.py").write_bytes(b"x = 1\ry = 2\rz = 0\r")
    refused(run(tmp_path, "fix", "--mode", "rewrite", "--apply", "m.py", "fix it"), "CR alone")
    assert (tmp_path / "m.py").read_bytes() == b"x = 1\ry = 2\rz = 0\r"


def test_a_last_line_ending_in_its_own_cr_keeps_it(tmp_path, model):
    """No final newline, and the last line ends in a stray CR: the model's closing `\\n` is the format's,
    the CR before it the file's."""
    (tmp_path / "m.py").write_bytes(b"x = 1\ny = 2\r")
    model["text"] = "x = 1\ny = 3\r\n"
    assert run(tmp_path, "fix", "--mode", "rewrite", "--apply", "m.py", "fix it").exit_code == 0
    assert (tmp_path / "m.py").read_bytes() == b"x = 1\ny = 3\r"


def test_a_read_only_file_is_not_written(tmp_path, model):
    """The rename would replace it (the folder is writable; root ignores modes anyway): refuse first."""
    f = tmp_path / "m.py"
    f.write_bytes(OLD)
    f.chmod(0o444)
    model["text"] = NEW
    refused(run(tmp_path, "fix", "--mode", "rewrite", "--apply", "m.py", "fix it"), "m.py: read-only (mode 444)")
    assert f.read_bytes() == OLD and model["loads"] == 0
    res = run(tmp_path, "fix", "--mode", "rewrite", "m.py", "fix it")  # the diff alone is fine
    assert res.exit_code == 0 and "+y = 3" in res.stdout


def test_write_edits_refuses_a_read_only_file_before_any_write(tmp_path, scripted_lm):
    from editllm.api import EditError, EditSession, read_sources, write_edits

    (tmp_path / "a.py").write_bytes(OLD)
    (tmp_path / "b.py").write_bytes(OLD)
    (tmp_path / "b.py").chmod(0o444)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        edits = EditSession(scripted_lm(NEW + "```\n"), mode="rewrite").edit(read_sources(["a.py", "b.py"], "fix"),
                                                                            "fix")
        with pytest.raises(EditError, match="b.py: read-only"):
            write_edits(edits)
    finally:
        os.chdir(old)
    assert (tmp_path / "a.py").read_bytes() == OLD


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away")
def test_apply_keeps_the_owner_of_someone_elses_file(tmp_path, model):
    f = tmp_path / "m.py"
    f.write_bytes(OLD)
    os.chown(f, 1234, 1234)
    model["text"] = NEW
    assert run(tmp_path, "fix", "--mode", "rewrite", "--apply", "m.py", "fix it").exit_code == 0
    st = f.stat()
    assert f.read_text() == NEW and (st.st_uid, st.st_gid) == (1234, 1234)


def test_the_diff_is_utf8_whatever_the_locale(monkeypatch):
    """`patch` compares bytes: a latin-1 stdout would turn `é` into a byte the file does not hold."""
    from editllm.cli.main import write_diff

    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="latin-1"))
    write_diff("+s = 'é'\n")
    assert raw.getvalue() == "+s = 'é'\n".encode()
