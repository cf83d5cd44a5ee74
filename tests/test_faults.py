"""Fault injection: a failure at any stage of `fix`, `check` and `bench` is one line on stderr and exit
2 (never 1, which `check` and git hooks read as "a change is proposed"), with nothing on stdout and no
file changed. Each stage's function is patched to raise; the model is the scripted fake (the runs
must reach the stage under test, which takes one specific, finished edit).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from editllm.cli.main import app
from typer.testing import CliRunner

runner = CliRunner()
BUGGY = "def average(xs):\n    return sum(xs) / (len(xs) - 1)\n"
FIXED = "def average(xs):\n    return sum(xs) / len(xs)\n"
FAULTS = [RuntimeError("matcher lost its state"), ValueError("draft schedule"), AssertionError("indented output"),
          OSError(5, "Input/output error"), MemoryError()]

# stage -> the function that stage calls (patched to raise)
STAGES = {
    "read sources": "editllm.api.session.read_source",
    "config": "editllm.editor.config.load_config",
    "model load": "editllm.editor.models.load_model",
    "prompt": "editllm.editor.edit.rewrite_prompt",
    "decode": "editllm.editor.decode.Decoder.run",
    "focus merge": "editllm.editor.edit.merge_focus",
    "whole-file merge": "editllm.editor.edit.ensure_whole",
    "diff check": "editllm.editor.diff.checked_diff",
    "write (--apply)": "os.replace",
    "git index read": "editllm.editor.gitio.staged_sources",
}
COMMANDS = {  # how each command is run on m.py (a staged one for --staged)
    "fix": ["fix", "m.py", "fix average", "--apply"],
    "check": ["check", "m.py", "-i", "fix average", "--apply"],
    "check --staged": ["check", "--staged", "-i", "fix average", "--apply"],
}


def raiser(exc: BaseException):
    def boom(*args, **kwargs):
        raise exc

    return boom


@pytest.fixture
def repo(tmp_path, monkeypatch, scripted_lm) -> Path:
    """A git repository with m.py staged (and two functions, so focus applies), the scripted model
    proposing the fix, and the working directory inside."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "m.py").write_text(BUGGY + "\n\ndef total(xs):\n    return sum(xs)\n")
    subprocess.run(["git", "add", "m.py"], cwd=tmp_path, check=True)
    lm = scripted_lm(FIXED + "```\n")
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: lm)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_failed_cleanly(res, folder: Path, before: dict[str, str]) -> str:
    """Exit 2, exactly one `editllm: error:` line on stderr, empty stdout, every file as it was."""
    assert res.exit_code == 2, (res.exit_code, res.stderr, res.exception)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("editllm: error: "), res.stderr
    assert res.stdout == ""
    assert {p.name: p.read_text() for p in folder.iterdir() if p.is_file()} == before
    return lines[0]


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}


def test_the_unpatched_runs_propose_the_fix(repo):
    """The baseline the fault tests break: each command reaches every stage and writes the fix."""
    for command, args in COMMANDS.items():
        (repo / "m.py").write_text(BUGGY)
        subprocess.run(["git", "add", "m.py"], cwd=repo, check=True)
        res = runner.invoke(app, args)
        assert res.exit_code == (0 if command == "fix" else 1), (command, res.stderr)
        assert (repo / "m.py").read_text() == FIXED, command


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("stage", STAGES)
def test_a_fault_at_any_stage_is_one_line_and_exit_2(repo, monkeypatch, command, stage):
    if stage == "git index read" and command != "check --staged":
        pytest.skip("only --staged reads the index")
    if stage == "read sources" and command == "check --staged":
        pytest.skip("--staged reads the index, not the files")
    fault = FAULTS[list(STAGES).index(stage) % len(FAULTS)]
    monkeypatch.setattr(STAGES[stage], raiser(fault))
    before = snapshot(repo)
    line = assert_failed_cleanly(runner.invoke(app, COMMANDS[command]), repo, before)
    if stage == "write (--apply)":
        assert "m.py: cannot write (Input/output error); nothing written" in line
    else:
        assert_reported(fault, line)


def assert_reported(fault: BaseException, line: str) -> None:
    """A bug is an internal error with the --debug hint; an OSError is the machine's, said as it is."""
    if isinstance(fault, OSError):
        assert line == f"editllm: error: {fault.strerror}" and "internal error" not in line, line
    else:
        message = str(fault).splitlines()[0] if str(fault) else ""
        assert line.startswith(f"editllm: error: internal error: {type(fault).__name__}") and message in line
        assert "--debug" in line


@pytest.mark.parametrize("fault", FAULTS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("command", COMMANDS)
def test_every_exception_type_maps_to_exit_2(repo, monkeypatch, command, fault):
    monkeypatch.setattr(STAGES["decode"], raiser(fault))
    line = assert_failed_cleanly(runner.invoke(app, COMMANDS[command]), repo, snapshot(repo))
    assert_reported(fault, line)


def test_debug_shows_the_traceback(repo, monkeypatch):
    monkeypatch.setattr(STAGES["decode"], raiser(RuntimeError("matcher lost its state")))
    res = runner.invoke(app, ["--debug", *COMMANDS["check --staged"]])
    assert res.exit_code == 2 and "Traceback (most recent call last)" in res.stderr
    assert "RuntimeError: matcher lost its state" in res.stderr and "rerun with --debug" not in res.stderr
    res = runner.invoke(app, COMMANDS["check --staged"], env={"EDITLLM_DEBUG": "1"})
    assert res.exit_code == 2 and "Traceback (most recent call last)" in res.stderr
    res = runner.invoke(app, COMMANDS["check --staged"])  # the flag does not stick
    assert res.exit_code == 2 and "Traceback" not in res.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_exits_130_and_writes_nothing(repo, monkeypatch, command):
    monkeypatch.setattr(STAGES["decode"], raiser(KeyboardInterrupt()))
    before = snapshot(repo)
    res = runner.invoke(app, COMMANDS[command])
    assert res.exit_code == 130 and res.stdout == "" and "interrupted" in res.stderr
    assert snapshot(repo) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_edit_error_keeps_its_own_message(repo, monkeypatch, command):
    from editllm.editor.errors import EditError

    monkeypatch.setattr(STAGES["decode"], raiser(EditError("m.py: the model did not finish")))
    line = assert_failed_cleanly(runner.invoke(app, COMMANDS[command]), repo, snapshot(repo))
    assert line == "editllm: error: m.py: the model did not finish"


def test_staged_check_with_an_empty_adapter_folder_exits_2(repo):
    (repo / "EMPTY_DIR").mkdir()
    for args in (["check", "--staged", "-i", "fix average", "--adapter", "EMPTY_DIR"],
                 ["fix", "m.py", "fix average", "--adapter", "EMPTY_DIR"]):
        line = assert_failed_cleanly(runner.invoke(app, args), repo, snapshot(repo))
        assert "--adapter EMPTY_DIR: not a LoRA adapter (no adapter_config.json" in line


@pytest.mark.parametrize("fault", [ValueError("Can't find 'adapter_config.json'"), OSError(2, "No such file")],
                         ids=lambda e: type(e).__name__)
def test_a_failing_adapter_load_exits_2(tmp_path, monkeypatch, tiny_model_dir, fault):
    """The real loader (tiny model) with peft's loader failing on an adapter folder that looks right."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    monkeypatch.setattr("peft.PeftModel.from_pretrained", raiser(fault))
    res = runner.invoke(app, ["check", "m.py", "-i", "fix it", "--model", str(tiny_model_dir), "--adapter", "adapter"])
    line = assert_failed_cleanly(res, tmp_path, snapshot(tmp_path))
    assert (fault.strerror if isinstance(fault, OSError) else type(fault).__name__) in line


@pytest.mark.parametrize("stage", ["case loading", "model load", "run"])
def test_bench_faults_exit_2_and_write_no_report(tmp_path, monkeypatch, scripted_lm, stage):
    monkeypatch.chdir(tmp_path)
    lm = scripted_lm(FIXED + "```\n")
    monkeypatch.setattr("editllm.editor.models.load_model", lambda *a, **k: lm)
    target = {"case loading": "editllm.bench.cases.load_cases", "model load": "editllm.editor.models.load_model",
              "run": "editllm.bench.runner.run_bench"}[stage]
    monkeypatch.setattr(target, raiser(RuntimeError(f"{stage} failed")))
    res = runner.invoke(app, ["bench", "--mode", "spec", "--limit", "1", "--out", "out"])
    assert_failed_cleanly(res, tmp_path, {})
    assert f"internal error: RuntimeError: {stage} failed" in res.stderr
    assert not (tmp_path / "out").exists()


def test_bench_missing_case_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["bench", "--cases", "nowhere.jsonl", "--out", "out"])
    assert_failed_cleanly(res, tmp_path, {})
    assert "nowhere.jsonl: no such case file" in res.stderr and not os.path.exists("out")
