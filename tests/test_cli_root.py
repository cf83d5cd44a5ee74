"""The root of the command line and its small commands (`config`, `model`, `hook`) as people run them: where
`--debug` goes, variables that are set oddly, stdout closed or full, models that are no models. Found by session
21's audit of the subcommands."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from editllm.cli.main import app
from test_input_safety import one_line_error as refused
from typer.testing import CliRunner

EDITLLM = [sys.executable, "-m", "editllm.cli.main"]


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def test_debug_is_taken_anywhere_on_the_line(tmp_path, monkeypatch):
    """The internal-error hint says "rerun with --debug": people add it at the end."""
    monkeypatch.chdir(tmp_path)
    res = invoke("fix", "missing.py", "fix it", "--debug")
    assert res.exit_code == 2 and "Traceback" in res.stderr and "missing.py: no such file" in res.stderr
    res = invoke("fix", "missing.py", "fix it")
    refused(res, "missing.py: no such file")


@pytest.mark.parametrize("value", ["2", "maybe", "yes"])
def test_an_odd_editllm_debug_breaks_no_command(value):
    res = invoke("--version", env={"EDITLLM_DEBUG": value})
    assert res.exit_code == 0 and res.stdout.startswith("editllm ")


def test_a_bad_root_option_is_one_line():
    refused(invoke("--bogus"), "No such option: --bogus")


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(EDITLLM + args, capture_output=kwargs.pop("stdout", None) is None, text=True,
                          timeout=120, **kwargs)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["config"]])
def test_stdout_full_or_closed_is_one_line_and_exit_2(args):
    """Exit 1 means "change proposed" to a hook; a traceback's exit 1 (or a silent exit 0) was wrong."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(EDITLLM + args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == ["editllm: error: No space left on device"]
    if args != ["--help"]:
        done = subprocess.run(EDITLLM + args, stderr=subprocess.PIPE, text=True, timeout=120,
                              preexec_fn=lambda: os.close(1))
        assert done.returncode == 2 and "stdout is closed" in done.stderr and len(done.stderr.splitlines()) == 1


def test_config_says_which_values_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("config", env={"EDITLLM_MODEL": "bundled:0.5b", "EDITLLM_SERVER": "http://127.0.0.1:1"})
    assert res.exit_code == 0
    lines = {line.split()[0]: line for line in res.stdout.splitlines()}
    assert lines["model"].endswith("(environment EDITLLM_MODEL)") and '"bundled:0.5b"' in lines["model"]
    assert lines["server"].endswith("(environment EDITLLM_SERVER)")  # `fix` uses it: `config` showed null
    res = invoke("config", "--model", "bundled:0.5b")
    assert [ln for ln in res.stdout.splitlines() if ln.startswith("model")][0].endswith("(command line)")


def test_model_info_checks_what_it_is_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not.gguf").write_text("x\n")
    refused(invoke("model", "info", str(tmp_path / "nowhere")), "model not found")
    refused(invoke("model", "info", "not.gguf"), "not a GGUF file")
    refused(invoke("model", "path", "not.gguf"), "not a GGUF file")
    res = invoke("model", "info", "Qwen/Qwen2.5-Coder-1.5B-Instruct")
    assert res.exit_code == 0 and "hub id" in res.stdout


def test_model_prepare_of_a_hub_id_does_not_say_ready(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("model", "prepare", "Qwen/NoSuchModel")
    assert res.exit_code == 0 and "ready" not in res.stderr and "nothing to prepare" in res.stderr


def test_a_gguf_cut_short_is_one_line_not_an_internal_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cut.gguf").write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    res = invoke("model", "path", "cut.gguf")
    assert res.exit_code == 2 and "internal error" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("editllm: error: ") and "cannot read this GGUF" in res.stderr
    assert not [p for p in (tmp_path / "cache").iterdir() if "bf16" in p.name and not p.name.endswith(".lock")]
