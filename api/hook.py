"""The git pre-commit hook editllm writes: it runs `editllm check --staged` and blocks a commit on a
proposed change. A hook editllm did not write is never replaced or removed without being asked."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

from editllm.editor.errors import EditError

HOOK_MARK = "# installed by editllm hook install"
# What a blocked commit says under its diff: a probe (session 38) saw the diff alone (git says nothing of a failed
# hook), and the hook's advice, `git apply`, failed where the file had unstaged edits above the change
STOPPED = ("editllm: commit stopped: a change is proposed for the staged files (the diff above); take it with "
           "`editllm check --staged --apply` (or `git apply --cached`), review, `git add`, and commit again; "
           "commit without the check once with `git commit --no-verify`")


def hook_path(start: Path | None = None) -> Path:
    """Where git looks for the pre-commit hook, as git itself says (`rev-parse --git-path`): core.hooksPath
    with its `~` expanded, and a linked worktree's hooks in the main repository's folder."""
    from editllm.editor.gitio import open_repo

    repo = open_repo(start)
    if repo is None:
        raise EditError("not inside a git repository")
    if repo.bare:
        raise EditError("a bare repository has no commits made in it, so git never runs a pre-commit hook there")
    where = repo.git.rev_parse("--git-path", "hooks/pre-commit")
    return Path(where) if Path(where).is_absolute() else Path(repo.working_dir) / where


def _hook_text(path: Path) -> str | None:
    """The hook's text; None when there is none (a dangling symlink counts as none: git cannot run it)."""
    if path.is_symlink() and path.is_dir():
        return ""  # a link to a folder: not editllm's hook, and replacing the link (with --force) is safe
    if path.is_dir():
        raise EditError(f"{path} is a directory, not a hook; move it away first")
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EditError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def install_hook(instruction: str | None = None, force: bool = False, start: Path | None = None) -> Path:
    """Write the hook (with this interpreter, so it runs the same editllm); returns its path. It replaces
    the hook file itself, atomically: a symlinked hook (a hooks folder shared between repositories) becomes
    editllm's own file, and the file it pointed to is left as it was."""
    path = hook_path(start)
    old = _hook_text(path)
    if old is not None and HOOK_MARK not in old and not force:
        raise EditError(f"{path} exists and was not written by editllm; use --force to replace it")
    _refuse_no_instruction(instruction, start)
    # -P: the hook runs in the repository's top folder, whose own calendar.py or queue.py must not stand in
    # for the standard library's (nor run at every commit)
    command = [sys.executable, "-P", "-m", "editllm.cli.main", "check", "--staged", "--quiet"]
    if instruction:
        command += ["-i", instruction]
    text = ("#!/bin/sh\n"
            f"{HOOK_MARK}\n"
            "# Blocks the commit when editllm proposes a change to the staged files (exit 1): prints the diff\n"
            "# and says how to take it. Skip once: git commit --no-verify\n"
            f"{shlex.join(command)}\n"
            "status=$?\n"
            f'[ "$status" -eq 1 ] && echo {shlex.quote(STOPPED)} >&2\n'
            'exit "$status"\n')
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".pre-commit.", suffix=".editllm")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise EditError(f"{path}: cannot write the hook ({exc.strerror or exc})") from exc
    return path


def _refuse_no_instruction(instruction: str | None, start: Path | None) -> None:
    """A hook with no instruction, or an empty one, would refuse every commit: say so now, not at the next
    commit. Without `-i` the hook reads `instruction` from the config, as `check` does where git runs it (the
    repository's top folder)."""
    if instruction is not None:
        if not instruction.strip():
            raise EditError("--instruction is empty: the hook would refuse every commit")
        return
    from editllm.editor.config import load_config
    from editllm.editor.gitio import open_repo

    repo = open_repo(start)
    top = Path(repo.working_dir) if repo is not None and repo.working_dir else start
    configured = load_config(top).get("instruction")
    if not isinstance(configured, str) or not configured.strip():
        raise EditError("no instruction for the hook: pass -i TEXT, or set `instruction` in .editllm.toml "
                        "(or [tool.editllm] in pyproject.toml) first; without one it would refuse every commit")


def uninstall_hook(start: Path | None = None) -> Path | None:
    """Remove the hook if editllm wrote it; None when there was none. Refuses a foreign hook."""
    path = hook_path(start)
    old = _hook_text(path)
    if old is None:
        return None
    if HOOK_MARK not in old:
        raise EditError(f"{path} was not written by editllm; leaving it alone")
    path.unlink()
    return path
