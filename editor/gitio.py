"""Reading what git has staged, so a pre-commit check sees exactly what will be committed.

Staged blobs come from the index (GitPython), never from the working tree: unstaged edits must not
leak into the check. Entries a hook must not touch are skipped, each with a reason.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.source import SourceFile, check_name, source_from_text

SYMLINK, SUBMODULE = 0o120000, 0o160000
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\n"  # the blob stands for a file stored elsewhere


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def open_repo(start: Path | None = None):
    """The git repository containing `start` (default: the working directory), or None. With GIT_DIR set
    (a hook's environment, a bare repository of dotfiles with GIT_WORK_TREE) that repository, as git
    itself would take it, wherever `start` is."""
    import git

    try:
        if not os.environ.get("GIT_DIR"):
            return git.Repo(start or Path.cwd(), search_parent_directories=True)
        repo = git.Repo()  # GitPython reads GIT_DIR and GIT_WORK_TREE when given no path
        if repo.working_tree_dir is None and os.environ.get("GIT_WORK_TREE"):
            # but drops GIT_WORK_TREE when the repository is bare, where git takes it
            repo._working_tree_dir = os.path.abspath(os.environ["GIT_WORK_TREE"])
        return repo
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def staged_index(repo):
    """The index a commit is made from. `git commit -a` and `git commit PATH` hand their hook a temporary
    one in GIT_INDEX_FILE (relative to the hook's working directory, the top of the tree); GitPython's
    `repo.index` would read .git/index, which then holds the content before the commit's."""
    import git

    path = os.environ.get("GIT_INDEX_FILE")
    return git.IndexFile(repo, os.path.abspath(path)) if path else repo.index


def repo_root(start: Path | None = None) -> Path | None:
    repo = open_repo(start)
    return Path(repo.working_tree_dir).resolve() if repo is not None and repo.working_tree_dir else None


def staged_paths(repo) -> list[str]:
    """Paths added, modified, renamed or copied in the index relative to HEAD (all, before a first
    commit); deletions are not edits and are left out."""
    if not repo.head.is_valid():  # no commits yet: everything in the index is staged
        return sorted({path for path, stage in staged_index(repo).entries if stage == 0})
    # git itself, not GitPython's IndexFile.diff: that refuses any index but .git/index, and git reads
    # GIT_INDEX_FILE from the environment; renamed and copied files by their new names
    out = repo.git.diff("--cached", "--name-only", "-z", "--diff-filter=d", "HEAD")
    return sorted(p for p in out.split("\0") if p)


def matches(path: str, include: list[str], exclude: list[str]) -> bool:
    """Glob filters on repo-relative paths (`*` crosses folders, as in fnmatch)."""
    if include and not any(fnmatch.fnmatch(path, g) for g in include):
        return False
    return not any(fnmatch.fnmatch(path, g) for g in exclude)


def staged_sources(repo, only: list[str] | None, include: list[str], exclude: list[str],
                   max_size: int) -> tuple[list[SourceFile], list[Skipped]]:
    """Staged files as SourceFiles read from their index blobs, and what was skipped and why."""
    sources, skipped = [], []
    if not repo.working_tree_dir:
        raise EditError("--staged: a bare repository has no working tree (set GIT_WORK_TREE)")
    root = Path(repo.working_tree_dir).resolve()
    index = staged_index(repo)
    staged = staged_paths(repo)
    wanted = None
    if only:
        wanted = set()
        for p in only:
            try:
                rel = Path(p).resolve().relative_to(root).as_posix()
            except ValueError as exc:
                raise EditError(f"{p}: outside the repository {root}") from exc
            if rel not in staged:  # named by the user: say so, rather than "nothing to check"
                if not os.path.lexists(p):
                    raise EditError(f"{p}: no such file")
                skipped.append(Skipped(rel, "not staged"))
            wanted.add(rel)
    for path in staged:
        if wanted is not None and path not in wanted:
            continue
        if not matches(path, include, exclude):
            skipped.append(Skipped(path, "excluded by configuration"))
            continue
        try:
            check_name(path)
        except EditError:
            skipped.append(Skipped(path.encode("unicode_escape").decode("ascii"), "a control character in its name"))
            continue
        entry = index.entries.get((path, 0))
        if entry is None:
            skipped.append(Skipped(path, "unmerged"))
            continue
        if entry.mode == SUBMODULE:
            skipped.append(Skipped(path, "submodule"))
            continue
        if entry.mode == SYMLINK:
            skipped.append(Skipped(path, "symbolic link"))
            continue
        data = repo.odb.stream(entry.binsha).read()
        if data.startswith(LFS_POINTER):
            skipped.append(Skipped(path, "Git LFS pointer"))
            continue
        if len(data) > max_size:
            skipped.append(Skipped(path, f"larger than max_file_size ({len(data)} > {max_size} bytes)"))
            continue
        try:
            src = source_from_text(data, path)
        except EditError as exc:
            skipped.append(Skipped(path, str(exc).split(": ", 1)[-1]))
            continue
        disk = root / path
        # --apply writes a regular file only: a symlink there (the index holds a file) is not replaced
        writable = disk.is_file() and not disk.is_symlink()
        sources.append(SourceFile(src.path, src.raw, src.bom, disk if writable else None,
                                  *(_stat(disk) if writable else (None, None, None))))
    return sources, skipped


def _stat(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size, st.st_mode
