"""The command line end to end: diffs on stdout, one-line errors, atomic --apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from editllm.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"


@pytest.fixture
def fake_model(monkeypatch, scripted_lm):
    """Make the CLI load a scripted model that writes `text` (a deterministic fake: the test needs
    one specific edit, which no random model writes)."""

    def use(text: str):
        lm = scripted_lm(text)
        monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: lm)
        return lm

    return use


def invoke(*args: str, cwd: Path):
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, list(args))
    finally:
        os.chdir(old)


def test_fix_prints_a_diff_that_git_applies(tmp_path, fake_model):
    (tmp_path / "m.py").write_text(BUGGY)
    fake_model(FIXED + "```\n")
    res = invoke("fix", "m.py", "fix the division", "--mode", "rewrite", cwd=tmp_path)
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("diff --git a/m.py b/m.py\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply"], cwd=tmp_path, input=res.stdout.encode(), check=True)
    assert (tmp_path / "m.py").read_text() == FIXED


def test_apply_writes_atomically_and_keeps_mode(tmp_path, fake_model):
    f = tmp_path / "m.py"
    f.write_text(BUGGY)
    f.chmod(0o755)
    fake_model(FIXED + "```\n")
    res = invoke("fix", "m.py", "fix it", "--apply", "--stats", cwd=tmp_path)
    assert res.exit_code == 0, res.stderr
    assert res.stdout == ""
    assert f.read_text() == FIXED and f.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temp file left behind
    assert "wrote m.py\n" in res.stderr  # said off a terminal too (session 27's probe)
    stats = json.loads(res.stderr.strip().splitlines()[-1])
    for key in ("mode", "model", "device", "dtype", "prompt_tokens", "output_tokens", "forwards",
                "load_seconds", "decode_seconds", "total_seconds"):
        assert key in stats
    assert stats["output_tokens"] > 0 and stats["mode"] == "spec"
    assert stats["changed"] is True and stats["files_changed"] == 1 and stats["files"][0]["changed"] is True


def test_no_change_is_said_on_stderr_and_in_stats(tmp_path, fake_model):
    (tmp_path / "m.py").write_text(FIXED)
    fake_model(FIXED + "```\n")
    res = invoke("fix", "m.py", "fix it", cwd=tmp_path)
    assert res.exit_code == 0 and res.stdout == ""
    assert res.stderr == "no change proposed\n"
    res = invoke("fix", "m.py", "fix it", "--quiet", "--stats", cwd=tmp_path)
    assert res.exit_code == 0 and res.stdout == ""
    stats = json.loads(res.stderr)  # --quiet: the stats line alone
    assert stats["changed"] is False and stats["files_unchanged"] == 1 and stats["files_changed"] == 0
    assert stats["files"][0]["changed"] is False


def test_stats_of_a_refused_edit_say_what_ran_and_why(tmp_path, fake_model):
    """--stats printed nothing when the edit was refused (exit 2); a script reading one JSON line per run
    got none. Bad input, refused before any model loads, stays one line."""
    (tmp_path / "m.py").write_text(BUGGY)
    fake_model("def average(xs):\n")  # then EOS: the file cut short
    res = invoke("fix", "m.py", "fix it", "--quiet", "--stats", cwd=tmp_path)
    assert res.exit_code == 2 and res.stdout == ""
    first, second = res.stderr.strip().splitlines()
    stats = json.loads(first)
    assert stats["changed"] is False and stats["files"] == [] and "stopped without the closing fence" in stats["error"]
    assert second.startswith("editllm: error: m.py: the model stopped without the closing fence")
    res = invoke("fix", "missing.py", "fix it", "--quiet", "--stats", cwd=tmp_path)
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1


def test_a_many_files_failure_names_the_file_once(tmp_path, fake_model):
    (tmp_path / "m.py").write_text(BUGGY)
    fake_model("def average(xs):\n")  # then EOS: the file cut short
    res = invoke("fix", "m.py", "fix it", "--journal", str(tmp_path / "j"), cwd=tmp_path)
    assert res.exit_code == 2
    assert "editllm: failed m.py: the model stopped without the closing fence" in res.stderr, res.stderr


def test_config_file_values_are_checked(tmp_path):
    (tmp_path / "ok.py").write_text("x\n")
    (tmp_path / ".editllm.toml").write_text('mode = "fast"\n')
    res = invoke("fix", "ok.py", "x", cwd=tmp_path)
    assert res.exit_code == 2 and "setting 'mode' must be one of rewrite, spec, copy" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == ""


def test_unfinished_output_is_refused_and_nothing_written(tmp_path, fake_model):
    f = tmp_path / "m.py"
    f.write_text(BUGGY)
    fake_model(FIXED + "more text that never closes the fence " * 20)
    res = invoke("fix", "m.py", "fix it", "--apply", "--max-new-tokens", "30", cwd=tmp_path)
    assert res.exit_code == 2
    assert "did not finish" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert f.read_text() == BUGGY and res.stdout == ""


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (lambda d: None, ["missing.py", "x"], "no such file"),
        (lambda d: (d / "sub").mkdir(), ["sub", "x"], "is a directory"),
        (lambda d: (d / "b.bin").write_bytes(b"\x7fELF\x00\x01"), ["b.bin", "x"], "binary"),
        (lambda d: (d / "late.txt").write_bytes(b"text\n" * 4000 + b"\x00\x01"), ["late.txt", "x"], "binary"),
        (lambda d: (d / "l.txt").write_bytes(b"caf\xe9\n"), ["l.txt", "x"], "not UTF-8"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "  "], "instruction is empty"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--mode", "fast"], "'fast' is not one of"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--dtype", "bf17"], "'bf17' is not one of"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--adapter", "nowhere"], "no such directory"),
        (lambda d: (d / "ad").mkdir(), ["ad", "x", "--adapter", "ad"], "is a directory"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--max-new-tokens", "0"], "--max-new-tokens"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py"], "usage: editllm fix"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--model", "nowhere/dir/x"], "model not found"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--copy-requests", "one"], "add --server URL"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--timeout", "30"], "bounds requests to a server"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--copy-requests", "two"], "'two' is not one of"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["ok.py", "x", "--batch-invariant", "--server", "http://127.0.0.1:9"],
         "set where it starts"),
        (lambda d: (d / "ok.py").write_text("x\n") + (d / ".editllm.toml").write_text("batch_invariant = 1\n"),
         ["ok.py", "x"], "must be bool"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, setup, args, message):
    setup(tmp_path)
    res = invoke("fix", *args, cwd=tmp_path)
    assert res.exit_code == 2
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert res.stdout == ""


def test_too_long_for_context_is_refused(tmp_path, tiny_model_dir):
    (tmp_path / "big.py").write_text("value = 12345\n" * 2000)  # ~10k tokens > tiny context 4096
    res = invoke("fix", "big.py", "x", "--model", str(tiny_model_dir), "--dtype", "float32", cwd=tmp_path)
    assert res.exit_code == 2 and "too long for the model's context" in res.stderr
    assert "big.py: too long" in res.stderr and "name the function or method to edit" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_an_instruction_that_fills_the_context_is_blamed_not_the_file(tmp_path, tiny_model_dir):
    (tmp_path / "small.py").write_text("value = 1\n")
    res = invoke("fix", "small.py", "make it " + "much " * 5000 + "bigger", "--model", str(tiny_model_dir),
                 "--dtype", "float32", cwd=tmp_path)
    assert res.exit_code == 2 and "the instruction is too long for the model's context" in res.stderr


def test_tiny_model_end_to_end_subprocess(tmp_path, tiny_model_dir):
    """The installed entry point with a real (tiny, random) model: it cannot finish a file in 16
    tokens, so the run must fail cleanly and leave the file alone."""
    f = tmp_path / "m.py"
    f.write_text(BUGGY)
    res = subprocess.run(
        [sys.executable, "-m", "editllm.cli.main", "fix", "m.py", "fix it", "--model", str(tiny_model_dir),
         "--max-new-tokens", "16", "--apply", "--stats"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 2, res.stderr
    assert "did not finish the file within 16 new tokens" in res.stderr
    assert f.read_text() == BUGGY


def test_version():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.startswith("editllm ")


def test_fragment_output_becomes_a_diff_of_the_edited_function_only(tmp_path, fake_model):
    module = BUGGY + "\n\ndef total(xs):\n    return sum(xs)\n"
    (tmp_path / "m.py").write_text(module)
    fake_model(FIXED + "```\n")  # the model "forgets" total()
    res = invoke("fix", "m.py", "fix average", "--stats", "--no-focus", cwd=tmp_path)  # the model sees the file
    assert res.exit_code == 0, res.stderr
    assert "-    return sum(xs) / (len(xs) - 1)\n+    return sum(xs) / len(xs)\n" in res.stdout
    assert "-def total" not in res.stdout and "-    return sum(xs)\n" not in res.stdout  # total() kept
    assert "merged it into place" in res.stderr
    stats = json.loads(res.stderr.strip().splitlines()[-1])
    assert stats["files"][0]["merged"] is True and stats["files"][0]["complete_output"] is False


def test_focus_shows_the_named_function_and_keeps_the_rest(tmp_path, fake_model):
    module = BUGGY + "\n\ndef total(xs):\n    return sum(xs)\n\n\ndef count(xs):\n    return len(xs)\n"
    (tmp_path / "m.py").write_text(module)
    fake_model(FIXED + "```\n")  # what the model is shown: average() alone
    res = invoke("fix", "m.py", "fix average", "--stats", cwd=tmp_path)
    assert res.exit_code == 0, res.stderr
    assert "-    return sum(xs) / (len(xs) - 1)\n+    return sum(xs) / len(xs)\n" in res.stdout
    assert "-def total" not in res.stdout and "-def count" not in res.stdout  # the rest is kept
    stats = json.loads(res.stderr.strip().splitlines()[-1])
    assert stats["files"][0]["focused"] == ["average"] and stats["files"][0]["merged"] is False


def test_empty_output_for_a_nonempty_file_is_refused(tmp_path, fake_model):
    f = tmp_path / "m.py"
    f.write_text(BUGGY)
    fake_model("```\n")
    res = invoke("fix", "m.py", "fix it", "--apply", cwd=tmp_path)
    assert res.exit_code == 2 and "nothing written" in res.stderr
    assert f.read_text() == BUGGY


def test_copy_mode_on_the_bundled_model_without_its_selector_says_so(tmp_path, monkeypatch, scripted_lm):
    """Copy mode on bundled:1.5b loads the shipped selector (no warning); --no-adapter runs the base model and
    says what that costs; --adapter names another one."""
    from dataclasses import replace

    from editllm.selector import SELECTORS

    lm = replace(scripted_lm('<copy lines="1-2"/>'), name="bundled:1.5b")
    asked = []
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: asked.append(a[3]) or lm)
    (tmp_path / "m.py").write_text(BUGGY)
    res = invoke("fix", "m.py", "fix the division", "--mode", "copy", "--no-adapter", cwd=tmp_path)
    assert res.exit_code == 0, res.stderr
    assert "copy mode on the bundled model without its span selector:" in res.stderr.splitlines()[0]
    res = invoke("fix", "m.py", "fix the division", "--mode", "copy", cwd=tmp_path)
    assert res.exit_code == 0 and "span selector" not in res.stderr
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    res = invoke("fix", "m.py", "fix the division", "--mode", "copy", "--adapter", "adapter", cwd=tmp_path)
    assert res.exit_code == 0 and "span selector" not in res.stderr
    assert asked == [None, str(SELECTORS["bundled:1.5b"].folder), str(tmp_path / "adapter")]  # made absolute


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (lambda d: None, ["fix", "missing.py", "x"], "missing.py: no such file"),
        (lambda d: (d / "b.bin").write_bytes(b"\x7fELF\x00\x01"), ["fix", "b.bin", "x"], "binary"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["fix", "ok.py", "x", "--mode", "fast"], "'fast' is not one of"),
        (lambda d: ((d / "ok.py").write_text("x\n"), (d / "ad").mkdir()),
         ["check", "ok.py", "-i", "x", "--adapter", "ad"], "not a LoRA adapter"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["fix", "ok.py", "x", "--model", "nowhere"],
         "model not found: nowhere"),
        (lambda d: ((d / "ok.py").write_text("x\n"), (d / "m").mkdir()), ["check", "ok.py", "-i", "x", "-m", "m"],
         "m: not a model directory (no config.json)"),
        (lambda d: (d / "ok.py").write_text("x\n"), ["fix", "ok.py", "x", "--model", "bundled:7b"],
         "unknown bundled model '7b'"),
        (lambda d: None, ["model", "info", "bundled:7b"], "unknown bundled model '7b'"),
        (lambda d: None, ["bench", "--model", "nowhere", "--out", "o"], "model not found: nowhere"),
        (lambda d: (d / "ad").mkdir(), ["train", "eval", "--adapter", "ad", "-m", "nowhere"], "model not found"),
        (lambda d: (d / "ad").mkdir(), ["train", "eval", "--adapter", "ad"], "not a LoRA adapter"),
    ],
)
def test_input_errors_are_reported_before_torch_is_imported(tmp_path, setup, args, message):
    """`-X importtime` lists every module imported; torch and transformers must not be among them
    (importing them alone takes seconds). No wall-clock bound: speed is the bench's, not a test's."""
    setup(tmp_path)
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "editllm.cli.main", *args],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    imported = [line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")]
    errors = [line for line in res.stderr.splitlines() if not line.startswith("import time:")]
    assert res.returncode == 2 and res.stdout == ""
    assert len(errors) == 1 and message in errors[0], errors
    assert "typer" in imported  # the import list is real
    assert not [m for m in imported if m.split(".")[0] in ("torch", "transformers")]


@pytest.mark.parametrize("command", ["bench", "train eval"])
def test_bench_and_train_eval_read_the_config_and_flags_win(tmp_path, monkeypatch, scripted_lm, command):
    """Issue 17: the config file is read by every command. The bench keeps its own engine default
    (torch: its committed baselines ran there), whatever the config says."""
    loads = []
    lm = scripted_lm(FIXED + "```\n")

    def load_model(spec, device, dtype, adapter=None, trust_remote_code=False, log=None, engine="auto",
                   batch_invariant=False):
        loads.append((spec, device, dtype, engine))
        return lm

    monkeypatch.setattr("editllm.editor.models.load_model", load_model)
    monkeypatch.setattr("editllm.bench.evaluate.compare", lambda base, tuned, cases: {})
    (tmp_path / ".editllm.toml").write_text('model = "org/model"\ndevice = "cpu"\ndtype = "float32"\n'
                                            'engine = "llamacpp"\n')
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "c1", "path": "m.py", "instruction": "fix average",
                                                  "before": BUGGY, "after": FIXED}) + "\n")
    (tmp_path / "ad").mkdir()
    (tmp_path / "ad" / "adapter_config.json").write_text("{}")
    args = ["bench", "--mode", "rewrite", "--out", "out"] if command == "bench" else \
        ["train", "eval", "--adapter", "ad"]
    args += ["--cases", "c.jsonl"]
    assert invoke(*args, cwd=tmp_path).exit_code == 0
    assert invoke(*args, "--dtype", "bfloat16", "-m", "org/other", cwd=tmp_path).exit_code == 0
    per_run = 1 if command == "bench" else 2  # train eval loads the base model and the tuned one
    assert loads[:per_run] == [("org/model", "cpu", "float32", "torch")] * per_run
    assert loads[per_run:] == [("org/other", "cpu", "bfloat16", "torch")] * per_run


def test_one_refused_file_says_what_becomes_of_the_others(tmp_path, fake_model, monkeypatch):
    """A multi-file edit is all or nothing: one refused file used to fail the run naming only itself, and a
    user could not tell that the other file's edit was dropped and the third never tried (session 33's
    multi-file probe). Nothing is printed or written."""
    from editllm.editor.edit import EditResult
    from editllm.editor.errors import EditError

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(BUGGY)
    fake_model(FIXED + "```\n")
    tried: list[str] = []

    def decode(lm, src, instruction, opts, *rest):
        tried.append(src.path)
        if src.path == "b.py":
            raise EditError("the model's output does not parse")
        return EditResult(src, FIXED, None, FIXED)

    monkeypatch.setattr("editllm.api.session.decode_file", decode)
    res = invoke("fix", "a.py", "b.py", "c.py", "fix the division", "--apply", cwd=tmp_path)
    assert res.exit_code == 2 and res.stdout == "" and tried == ["a.py", "b.py"]
    assert res.stderr.strip().splitlines() == [
        "editllm: error: b.py: the model's output does not parse; a multi-file edit is all or nothing: the edit of "
        "a.py is dropped too, c.py not tried (edit the files apart, or add --journal DIR to give each file its own "
        "outcome)"]
    assert all((tmp_path / name).read_text() == BUGGY for name in ("a.py", "b.py", "c.py"))
    # the first file failing: nothing was edited, so no way out is offered; an unchanged file is said so
    monkeypatch.setattr("editllm.api.session.decode_file",
                        lambda lm, src, *a: EditResult(src, BUGGY, None, BUGGY) if src.path == "a.py" else decode(
                            lm, src, *a))
    res = invoke("fix", "a.py", "b.py", "fix the division", cwd=tmp_path)
    assert res.exit_code == 2 and res.stderr.strip().endswith(
        "does not parse; a multi-file edit is all or nothing: a.py had no change")
