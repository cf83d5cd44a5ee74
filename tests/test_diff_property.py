"""Issue 16: every diff editllm prints applies with the real tools and gives exactly the new bytes.

Random edits (CRLF, mixed endings, a UTF-8 BOM, no final newline, unicode, empty files, whole-file
rewrites) go through `checked_diff`, the path `fix` and `--apply` use, with `SourceFile`s as the CLI
builds them. The in-memory applier shares code with the diff writer, so the check here is
`git apply --check`, `patch --dry-run`, then applying with `git apply` and with `patch -p1`, each on
its own copy of the files. Many files go into one patch per tool call, so 1,000+ edits take seconds.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from editllm.editor.diff import checked_diff
from editllm.editor.source import BOM, SourceFile, restore_line_endings, split_lines
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("patch")), reason="needs git and patch")

LINES = st.sampled_from(["a", "b", "def f():", "    return 1", "", " ", "\t", "é ü 中文 🙂", "x = 'y'", "# c",
                         "\\ No newline", "--- a/x", "+++ b/y", "@@ -1 +1 @@", "-", "+", "\u2028", "a\x0cb"])
BATCHES, PER_BATCH = 25, 48  # 1,200 random edits


@st.composite
def texts(draw) -> str:
    lines = draw(st.lists(LINES, max_size=14))
    endings = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    text = "".join(line + (draw(st.sampled_from(["\n", "\r\n"])) if endings == "mixed" else endings) for line in lines)
    if text and draw(st.booleans()):
        text = text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")
    return text


@st.composite
def edit(draw) -> tuple[SourceFile, str]:
    """A source file as read from disk and the model-side text of an edit of it."""
    raw = draw(texts())
    src = SourceFile("x", raw, bom=draw(st.booleans()))
    lines = split_lines(src.text)
    if draw(st.integers(0, 9)) == 0:
        lines = split_lines(draw(texts()).replace("\r\n", "\n"))  # a whole different file
    for pos, op, line in draw(st.lists(st.tuples(st.integers(0, 14), st.sampled_from(["del", "ins", "rep"]), LINES),
                                       max_size=5)):
        pos = min(pos, len(lines))
        if op == "ins":
            lines.insert(pos, line + "\n")
        elif pos < len(lines):
            lines[pos:pos + 1] = [] if op == "del" else [line + "\n"]
    model_text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if draw(st.booleans()):
        model_text = model_text.removesuffix("\n")
    return src, restore_line_endings(src, model_text)


def _disk(src: SourceFile) -> bytes:
    return ((BOM if src.bom else "") + src.raw).encode("utf-8")


def _run(cmd: list[str], cwd: Path, patch: bytes) -> None:
    res = subprocess.run(cmd, cwd=cwd, input=patch, capture_output=True)
    assert res.returncode == 0, f"{' '.join(cmd)}: {res.stdout.decode()}{res.stderr.decode()}"


@settings(max_examples=BATCHES, deadline=None, database=None)
@given(st.lists(edit(), min_size=PER_BATCH, max_size=PER_BATCH))
def test_random_edits_apply_with_git_and_patch(tmp_path_factory, batch):
    changes = [(SourceFile(f"d{k % 3}/f{k}.txt", src.raw, src.bom), new) for k, (src, new) in enumerate(batch)]
    diff = checked_diff(changes).encode("utf-8")
    want = {src.path: ((BOM if src.bom else "") + new).encode("utf-8") for src, new in changes}
    base = tmp_path_factory.mktemp("repo")
    for tool in ("git", "patch"):
        work = base / tool
        for src, _ in changes:
            (work / src.path).parent.mkdir(parents=True, exist_ok=True)
            (work / src.path).write_bytes(_disk(src))
        if not diff:
            pass  # nothing changed anywhere: nothing to apply
        elif tool == "git":
            subprocess.run(["git", "init", "-q"], cwd=work, check=True)
            _run(["git", "apply", "--check"], work, diff)
            _run(["git", "apply"], work, diff)
        else:
            _run(["patch", "-p1", "--dry-run", "--quiet", "--binary", "--force"], work, diff)
            _run(["patch", "-p1", "--quiet", "--binary", "--force", "--no-backup-if-mismatch"], work, diff)
        for path, data in want.items():
            assert (work / path).read_bytes() == data, f"{tool}: {path}"
