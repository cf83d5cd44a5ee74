"""The git workflow with real repositories (real `git`): staged checks, the hook, piping, config.

The model is the scripted fake wherever the decision matters (a test must force one specific edit);
each such test says so by using `fake_model` / EDITLLM_FAKE_SCRIPT.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from editllm.api import HOOK_MARK
from editllm.cli.main import app
from editllm.editor.gitio import open_repo, staged_paths
from typer.testing import CliRunner

TESTS = Path(__file__).resolve().parent
BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"
runner = CliRunner()


def git(repo: Path, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", **kw.pop("env", {})}
    return subprocess.run(["git", *args], cwd=repo, check=check, capture_output=True, text=True, env=env, **kw)


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    return tmp_path


@pytest.fixture
def fake_model(monkeypatch, scripted_lm):
    def use(text: str):
        monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: scripted_lm(text))

    return use


def invoke(cwd: Path, *args: str, input: str | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, list(args), input=input)
    finally:
        os.chdir(old)


def test_staged_check_ignores_unstaged_edits(repo, fake_model):
    (repo / "m.py").write_text(BUGGY)
    git(repo, "add", "m.py")
    (repo / "m.py").write_text(BUGGY + "UNSTAGED = 1\n")  # must not leak into the check
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "fix average")
    assert res.exit_code == 1, res.stderr
    assert "UNSTAGED" not in res.stdout and "+    return sum(xs) / len(xs)" in res.stdout
    assert (repo / "m.py").read_text() == BUGGY + "UNSTAGED = 1\n"


def test_check_apply_merges_into_unstaged_worktree_and_stages_nothing(repo, fake_model):
    (repo / "m.py").write_text(BUGGY)
    git(repo, "add", "m.py")
    (repo / "m.py").write_text(BUGGY + "\n\nUNSTAGED = 1\n")
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "--apply", "fix average")
    assert res.exit_code == 1, res.stderr
    assert (repo / "m.py").read_text() == FIXED + "\n\nUNSTAGED = 1\n"
    assert git(repo, "show", ":m.py").stdout == BUGGY  # the index is untouched
    # a probe (session 27): the hook failed with exit 1 and said nothing of what it wrote
    assert res.stderr.endswith("wrote m.py in the working tree (not staged: review, then git add)\n")


def test_check_exit_0_when_nothing_to_change(repo, fake_model):
    (repo / "m.py").write_text(FIXED)
    git(repo, "add", "m.py")
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "-i", "fix average")
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == "no change proposed\n"
    res = invoke(repo, "check", "--staged", "-i", "fix average", "--quiet")
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == ""


def test_staged_paths_renames_deletions_detached_and_unborn(repo):
    (repo / "a.py").write_text("a = 1\n" * 5)
    (repo / "c.py").write_text("c = 1\n")
    git(repo, "add", ".")
    assert staged_paths(open_repo(repo)) == ["a.py", "c.py"]  # no commits yet
    git(repo, "commit", "-qm", "init")
    git(repo, "mv", "a.py", "b.py")
    git(repo, "rm", "-q", "c.py")
    assert staged_paths(open_repo(repo)) == ["b.py"]
    git(repo, "commit", "-qm", "two")
    git(repo, "checkout", "-q", "--detach")
    (repo / "b.py").write_text("b = 2\n")
    git(repo, "add", "b.py")
    assert staged_paths(open_repo(repo)) == ["b.py"]


def test_skips_are_listed(repo, fake_model):
    (repo / "ok.py").write_text(FIXED)
    (repo / "bin.dat").write_bytes(b"\x00\x01\x02")
    (repo / "big.txt").write_text("x" * 300)
    os.symlink("ok.py", repo / "link.py")
    (repo / "pyproject.toml").write_text("[tool.editllm]\nmax_file_size = 200\nexclude = ['*.toml']\n")
    git(repo, "add", ".")
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "fix")
    assert res.exit_code == 0, res.stderr
    for line in ("skipped bin.dat: binary", "skipped big.txt: larger than max_file_size",
                 "skipped link.py: symbolic link", "skipped pyproject.toml: excluded by configuration"):
        assert line in res.stderr


def test_stdin_to_stdout_pipe_applies_with_patch(repo, fake_model):
    (repo / "m.py").write_text(BUGGY)
    fake_model(FIXED + "```\n")
    res = invoke(repo, "fix", "-", "fix average", "--path", "m.py", input=BUGGY)
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("diff --git a/m.py b/m.py")
    subprocess.run(["patch", "-p1", "--quiet"], cwd=repo, input=res.stdout, text=True, check=True)
    assert (repo / "m.py").read_text() == FIXED
    res = invoke(repo, "fix", "-", "fix average", input=BUGGY)
    assert "a/stdin b/stdin" in res.stdout


def test_diff_paths_are_relative_to_the_repo_root(repo, fake_model):
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "m.py").write_text(BUGGY)
    fake_model(FIXED + "```\n")
    res = invoke(sub, "fix", "m.py", "fix average")
    assert res.stdout.startswith("diff --git a/pkg/sub/m.py b/pkg/sub/m.py")
    git(repo, "apply", input=res.stdout)
    assert (sub / "m.py").read_text() == FIXED


def test_config_files_and_flags(repo):
    (repo / "pyproject.toml").write_text('[tool.editllm]\nmode = "rewrite"\nmodel = "bundled:0.5b"\n')
    (repo / ".editllm.toml").write_text('mode = "copy"\ninstruction = "fix typos"\n')
    res = invoke(repo, "config", "--model", "some/dir")
    assert res.exit_code == 0
    lines = {line.split()[0]: line for line in res.stdout.splitlines()}
    assert '"copy"' in lines["mode"] and ".editllm.toml" in lines["mode"]
    assert '"some/dir"' in lines["model"] and "command line" in lines["model"]
    assert '"fix typos"' in lines["instruction"] and "(default)" in lines["dtype"]
    (repo / ".editllm.toml").write_text("colour = 1\n")
    res = invoke(repo, "config")
    assert res.exit_code == 2 and "unknown editllm setting 'colour'" in res.stderr


def test_hook_install_refuses_foreign_and_uninstall_keeps_it(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\necho mine\n")
    res = invoke(repo, "hook", "install")
    assert res.exit_code == 2 and "--force" in res.stderr and hook.read_text() == "#!/bin/sh\necho mine\n"
    res = invoke(repo, "hook", "uninstall")
    assert res.exit_code == 2 and hook.exists()
    assert invoke(repo, "hook", "install", "--force", "-i", "fix it").exit_code == 0
    assert "check --staged" in hook.read_text() and os.access(hook, os.X_OK)
    assert invoke(repo, "hook", "uninstall").exit_code == 0 and not hook.exists()


def test_hook_blocks_commit_then_passes_after_git_apply(repo, tmp_path_factory, tokenizer_dir):
    """Real `git commit` runs the hook in a subprocess; EDITLLM_FAKE_SCRIPT makes its model the scripted
    fake (via tests/sitecustomize.py), because this test must force one specific edit."""
    script = tmp_path_factory.mktemp("script") / "out.txt"
    script.write_text(FIXED + "```\n")
    env = {"PYTHONPATH": f"{TESTS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "EDITLLM_FAKE_SCRIPT": str(script), "EDITLLM_FAKE_TOKENIZER": str(tokenizer_dir)}
    assert invoke(repo, "hook", "install", "-i", "fix average").exit_code == 0
    (repo / "m.py").write_text(BUGGY)
    git(repo, "add", "m.py")
    blocked = git(repo, "commit", "-qm", "add m", check=False, env=env)
    assert blocked.returncode != 0, blocked.stderr
    shown = blocked.stderr  # git passes a hook's stdout to the user's terminal on stderr
    assert "+    return sum(xs) / len(xs)" in shown
    assert shown.rstrip().endswith("commit without the check once with `git commit --no-verify`")  # how to go on
    assert git(repo, "rev-parse", "--verify", "HEAD", check=False).returncode != 0  # nothing committed
    git(repo, "apply", input=shown)
    git(repo, "add", "m.py")
    ok = git(repo, "commit", "-qm", "add m", check=False, env=env)
    assert ok.returncode == 0, ok.stderr + ok.stdout
    assert "commit stopped" not in ok.stderr
    assert git(repo, "show", "HEAD:m.py").stdout == FIXED


def test_pre_commit_manifest_loads():
    clientlib = pytest.importorskip("pre_commit.clientlib")
    hooks = clientlib.load_manifest(str(TESTS.parent / ".pre-commit-hooks.yaml"))
    assert hooks[0]["id"] == "editllm-check" and hooks[0]["language"] == "python"
    assert hooks[0]["entry"].startswith("editllm check --staged")


def test_check_outside_git_is_a_clean_error(tmp_path):
    res = invoke(tmp_path, "check", "--staged", "x")
    assert res.exit_code == 2 and "not inside a git repository" in res.stderr
    assert sys.executable  # the hook command uses this interpreter


def test_model_commands_read_the_config(repo):
    (repo / ".editllm.toml").write_text('model = "some/dir"\n')
    res = invoke(repo, "model", "info")
    assert res.exit_code == 0 and '"model": "some/dir"' in res.stdout
    res = invoke(repo, "model", "info", "other/dir")
    assert res.exit_code == 0 and '"model": "other/dir"' in res.stdout


# --- the hook in the git situations people commit from (session 20's audit) --------------------------------


def hook_env(tmp_path_factory, tokenizer_dir, text: str = FIXED) -> dict:
    """The environment of a real `git commit` whose hook's model is the scripted fake writing `text`."""
    script = tmp_path_factory.mktemp("script") / "out.txt"
    script.write_text(text + "```\n")
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)  # no empty entry: the cwd
    return {"PYTHONPATH": path, "EDITLLM_FAKE_SCRIPT": str(script), "EDITLLM_FAKE_TOKENIZER": str(tokenizer_dir)}


@pytest.mark.parametrize("how", [["-a"], ["m.py"]])
def test_hook_checks_what_commit_a_and_commit_path_commit(repo, tmp_path_factory, tokenizer_dir, how):
    """`git commit -a` / `git commit PATH` hand the hook a temporary index (GIT_INDEX_FILE); .git/index still
    holds the old, correct content, so reading it let the bug through."""
    (repo / "m.py").write_text(FIXED)
    git(repo, "add", "m.py")
    git(repo, "commit", "-qm", "init")
    assert invoke(repo, "hook", "install", "-i", "fix average").exit_code == 0
    (repo / "m.py").write_text(BUGGY)
    args = ["commit", "-qm", "bug", *how] if how == ["-a"] else ["commit", "-qm", "bug", "--", *how]
    blocked = git(repo, *args, check=False, env=hook_env(tmp_path_factory, tokenizer_dir))
    assert blocked.returncode != 0 and "+    return sum(xs) / len(xs)" in blocked.stderr, blocked.stderr
    assert git(repo, "show", "HEAD:m.py").stdout == FIXED


def test_check_staged_reads_git_index_file(repo, fake_model, monkeypatch):
    """The other way round: .git/index holds a stale bug, the commit's own index the fixed file."""
    (repo / "m.py").write_text(BUGGY)
    git(repo, "add", "m.py")
    (repo / "m.py").write_text(FIXED)
    other = repo / ".git" / "next-index.lock"
    other.write_bytes((repo / ".git" / "index").read_bytes())
    git(repo, "add", "m.py", env={"GIT_INDEX_FILE": str(other)})
    monkeypatch.setenv("GIT_INDEX_FILE", str(other))
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "-i", "fix average")
    assert res.exit_code == 0 and res.stdout == "", res.stdout


def test_a_module_of_the_repository_does_not_shadow_the_standard_library(repo, tmp_path_factory, tokenizer_dir):
    """The hook runs from the top folder: `python -m` would import its calendar.py instead of the stdlib's."""
    assert invoke(repo, "hook", "install", "-i", "fix average").exit_code == 0
    (repo / "calendar.py").write_text("EVENTS = []\n")
    (repo / "m.py").write_text(FIXED)
    git(repo, "add", "m.py")
    ok = git(repo, "commit", "-qm", "clean", check=False, env=hook_env(tmp_path_factory, tokenizer_dir))
    assert ok.returncode == 0, ok.stderr


def test_check_staged_in_a_dotfiles_repository(tmp_path, fake_model, monkeypatch):
    """A bare repository with GIT_DIR and GIT_WORK_TREE (yadm, vcsh, `alias config=git --git-dir=...`)."""
    home, dot = tmp_path / "home", tmp_path / "dot.git"
    home.mkdir()
    git(tmp_path, "init", "-q", "--bare", str(dot))
    monkeypatch.setenv("GIT_DIR", str(dot))
    monkeypatch.setenv("GIT_WORK_TREE", str(home))
    (home / "m.py").write_text(BUGGY)
    git(home, "add", "m.py")
    fake_model(FIXED + "```\n")
    res = invoke(home, "check", "--staged", "-i", "fix average")
    assert res.exit_code == 1 and "+++ b/m.py" in res.stdout, res.stderr


def test_check_staged_in_a_bare_repository_is_one_clear_line(tmp_path):
    git(tmp_path, "init", "-q", "--bare", "b.git")
    res = invoke(tmp_path / "b.git", "check", "--staged", "-i", "fix")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "bare repository" in res.stderr, res.stderr


@pytest.mark.parametrize("given", [None, "", "   "])
def test_hook_install_without_an_instruction_is_refused(repo, given):
    """A hook with no instruction (none given, none in the config) or an empty one refused every commit."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    res = invoke(repo, "hook", "install", *([] if given is None else ["-i", given]))
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1 and not hook.exists()
    assert ("no instruction" if given is None else "empty") in res.stderr
    (repo / ".editllm.toml").write_text('instruction = "fix obvious bugs"\n')  # the config's is enough
    assert invoke(repo, "hook", "install").exit_code == 0 and hook.exists()


def test_hook_install_in_a_bare_repository_is_refused(tmp_path, monkeypatch):
    """git runs no pre-commit hook in a bare repository: writing one there helped no one."""
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "b.git")], check=True)
    res = invoke(tmp_path / "b.git", "hook", "install", "-i", "fix it")
    assert res.exit_code == 2 and "bare repository" in res.stderr
    assert not (tmp_path / "b.git" / "hooks" / "pre-commit").exists()


def test_hook_install_from_a_linked_worktree_writes_the_hook_git_runs(repo, tmp_path):
    (repo / "a").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    git(repo, "worktree", "add", "-q", str(tmp_path.parent / f"{tmp_path.name}-wt"))
    wt = tmp_path.parent / f"{tmp_path.name}-wt"
    assert invoke(wt, "hook", "install", "-i", "fix").exit_code == 0
    assert HOOK_MARK in (repo / ".git" / "hooks" / "pre-commit").read_text()
    assert invoke(wt, "hook", "uninstall").exit_code == 0
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


def test_hook_install_expands_a_tilde_in_core_hooks_path(repo, tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    git(repo, "config", "core.hooksPath", "~/githooks")
    assert invoke(repo, "hook", "install", "-i", "fix").exit_code == 0
    assert (home / "githooks" / "pre-commit").is_file() and not (repo / "~").exists()


def test_check_staged_apply_takes_unstaged_lines_above_the_edit(repo, fake_model):
    """Partial staging: an unstaged import above the function moves the edit down a line; it still applies
    (as with `patch` and `git apply`), and the unstaged line stays."""
    body = "".join(f"x{i} = {i}\n" for i in range(20))
    (repo / "m.py").write_text(body + BUGGY)
    git(repo, "add", "m.py")
    (repo / "m.py").write_text("import sys\n" + body + BUGGY)
    fake_model(body + FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "--apply", "-i", "fix average", "--mode", "rewrite")
    assert res.exit_code == 1, res.stderr
    assert (repo / "m.py").read_text() == "import sys\n" + body + FIXED
    assert git(repo, "show", ":m.py").stdout == body + BUGGY  # the index is not touched


def test_check_staged_apply_still_refuses_an_unstaged_change_on_the_edited_lines(repo, fake_model):
    (repo / "m.py").write_text(BUGGY)
    git(repo, "add", "m.py")
    (repo / "m.py").write_text(BUGGY.replace("xs) - 1", "xs) - 2"))
    fake_model(FIXED + "```\n")
    res = invoke(repo, "check", "--staged", "--apply", "-i", "fix average", "--mode", "rewrite")
    assert res.exit_code == 2 and "conflicts with unstaged changes" in res.stderr
    assert (repo / "m.py").read_text() == BUGGY.replace("xs) - 1", "xs) - 2")


def test_check_staged_with_files_and_no_instruction_is_refused(repo, fake_model):
    """The pre-commit framework passes the staged files; without `args: ["-i", ...]` the last one used to
    become the instruction, and went unchecked."""
    for name in ("a.py", "b.py"):
        (repo / name).write_text(BUGGY)
    git(repo, "add", ".")
    res = invoke(repo, "check", "--staged", "a.py", "b.py")
    assert res.exit_code == 2 and "no instruction: b.py is a file" in res.stderr
    res = invoke(repo, "fix", "a.py", "b.py")
    assert res.exit_code == 2 and "no instruction: b.py is a file" in res.stderr


def test_a_staged_git_lfs_pointer_is_skipped(repo, fake_model):
    (repo / "big.txt").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64
                                  + "\nsize 123\n")
    git(repo, "add", ".")
    res = invoke(repo, "check", "--staged", "-i", "fix")
    assert res.exit_code == 0 and "skipped big.txt: Git LFS pointer" in res.stderr


@pytest.mark.parametrize("stdout_too", [False, True])
def test_a_run_on_a_terminal_finishes(tmp_path, tmp_path_factory, tokenizer_dir, stdout_too):
    """stderr on a terminal shows the progress spinner, whose live display puts rich's proxy in sys.stderr;
    the console wrote to sys.stderr, so to that proxy, which printed to the console: every interactive run
    hung forever (SIGTERM did not stop it) until session 25."""
    import pty
    import select
    import time

    (tmp_path / "m.py").write_text(BUGGY)
    env = {**os.environ, **hook_env(tmp_path_factory, tokenizer_dir), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    out = tmp_path / "out.diff"
    with out.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "editllm.cli.main", "fix", "m.py", "fix average"], cwd=tmp_path,
                                env=env, stdin=slave, stdout=slave if stdout_too else sink, stderr=slave)
        os.close(slave)
        seen, deadline = b"", time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:  # the terminal's other end closed: the process is exiting
                    break
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"hung on a terminal; it showed {seen[-300:]!r}")
    os.close(master)
    assert code == 0
    diff = seen.decode("utf-8", "replace") if stdout_too else out.read_text()
    assert "+    return sum(xs) / len(xs)" in diff
