"""Bad input and awkward files: one line on stderr and exit 2 before anything is made or written, and a
multi-file --apply written whole or not at all. Each case here was found by driving the command line as a
user would (session 19's audit); the model, where one is reached, is the scripted fake."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from editllm.api import EditError, EditSession, write_edits
from editllm.cli.main import app
from typer.testing import CliRunner

BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def loads(monkeypatch, scripted_lm) -> list:
    """The CLI's model is the scripted fake writing FIXED; the list records every load."""
    seen: list = []

    def load(*args, **kwargs):
        seen.append(args)
        return scripted_lm(FIXED + "```\n")

    monkeypatch.setattr("editllm.editor.models.load_model", load)
    return seen


def run(cwd: Path, *args: str, input: str | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args), input=input)
    finally:
        os.chdir(old)


def one_line_error(res, expected: str) -> None:
    assert res.exit_code == 2, (res.stdout, res.stderr)
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], res.stderr


def test_check_apply_with_stdin_is_refused_before_any_file_is_written(tmp_path, loads):
    (tmp_path / "a.py").write_text(BUGGY)
    res = run(tmp_path, "check", "a.py", "-", "-i", "fix average", "--apply", input="y = 2\n")
    one_line_error(res, "--apply cannot write stdin")
    assert (tmp_path / "a.py").read_text() == BUGGY and loads == []


def test_check_staged_apply_refuses_a_staged_file_gone_from_the_worktree(tmp_path, loads):
    git(tmp_path, "init", "-q")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(BUGGY)
    git(tmp_path, "add", "a.py", "b.py")
    (tmp_path / "b.py").unlink()
    res = run(tmp_path, "check", "--staged", "-i", "fix average", "--apply")
    one_line_error(res, "b.py: staged, but the working tree holds no regular file there")
    assert (tmp_path / "a.py").read_text() == BUGGY and loads == []


def test_check_staged_apply_does_not_replace_a_worktree_symlink(tmp_path, loads):
    """The index holds a regular file, the working tree a link to another file: the staged content is
    checked, but --apply would replace the link with a file, so it is refused and both stay as they were."""
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "other.py").write_text(BUGGY)
    git(tmp_path, "add", "a.py")
    (tmp_path / "a.py").unlink()
    (tmp_path / "a.py").symlink_to("other.py")
    res = run(tmp_path, "check", "--staged", "-i", "fix average", "--apply")
    one_line_error(res, "a.py: staged, but the working tree holds no regular file there")
    assert (tmp_path / "a.py").is_symlink() and (tmp_path / "other.py").read_text() == BUGGY and loads == []
    res = run(tmp_path, "check", "--staged", "-i", "fix average")
    assert res.exit_code == 1 and "+    return sum(xs) / len(xs)" in res.stdout, res.stderr
    assert (tmp_path / "a.py").is_symlink() and (tmp_path / "other.py").read_text() == BUGGY


def test_check_staged_names_a_missing_file(tmp_path, loads):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text(BUGGY)
    git(tmp_path, "add", "a.py")
    one_line_error(run(tmp_path, "check", "--staged", "-i", "fix average", "nope.py"), "nope.py: no such file")
    assert loads == []


def test_a_local_timeout_is_refused_even_with_nothing_staged(tmp_path, loads):
    """A hook's `--timeout` without a server fails on the first commit, not only once a file is staged."""
    git(tmp_path, "init", "-q")
    one_line_error(run(tmp_path, "check", "--staged", "--timeout", "5", "-i", "fix average"),
                   "bounds requests to a server")
    assert loads == []


def test_check_staged_says_a_named_file_is_not_staged(tmp_path, loads):
    """A named file with no staged change is reported as skipped, not passed over in silence."""
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY)
    git(tmp_path, "add", "a.py")
    res = run(tmp_path, "check", "--staged", "-i", "fix average", "b.py")
    assert res.exit_code == 0 and res.stdout == "" and loads == []
    assert "skipped b.py: not staged" in res.stderr and "nothing to check" in res.stderr
    res = run(tmp_path, "check", "--staged", "-i", "fix average", "a.py", "b.py")
    assert res.exit_code == 1 and "a/a.py" in res.stdout and "skipped b.py: not staged" in res.stderr


def test_a_conflict_in_a_later_file_stops_every_worktree_write(tmp_path, monkeypatch, scripted_lm):
    """Edits made on staged blobs: the second file's unstaged changes conflict with its edit, so the first
    file is not written either."""
    from editllm.api import staged_files

    git(tmp_path, "init", "-q")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(BUGGY)
    git(tmp_path, "add", "a.py", "b.py")
    (tmp_path / "b.py").write_text(BUGGY.replace("(len(xs) - 1)", "(len(xs) - 2)"))  # the edited line, unstaged
    monkeypatch.chdir(tmp_path)
    sources, _ = staged_files()
    edits = EditSession(scripted_lm(FIXED + "```\n")).edit(sources, "fix average")
    with pytest.raises(EditError, match="b.py: the edit conflicts with unstaged changes; nothing written"):
        write_edits(edits, worktree=True)
    assert (tmp_path / "a.py").read_text() == BUGGY


def test_a_symlink_is_edited_where_it_points_and_stays_a_link(tmp_path, loads):
    (tmp_path / "target.py").write_text(BUGGY)
    (tmp_path / "link.py").symlink_to("target.py")
    res = run(tmp_path, "fix", "link.py", "fix average")
    assert res.exit_code == 0 and res.stdout.startswith("diff --git a/target.py b/target.py\n"), res.stderr
    res = run(tmp_path, "fix", "link.py", "fix average", "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "link.py").is_symlink() and os.readlink(tmp_path / "link.py") == "target.py"
    assert (tmp_path / "target.py").read_text() == FIXED


@pytest.mark.parametrize(("make", "expected"), [
    (lambda d: (d / "loop1").symlink_to("loop2") or (d / "loop2").symlink_to("loop1") or "loop1",
     "loop1: symlink loop"),
    (lambda d: "a" * 300 + ".py", "cannot read (File name too long)"),
], ids=["symlink loop", "name too long"])
def test_unreadable_paths_are_one_clear_line(tmp_path, loads, make, expected):
    res = run(tmp_path, "fix", make(tmp_path), "fix average")
    one_line_error(res, expected)
    assert "internal error" not in res.stderr and loads == []


def test_hook_install_over_a_symlink_replaces_the_link_not_the_file_it_points_to(tmp_path):
    git(tmp_path, "init", "-q")
    shared = tmp_path / "shared-hook"
    shared.write_text("#!/bin/sh\necho shared\n")
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.symlink_to(shared)
    assert run(tmp_path, "hook", "install").exit_code == 2  # foreign: refused without --force
    res = run(tmp_path, "hook", "install", "--force", "-i", "fix it")
    assert res.exit_code == 0, res.stderr
    assert shared.read_text() == "#!/bin/sh\necho shared\n"
    assert not hook.is_symlink() and "check --staged" in hook.read_text() and os.access(hook, os.X_OK)
    assert run(tmp_path, "hook", "uninstall").exit_code == 0 and not hook.exists() and shared.exists()


def test_hook_over_a_dangling_link_or_a_folder(tmp_path):
    git(tmp_path, "init", "-q")
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.symlink_to(tmp_path / "gone")
    assert run(tmp_path, "hook", "uninstall").exit_code == 0 and hook.is_symlink()  # no hook git could run
    assert run(tmp_path, "hook", "install", "-i", "fix it").exit_code == 0 and "check --staged" in hook.read_text()
    assert not hook.is_symlink() and not (tmp_path / "gone").exists()  # not written through the link
    hook.unlink()
    hook.mkdir()
    for args in (["install", "--force"], ["uninstall"]):
        one_line_error(run(tmp_path, "hook", *args), "is a directory, not a hook")
    assert hook.is_dir()


def test_a_journal_that_cannot_be_a_folder_and_a_bad_model_make_nothing(tmp_path, loads):
    (tmp_path / "m.py").write_text(BUGGY)
    one_line_error(run(tmp_path, "fix", "m.py", "fix average", "--journal", "m.py"), "--journal m.py: cannot make")
    one_line_error(run(tmp_path, "fix", "m.py", "fix average", "--model", "nope", "--journal", "jdir"),
                   "model not found: nope")
    assert not (tmp_path / "jdir").exists() and (tmp_path / "m.py").read_text() == BUGGY
    one_line_error(run(tmp_path, "fix", "m.py", "fix average", "--model", ""), "--model is empty")


@pytest.mark.parametrize(("args", "expected"), [
    (["check", "m.py", "-i", ""], "the instruction is empty"),
    (["check", "m.py"], "no instruction: m.py is a file"),
    (["check", "--staged", "-i", "   "], "the instruction is empty"),
    (["fix", "m.py", "fix average", "--draft", "bogus"], "--draft: bad draft schedule 'bogus'"),
    (["fix", "m.py", "fix average", "--draft", "fixed:-1"], "--draft: bad draft schedule"),
    (["fix", "m.py", "fix average", "--draft", "adaptive:4,0.5,64,4"], "--draft: bad draft schedule"),
    (["fix", "m.py", "fix average", "--temperature", "inf"], "--temperature inf: give a finite number"),
    (["fix", "m.py", "fix average", "--path", "x.py"], "--path names stdin's file in the diff: it needs '-'"),
    (["fix", "-", "fix average", "--path", ""], "give a relative file name"),
    (["fix", "-", "fix average", "--path", "../../etc/x"], "give a relative file name"),
    (["fix", "m.py", "-", "fix average", "--path", "m.py"], "m.py: named twice"),
    # a probe (session 42): a rename of a name the file lacks ran the model over the whole file for 165 s
    (["fix", "m.py", "rename parse_config() to load_config() and update its callers"],
     "m.py: the instruction renames parse_config, which the file does not mention; nothing written"),
    (["check", "m.py", "-i", "Rename parse_config to load_config."], "which the file does not mention"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_flags_and_instructions_fail_before_the_model(tmp_path, loads, args, expected):
    git(tmp_path, "init", "-q")
    (tmp_path / "m.py").write_text(BUGGY)
    git(tmp_path, "add", "m.py")
    one_line_error(run(tmp_path, *args, input=BUGGY), expected)
    assert loads == [] and (tmp_path / "m.py").read_text() == BUGGY


WRAPPER = """LIMIT = 70


class Wrapper:
    width: int = LIMIT

    def _split(self, text):
        return text.split()

    def _split_chunks(self, text):
        return self._split(text.strip())


class Reader:
    def chunks(self, text):
        return [text]
"""


@pytest.mark.parametrize(("instruction", "expected"), [
    ("Rename the method _split to _split_chunks and update its callers.",
     "w.py: _split_chunks is already defined beside _split (line 10): renamed, _split would define it twice"),
    ("Rename Wrapper to LIMIT.", "w.py: LIMIT is already defined beside Wrapper (line 1)"),
    ("Rename the method _split to width.", "w.py: width is already defined beside _split (line 5)"),
])
def test_a_rename_onto_a_name_defined_beside_it_fails_before_the_model(tmp_path, loads, instruction, expected):
    """A probe (session 44): textwrap's `_split` renamed to the `_split_chunks` its class already has ran the model
    past its token budget (57 s) to an error that named no cause."""
    (tmp_path / "w.py").write_text(WRAPPER)
    one_line_error(run(tmp_path, "fix", "w.py", instruction), expected)
    assert loads == [] and (tmp_path / "w.py").read_text() == WRAPPER


def test_a_rename_onto_a_name_of_another_scope_runs_the_model(tmp_path, loads):
    """`Reader.chunks` is no clash for a `Wrapper` method renamed `chunks`: the two classes are two scopes."""
    (tmp_path / "w.py").write_text(WRAPPER)
    run(tmp_path, "fix", "w.py", "Rename the method _split to chunks and update its callers.")
    assert loads != []


@pytest.mark.parametrize(("file", "text", "expected"), [
    ("pyproject.toml", "[tool]\neditllm = 5\n", "[tool.editllm] must be a table"),
    (".editllm.toml", "include = [1]\n", "setting 'include' must be a list of strings"),
    (".editllm.toml", "max_file_size = -5\n", "setting 'max_file_size' must be at least 1"),
    (".editllm.toml", "max_file_size = true\n", "setting 'max_file_size' must be int"),
])
def test_config_values_of_the_wrong_kind_are_one_line(tmp_path, loads, file, text, expected):
    git(tmp_path, "init", "-q")
    (tmp_path / file).write_text(text)
    (tmp_path / "m.py").write_text(BUGGY)
    git(tmp_path, "add", "m.py")
    one_line_error(run(tmp_path, "check", "--staged", "-i", "fix average"), expected)
    assert loads == []


def test_a_hook_linked_to_a_folder_is_foreign_and_force_replaces_the_link(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "hooks-dir").mkdir()
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.symlink_to(tmp_path / "hooks-dir")
    one_line_error(run(tmp_path, "hook", "uninstall"), "was not written by editllm")
    one_line_error(run(tmp_path, "hook", "install"), "use --force")
    assert run(tmp_path, "hook", "install", "--force", "-i", "fix it").exit_code == 0
    assert not hook.is_symlink() and "check --staged" in hook.read_text() and (tmp_path / "hooks-dir").is_dir()


def test_a_symlink_out_of_its_repository_is_refused(tmp_path, loads):
    (tmp_path / "outside.py").write_text(BUGGY)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "link.py").symlink_to(tmp_path / "outside.py")
    one_line_error(run(repo, "fix", "link.py", "fix average", "--apply"), "link.py: a symlink to ")
    assert (tmp_path / "outside.py").read_text() == BUGGY and loads == []


def test_files_of_one_name_in_two_repositories_are_not_named_twice(tmp_path, loads):
    """A nested repository's m.py and the outer one's are two files, both edited (only stdin's --path may
    not repeat a file)."""
    git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    git(tmp_path / "sub", "init", "-q")
    for folder in (tmp_path, tmp_path / "sub"):
        (folder / "m.py").write_text(BUGGY)
    res = run(tmp_path, "fix", "m.py", "sub/m.py", "fix average", "--apply")
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "m.py").read_text() == FIXED == (tmp_path / "sub" / "m.py").read_text()


def test_a_long_instruction_without_files_is_a_usage_error(tmp_path, loads):
    one_line_error(run(tmp_path, "check", "x" * 300), "name files to check, or use --staged")


def test_a_multi_file_apply_is_written_whole_or_not_at_all(tmp_path, monkeypatch, scripted_lm):
    """Each file used to be written in turn: a full disk or an unwritable folder met at the second file left
    the first written (exit 2, half an edit). Now every new text is staged beside its file first; a failure
    there writes nothing and leaves no temp file."""
    import os

    from editllm.editor import diff

    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(BUGGY)
    edits = EditSession(scripted_lm(FIXED + "```\n")).edit(["a.py", "b.py"], "fix average")
    real = diff._stage

    def stage(path, data, src, st):
        if src.path == "b.py":
            raise OSError(28, "No space left on device")
        return real(path, data, src, st)

    monkeypatch.setattr(diff, "_stage", stage)
    with pytest.raises(EditError, match=r"^b.py: cannot write \(No space left on device\); nothing written$"):
        write_edits(edits)
    assert (tmp_path / "a.py").read_text() == BUGGY == (tmp_path / "b.py").read_text()
    assert sorted(os.listdir(tmp_path)) == ["a.py", "b.py"]
    monkeypatch.setattr(diff, "_stage", real)
    replace = os.replace

    def rename(tmp, path):  # a rename that fails (the folder changed under us): what was written is said
        if str(path).endswith("b.py"):
            raise OSError(13, "Permission denied")
        replace(tmp, path)

    monkeypatch.setattr(diff.os, "replace", rename)
    with pytest.raises(EditError, match=r"^b.py: cannot write \(Permission denied\) \(1 file\(s\) before it were"):
        write_edits(edits)
    assert (tmp_path / "a.py").read_text() == FIXED and sorted(os.listdir(tmp_path)) == ["a.py", "b.py"]


def test_a_change_that_keeps_the_size_and_mtime_is_not_overwritten(tmp_path, monkeypatch, scripted_lm):
    """A change made while the model ran, of the same size within the mtime's granularity (or with the
    mtime put back), was overwritten: size and mtime were all that was compared."""
    import os

    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    edits = EditSession(scripted_lm(FIXED + "```\n")).edit(["m.py"], "fix average")
    st = (tmp_path / "m.py").stat()
    (tmp_path / "m.py").write_text(BUGGY.replace("xs", "ys"))  # the user's edit, same size
    os.utime(tmp_path / "m.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(EditError, match=r"^m.py: changed on disk while editing; nothing written$"):
        write_edits(edits)
    assert (tmp_path / "m.py").read_text() == BUGGY.replace("xs", "ys")


def test_a_nested_repositorys_file_is_named_from_the_working_directorys_repository(tmp_path, loads):
    """Run from the outer repository, a file of a nested one was named from its own root (`a/m.py`): `git
    apply` where the user is patched the outer repository's m.py. Files of two sibling repositories, each
    named from its own root, would be two sections of one name: refused, nothing edited."""
    outer, sibling = tmp_path / "outer", tmp_path / "sibling"
    inner = outer / "vendor" / "lib"
    for folder in (outer, inner, sibling):
        folder.mkdir(parents=True, exist_ok=True)
        git(folder, "init", "-q")
        (folder / "m.py").write_text(BUGGY)
    res = run(outer, "fix", "vendor/lib/m.py", "fix average")
    assert res.exit_code == 0 and res.stdout.startswith("diff --git a/vendor/lib/m.py b/vendor/lib/m.py\n")
    subprocess.run(["git", "apply"], cwd=outer, input=res.stdout, text=True, check=True)
    assert (inner / "m.py").read_text() == FIXED and (outer / "m.py").read_text() == BUGGY
    (inner / "m.py").write_text(BUGGY)
    res = run(inner, "fix", "m.py", "fix average")  # from inside the nested one: named from there
    assert res.exit_code == 0 and res.stdout.startswith("diff --git a/m.py b/m.py\n")
    one_line_error(run(outer, "fix", "m.py", "../sibling/m.py", "fix average"), "both would be m.py in the diff")
    assert (sibling / "m.py").read_text() == BUGGY == (outer / "m.py").read_text()


def test_a_name_with_colons_is_printed_as_it_is(tmp_path, loads):
    """The stderr console turned `:fire:` into an emoji: the error named a file that does not exist."""
    one_line_error(run(tmp_path, "fix", "nope:fire:.py", "fix average"), "nope:fire:.py: ")
