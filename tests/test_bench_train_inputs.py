"""`bench` and `train data|run|eval` on bad input: one line on stderr and exit 2, before the model loads where
the input can be checked up front, and outputs written whole or not at all (session 21's audit). No model
runs here: `load` is replaced by one that records the call and fails the test if reached."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from editllm.cli.main import app
from test_file_conventions import run
from test_input_safety import one_line_error as refused  # one line on stderr, exit 2, nothing on stdout

CASE = {"id": "c1", "path": "m.py", "instruction": "fix add", "before": "def add(a, b):\n    return a - b\n",
        "after": "def add(a, b):\n    return a + b\n", "tests": []}
EXAMPLE = {"path": "m.py", "instruction": "fix add", "before": "x = 1\n", "after": "x = 2\n", "source": "git:abc"}


@pytest.fixture
def loads(monkeypatch) -> list:
    """Every model load the CLI asks for, recorded; reaching one is a failure of an up-front check."""
    seen: list = []

    def load(*args, **kwargs):
        seen.append(args)
        raise AssertionError("the model loaded")

    monkeypatch.setattr("editllm.cli.main.load", load)
    return seen


@pytest.fixture
def model(tmp_path) -> Path:
    """A folder `--model` accepts (a config.json) that is never loaded."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def cases_file(tmp_path: Path, *lines: str | bytes, name: str = "cases.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def bench(tmp_path: Path, model: Path, *args: str, cases: Path | None = None):
    cases = cases or cases_file(tmp_path, json.dumps(CASE))
    return run(tmp_path, "bench", "--model", str(model), "--device", "cpu", "--dtype", "float32", "--mode", "rewrite",
               "--cases", str(cases), *args)


def limited(code: str, limit: int = 8192) -> subprocess.CompletedProcess:
    """`code` run by Python under `ulimit -f` of `limit` bytes (a write past it fails with EFBIG)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return subprocess.run([sys.executable, "-c", code], preexec_fn=cap, capture_output=True, text=True, timeout=120)


# --- 1. outputs written whole ----------------------------------------------------------------------------

def test_train_data_output_past_a_file_size_limit_leaves_the_earlier_file_whole(tmp_path):
    out = tmp_path / "train.jsonl"
    out.write_text("earlier\n")
    done = limited("from pathlib import Path\nfrom editllm.training.data import Example, write_jsonl\n"
                   f"write_jsonl([Example('m.py', 'fix', 'x' * 1000, 'y', 's')] * 50, Path({str(out)!r}))\n")
    assert done.returncode != 0 and "File too large" in done.stderr
    assert out.read_text() == "earlier\n" and os.listdir(tmp_path) == ["train.jsonl"]


def test_bench_report_past_a_file_size_limit_leaves_the_earlier_report_whole(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.json").write_text("{}\n")
    records = [{"id": f"c{i}", "mode": "rewrite", "text": "t", "note": "x" * 500} for i in range(40)]
    done = limited("from pathlib import Path\nfrom editllm.bench.report import write_report\n"
                   f"write_report({{'records': {records!r}}}, Path({str(out)!r}), draw=False)\n")
    assert done.returncode != 0 and "File too large" in done.stderr
    assert (out / "results.json").read_text() == "{}\n" and os.listdir(out) == ["results.json"]


def test_a_bench_report_leaves_no_plot_of_an_earlier_run(tmp_path):
    from editllm.bench.report import write_report

    kernel = [{"tokens": 8, "one_forward_ms": 1.0, "single_steps_ms": 8.0, "ratio": 8.0, "estimated": False}]
    write_report({"records": [], "kernel": kernel}, tmp_path)
    assert (tmp_path / "kernel.png").is_file()
    write_report({"records": []}, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["outputs.jsonl", "report.md", "results.json"]


# --- 2. --reuse ------------------------------------------------------------------------------------------

def test_bench_reuse_of_a_damaged_folder_names_the_file_before_the_model_loads(tmp_path, model, loads):
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "results.json").write_text('{"records": [')
    refused(bench(tmp_path, model, "--reuse", str(earlier), "--out", str(tmp_path / "o")),
            f"{earlier / 'results.json'}: not valid JSON")
    (earlier / "results.json").write_text('{"records": [{"id": "c1", "mode": "rewrite"}]}')
    (earlier / "outputs.jsonl").write_text('{"id": "c1", "mode": "rewrite", "text": "x"}\n{"id"\n')
    refused(bench(tmp_path, model, "--reuse", str(earlier), "--out", str(tmp_path / "o")),
            f"{earlier / 'outputs.jsonl'}:2: not valid JSON")
    assert loads == [] and not (tmp_path / "o").exists()


def test_bench_reuse_of_no_folder_is_refused_before_the_model_loads(tmp_path, model, loads):
    refused(bench(tmp_path, model, "--reuse", str(tmp_path / "nothing")), "no such folder")
    assert loads == []


# --- 3. --out --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["file", "under a file", "empty"])
def test_bench_out_that_cannot_be_a_folder_is_refused_before_the_model_loads(tmp_path, model, loads, where):
    (tmp_path / "f").write_text("mine\n")
    out = {"file": "f", "under a file": "f/o", "empty": ""}[where]
    refused(bench(tmp_path, model, "--out", out), "--out")
    assert loads == [] and (tmp_path / "f").read_text() == "mine\n"


@pytest.mark.parametrize("out", [".", ""])
def test_train_data_out_that_is_a_folder_is_refused(tmp_path, out):
    refused(run(tmp_path, "train", "data", "--out", out, "--synthetic", "1"), "a folder, not a file")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("out", ["taken", ""])
def test_train_run_out_that_cannot_be_a_folder_is_refused_before_the_model_loads(tmp_path, model, loads, out):
    (tmp_path / "taken").write_text("mine\n")
    data = cases_file(tmp_path, json.dumps(EXAMPLE), name="d.jsonl")
    refused(run(tmp_path, "train", "run", "--model", str(model), "--data", str(data), "--out", out), "--out")
    assert loads == [] and (tmp_path / "taken").read_text() == "mine\n"


# --- 4. case files and flags -----------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "says"), [
    (b"[1, 2]", "a JSON object expected"),
    (b'{"id": "c\xff"}', "not UTF-8"),
    (json.dumps(CASE | {"before": 5}).encode(), "`before` must be a string, not a number"),
    (json.dumps(CASE | {"tests": "notalist"}).encode(), "`tests` must be a list of tests, not a string"),
    (json.dumps(CASE).encode(), "case id 'c1' repeats the case of"),
])
def test_a_malformed_case_line_is_named_before_the_model_loads(tmp_path, model, loads, line, says):
    cases = cases_file(tmp_path, json.dumps(CASE), line)
    res = bench(tmp_path, model, cases=cases)
    refused(res, f"{cases}:2: ")
    assert says in res.stderr and loads == []


def test_a_case_file_named_twice_is_read_once(tmp_path):
    from editllm.bench.cases import load_cases

    cases = cases_file(tmp_path, json.dumps(CASE))
    assert [c.id for c in load_cases([cases, tmp_path / "." / "cases.jsonl"])] == ["c1"]


@pytest.mark.parametrize(("args", "says"), [
    (["--mode", ""], "no mode given"),
    (["--layout", "bogus"], "unknown --layout 'bogus'"),
    (["--ngram-flags", '"unclosed'], "--ngram-flags"),
])
def test_bad_bench_flags_are_refused_before_the_model_loads(tmp_path, model, loads, args, says):
    refused(bench(tmp_path, model, *args), says)
    assert loads == []


def test_a_mode_named_twice_runs_once_with_a_note(tmp_path, model, monkeypatch):
    from editllm.editor.errors import EditError

    def load(*args, **kwargs):
        raise EditError("stop here")

    monkeypatch.setattr("editllm.cli.main.load", load)
    res = run(tmp_path, "bench", "--model", str(model), "--device", "cpu", "--mode", "oracle,oracle",
              "--cases", str(cases_file(tmp_path, json.dumps(CASE))))
    assert "--mode oracle\n" in res.stderr and "stop here" in res.stderr


def test_bench_help_lists_every_layout():
    import typer
    from editllm.editor.prompt import LAYOUTS

    [layout] = [p for p in typer.main.get_command(app).commands["bench"].params if p.name == "layout"]
    assert all(name in layout.help for name in LAYOUTS)


# --- 5. stdout closed ------------------------------------------------------------------------------------

def test_bench_with_stdout_closed_is_refused_before_the_model_loads(tmp_path, model):
    cases = cases_file(tmp_path, json.dumps(CASE))
    done = subprocess.run(["sh", "-c", f'exec "$0" -m editllm.cli.main bench --model {model} --cases {cases} '
                           f'--out {tmp_path / "o"} >&-', sys.executable], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr == "editllm: error: stdout is closed: nowhere to print the report " \
                                                   "(redirect it)\n"
    assert not (tmp_path / "o").exists()


# --- 6. train data --repo --------------------------------------------------------------------------------

def test_train_data_repo_that_cannot_be_mined_is_one_line(tmp_path):
    (tmp_path / "plain").mkdir()
    refused(run(tmp_path, "train", "data", "--out", "d.jsonl", "--repo", "plain"), "not a git repository")
    refused(run(tmp_path, "train", "data", "--out", "d.jsonl", "--repo", "nothing"), "no such folder")
    subprocess.run(["git", "init", "-q", "empty"], cwd=tmp_path, check=True)
    refused(run(tmp_path, "train", "data", "--out", "d.jsonl", "--repo", "empty"), "no commits yet")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=repo, check=True)
    refused(run(tmp_path, "train", "data", "--out", "d.jsonl", "--repo", "repo", "--rev-range", "bogus..x"),
            "--rev-range bogus..x in repo: bad revision 'bogus..x'")
    assert not (tmp_path / "d.jsonl").exists()


# --- 7. train run --data and a resumed --out -------------------------------------------------------------

@pytest.mark.parametrize(("name", "data", "says"), [
    ("d.jsonl", b'{"path": "m.py"\n', ":1: not a training example (not JSON"),
    ("d.jsonl", json.dumps(CASE).encode() + b"\n", ":1: not a training example (no `source`"),
    ("d.jsonl", json.dumps(EXAMPLE).encode() + b"\n" + json.dumps(EXAMPLE).encode().replace(b"m.py", b"m\xff.py")
     + b"\n", ":2: not UTF-8 text"),
    ("d.jsonl.gz", json.dumps(EXAMPLE).encode() + b"\n", ": not a gzip file"),
])
def test_train_run_bad_data_is_named_before_the_model_loads(tmp_path, model, loads, name, data, says):
    (tmp_path / name).write_bytes(data)
    res = run(tmp_path, "train", "run", "--model", str(model), "--data", name, "--out", "o")
    refused(res, f"{name}{says}")
    assert loads == []


def test_train_run_resuming_another_rank_is_refused_before_the_model_loads(tmp_path, model, loads):
    import torch

    (tmp_path / "o" / "checkpoint").mkdir(parents=True)
    torch.save({"model": {"layers.0.q_proj.lora_A.default.weight": torch.zeros(4, 8)}, "step": 1},
               tmp_path / "o" / "checkpoint" / "state.pt")
    with gzip.open(tmp_path / "d.jsonl.gz", "wt") as f:
        f.write(json.dumps(EXAMPLE) + "\n")
    res = run(tmp_path, "train", "run", "--model", str(model), "--data", "d.jsonl.gz", "--out", "o", "--lora", "16")
    refused(res, "--out o holds a checkpoint of rank 4; pass --lora 4 or another --out")
    assert loads == []


# --- 8. train eval ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("lines", "kind", "says"), [
    ((), [], "no bench cases in"), ((json.dumps(CASE),), ["rename"], "no bench case matches --kind")])
def test_train_eval_with_no_case_to_run_is_refused_before_the_models_load(tmp_path, model, loads, lines, kind, says):
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    cases = cases_file(tmp_path, *lines) if lines else tmp_path / "cases.jsonl"
    cases.touch()
    extra = [x for k in kind for x in ("--kind", k)]
    refused(run(tmp_path, "train", "eval", "--model", str(model), "--adapter", "adapter", "--cases", str(cases),
                *extra), says)
    assert loads == []


# --- 9. record lines ---------------------------------------------------------------------------------------

def test_a_bench_record_line_is_one_line_however_long(capsys):
    from editllm.cli.main import _bench_runs

    rec = {"id": "case-" + "x" * 90, "mode": "rewrite", "seconds": 1.5, "tests_passed": True, "exact_match": False,
           "error": None}

    def one(advance) -> dict:
        advance(rec)
        return {}

    _bench_runs([rec], ["rewrite"], 1, one)
    assert capsys.readouterr().err.count("\n") == 1
