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


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def open_repo(start: Path | None = None):
    """The git repository containing `start` (default: the working directory), or None."""
    import git

    try:
        return git.Repo(start or Path.cwd(), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def repo_root(start: Path | None = None) -> Path | None:
    repo = open_repo(start)
    return Path(repo.working_tree_dir).resolve() if repo is not None and repo.working_tree_dir else None


def staged_paths(repo) -> list[str]:
    """Paths added, modified, renamed or copied in the index relative to HEAD (all, before a first
    commit); deletions are not edits and are left out."""
    if not repo.head.is_valid():  # no commits yet: everything in the index is staged
        return sorted({path for path, stage in repo.index.entries if stage == 0})
    paths = set()
    for d in repo.index.diff("HEAD", R=True):  # R: compare HEAD -> index, so a/b read naturally
        if d.deleted_file:
            continue
        paths.add(d.b_path)
    return sorted(paths)


def matches(path: str, include: list[str], exclude: list[str]) -> bool:
    """Glob filters on repo-relative paths (`*` crosses folders, as in fnmatch)."""
    if include and not any(fnmatch.fnmatch(path, g) for g in include):
        return False
    return not any(fnmatch.fnmatch(path, g) for g in exclude)


def staged_sources(repo, only: list[str] | None, include: list[str], exclude: list[str],
                   max_size: int) -> tuple[list[SourceFile], list[Skipped]]:
    """Staged files as SourceFiles read from their index blobs, and what was skipped and why."""
    sources, skipped = [], []
    root = Path(repo.working_tree_dir).resolve()
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
        entry = repo.index.entries.get((path, 0))
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
