"""training/distill.py: the checks that decide which rewrite-mode outputs become training data, the
streaming/resume plumbing (scripted model), and one real decoding call on the tiny random model."""

from __future__ import annotations

import json
import random
from itertools import islice

import pytest
from editllm.editor.edit import EditOptions
from editllm.editor.errors import EditError
from editllm.grammar import parse
from editllm.training.data import Example, read_jsonl
from editllm.training.distill import (
    TEMPLATES,
    Task,
    bug_task,
    candidates,
    distill,
    judge,
    python_tasks,
    rewrite,
    task_check,
)

MODULE = '''import os


def join(a, b):
    """Join two path parts."""
    return os.path.join(a, b)


def size(path):
    total = 0
    for name in os.listdir(path):
        total += os.path.getsize(join(path, name))
    return total


def count(path):
    """How many entries `path` holds."""
    entries = os.listdir(path)
    return len(entries)
'''
DOCUMENTED = MODULE.replace("    total = 0\n", '    """Total size of the files in `path`."""\n    total = 0\n', 1)
OPTS = EditOptions(mode="rewrite", focus=False)  # the scripted model writes the whole file


def docstring_task() -> Task:
    return Task("docstring", "Add a docstring to `size`.", MODULE, task_check("docstring", MODULE, "size"))


def run(scripted_lm, task: Task, output: str) -> str | None:
    """Rewrite mode on a model that writes `output`, then the checks."""
    text, complete, merged = rewrite(scripted_lm(output + "```\n"), "m.py", task.before, task.instruction, OPTS)
    return judge(task, "m.py", text, complete, merged)


def test_an_edit_that_does_what_was_asked_passes(scripted_lm):
    assert run(scripted_lm, docstring_task(), DOCUMENTED) is None


@pytest.mark.parametrize("output, reason", [
    (MODULE, "empty diff"),
    (MODULE.replace("total = 0", "total = 1"), "`size` has no docstring"),  # changed, but not what was asked
    (DOCUMENTED.replace("    ", "\t").replace("import os", "import os  # paths"), "rewrote too much"),
])
def test_each_check_refuses_its_failure(scripted_lm, output, reason):
    assert run(scripted_lm, docstring_task(), output) == reason


def test_output_that_no_longer_parses_is_refused_by_the_edit_itself(scripted_lm):
    """The editor refuses a Python file that parsed and no longer does (`wholefile.still_parses`), before the
    judge: the attempt is logged as an edit error and nothing is kept."""
    with pytest.raises(EditError, match="no longer valid Python"):
        run(scripted_lm, docstring_task(), DOCUMENTED.replace("return total", "return total +"))


def test_size_limits():
    """Rewrite's token budget rarely lets a file more than double; the check holds where it does."""
    task = docstring_task()
    assert judge(task, "m.py", DOCUMENTED + "# padding\n" * 400, True, False) == "size"
    assert judge(task, "m.py", "def size(path):\n    return 0\n", True, False) == "size"


def test_a_fragment_is_refused(scripted_lm):
    """The model wrote only the function: the editor merges it, distillation does not keep it."""
    fragment = DOCUMENTED[DOCUMENTED.index("def size"):DOCUMENTED.index("def count")].rstrip() + "\n"
    assert run(scripted_lm, docstring_task(), fragment) == "fragment"


def test_task_checks_test_the_kind_asked():
    renamed = MODULE.replace("def join(", "def join_path(").replace("getsize(join(", "getsize(join_path(")
    assert task_check("rename", MODULE, "join")(renamed) is None
    half = MODULE.replace("def join(", "def join_path(")  # the call site still says join
    assert task_check("rename", MODULE, "join")(half) is not None
    hinted = MODULE.replace("def size(path):", "def size(path: str) -> int:")
    assert task_check("type_hints", MODULE, "size")(hinted) is None
    assert task_check("type_hints", MODULE, "size")(DOCUMENTED) is not None
    raising = MODULE.replace("    total = 0\n", "    if not path:\n        raise ValueError('empty path')\n"
                             "    total = 0\n")
    assert task_check("error_handling", MODULE, "size")(raising) is None
    assert task_check("error_handling", MODULE, "size")(DOCUMENTED) is not None
    verbose = MODULE.replace("def count(path):", "def count(path, verbose=False):")
    assert task_check("argument", MODULE, "count")(verbose) is None
    assert task_check("argument", MODULE, "count")(DOCUMENTED) is not None
    assert task_check("logging", MODULE, "count")(MODULE.replace("    entries", "    log.debug(path)\n    entries")) \
        is None


def test_a_bug_by_symptom_passes_only_when_fixed_exactly(scripted_lm):
    import ast

    task = bug_task(MODULE, [f for f in ast.parse(MODULE).body if isinstance(f, ast.FunctionDef)], random.Random(1))
    assert task.before != MODULE and task.kind == "bug"
    assert run(scripted_lm, task, MODULE) is None
    assert run(scripted_lm, task, DOCUMENTED) == "bug not fixed exactly"


def test_candidates_suit_the_file_and_vary_wording():
    tasks = python_tasks(MODULE, random.Random(0))
    kinds = {t.kind for t in tasks}
    assert {"type_hints", "docstring", "rename", "error_handling", "bug"} <= kinds
    assert "`size`" in next(t.instruction for t in tasks if t.kind == "docstring")  # the one without a docstring
    assert "`join`" in next(t.instruction for t in tasks if t.kind == "rename")  # the only function called
    drawn = [t.instruction for _, _, t in islice(candidates(0, ["rich", "click"]), 200)]
    assert len(set(drawn)) > 50 and any(x in TEMPLATES["prose"] for x in drawn)
    assert drawn == [t.instruction for _, _, t in islice(candidates(0, ["rich", "click"]), 200)]


def test_distill_streams_and_resumes(scripted_lm, tmp_path):
    """One task passes, one fails; a second call redoes neither (the attempt log), the .gz holds one example."""
    lm = scripted_lm(DOCUMENTED + "```\n")
    tasks = [("pkg/m.py", "m.py", docstring_task()),
             ("pkg/m.py", "m.py", Task("type_hints", "Add type hints to `size`.", MODULE,
                                       task_check("type_hints", MODULE, "size")))]
    out = tmp_path / "d.jsonl.gz"
    assert distill(lm, 5, out, opts=OPTS, tasks=tasks) == {"kept": 1, "`size` has no annotations": 1}
    assert distill(lm, 5, out, opts=OPTS, tasks=tasks) == {}
    [ex] = read_jsonl(out)
    assert (ex.before, ex.after, ex.source) == (MODULE, DOCUMENTED, "distill:docstring:pkg/m.py")
    assert parse(ex.program) and len(out.with_name(out.name + ".attempts").read_text().splitlines()) == 2
    record = json.loads(__import__("gzip").open(out, "rt").readline())
    assert record["prompt"].endswith("<|im_start|>assistant\n") and "Add a docstring to `size`." in record["prompt"]


def test_a_resumed_run_keeps_what_a_killed_one_wrote(scripted_lm, tmp_path):
    """A run killed mid-stream leaves a .gz without its end (and maybe half a line); the next run appends
    after those lines, and every complete line of both runs reads back."""
    import gzip
    from dataclasses import asdict

    earlier = Example("m.py", "Add a docstring to `size`.", MODULE, DOCUMENTED, "distill:docstring:pkg/old.py").finish()
    out = tmp_path / "d.jsonl.gz"
    f = gzip.open(out, "wt", encoding="utf-8")
    f.write(json.dumps(asdict(earlier)) + "\n" + '{"path": "cut')
    f.flush()
    cut = out.read_bytes()  # what the disk held when the run was killed: no gzip trailer
    f.close()
    out.write_bytes(cut)
    assert read_jsonl(out) == [earlier]
    lm = scripted_lm(DOCUMENTED + "```\n")
    assert distill(lm, 5, out, opts=OPTS, tasks=[("pkg/m.py", "m.py", docstring_task())]) == {"kept": 1}
    assert [ex.source for ex in read_jsonl(out)] == ["distill:docstring:pkg/old.py", "distill:docstring:pkg/m.py"]
    assert gzip.decompress(out.read_bytes()).count(b"\n") == 2  # whole again: no partial line left behind


def test_distill_stops_at_n(scripted_lm, tmp_path):
    lm = scripted_lm(DOCUMENTED + "```\n")
    tasks = [("a/m.py", "m.py", docstring_task()), ("b/m.py", "m.py", docstring_task())]
    assert distill(lm, 1, tmp_path / "d.jsonl", opts=OPTS, tasks=tasks) == {"kept": 1}
    assert len(read_jsonl(tmp_path / "d.jsonl")) == 1


def test_distill_runs_the_real_pipeline_on_the_tiny_model(tiny_lm, tmp_path):
    """Public files, real decoding: the random model's output is refused, and the attempt is logged."""
    seen = []
    out = tmp_path / "d.jsonl.gz"
    outcomes = distill(tiny_lm, 1, out, packages=["idna"], opts=EditOptions(mode="rewrite", max_new_tokens=8),
                       max_attempts=2, on_attempt=lambda key, reason: seen.append((key, reason)))
    first = [f"{label}|{t.kind}|{t.instruction}" for label, _, t in islice(candidates(0, ["idna"]), 2)]
    assert [k for k, _ in seen] == first and sum(outcomes.values()) == 2 and "kept" not in outcomes
    assert all(reason.startswith("edit error: ") for _, reason in seen) and read_jsonl(out) == []


def test_train_data_distill_option(scripted_lm, tiny_model_dir, tmp_path, monkeypatch):
    """`editllm train data --distill N`: the model is loaded, distilled examples land in the cache beside
    --out (resumable) and in --out with their copy prompts; the eval guard still runs."""
    from editllm.cli.main import app
    from typer.testing import CliRunner

    lm = scripted_lm(DOCUMENTED + "```\n")
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: lm)
    tasks = [("pkg/m.py", "m.py", docstring_task()), ("pkg/n.py", "n.py", docstring_task())]
    monkeypatch.setattr("editllm.training.distill.candidates", lambda seed, packages=None: iter(tasks))
    out = tmp_path / "train.jsonl"
    result = CliRunner().invoke(app, ["train", "data", "--distill", "1", "--model", str(tiny_model_dir),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    [ex] = read_jsonl(out)
    assert ex.source == "distill:docstring:pkg/m.py" and json.loads(out.read_text())["prompt"]
    assert read_jsonl(tmp_path / "train.distill.jsonl.gz") == [ex]
