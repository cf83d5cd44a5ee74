"""The shipped span selector (editllm.selector): which runs load it, its files checked, packaged, shown."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from editllm import selector as sel
from editllm.api import EditSession
from editllm.cli.main import app
from editllm.editor.errors import EditError
from typer.testing import CliRunner

SHIPPED = sel.SELECTORS["bundled:1.5b"]


def test_the_committed_files_are_the_recorded_ones():
    assert SHIPPED.check() == SHIPPED.folder
    config = json.loads((SHIPPED.folder / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["base_model_name_or_path"] == "bundled:1.5b"
    assert (SHIPPED.folder / "adapter_model.safetensors").stat().st_size <= 40_000_000


@pytest.mark.parametrize(("model", "mode", "adapter", "use", "want"), [
    ("bundled:1.5b", "copy", None, True, str(SHIPPED.folder)),
    ("bundled", "copy", None, True, str(SHIPPED.folder)),
    ("bundled:1.5b", "spec", None, True, None),  # lossless modes never load it
    ("bundled:1.5b", "rewrite", None, True, None),
    ("bundled:1.5b", "copy", "/some/adapter", True, "/some/adapter"),  # --adapter wins
    ("bundled:1.5b", "copy", None, False, None),  # --no-adapter
    ("bundled:0.5b", "copy", None, True, None),  # nothing shipped for it
    ("/models/other", "copy", None, True, None),
])
def test_which_runs_load_the_selector(model, mode, adapter, use, want):
    assert sel.default_adapter(model, mode, adapter, use) == want


def test_a_session_in_copy_mode_takes_it_without_loading_anything():
    assert EditSession("bundled:1.5b", mode="copy").adapter == str(SHIPPED.folder)
    assert EditSession("bundled:1.5b", mode="copy", use_selector=False).adapter is None
    assert EditSession("bundled:1.5b", mode="spec").adapter is None


def damaged(tmp_path: Path, monkeypatch, how: str) -> None:
    folder = tmp_path / "sel"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    sha = sel.file_sha256(folder / "adapter_config.json")
    if how == "altered":
        (folder / "adapter_config.json").write_text('{"r": 1}')
    files = {"adapter_config.json": sha} | ({"adapter.gguf": "0" * 64} if how == "missing" else {})
    monkeypatch.setitem(sel.SELECTORS, "bundled:1.5b", sel.Selector("bundled:1.5b", folder, files))


@pytest.mark.parametrize("how", ["altered", "missing"])
def test_a_damaged_install_is_refused_in_one_line(tmp_path, monkeypatch, how):
    damaged(tmp_path, monkeypatch, how)
    with pytest.raises(EditError, match="damaged" if how == "altered" else "incomplete"):
        sel.default_adapter("bundled:1.5b", "copy", None)
    assert sel.default_adapter("bundled:1.5b", "spec", None) is None  # spec never reads it
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)  # a diff names a file outside every repository by its place here
    res = CliRunner().invoke(app, ["fix", str(tmp_path / "a.py"), "Rename x to y.", "--mode", "copy"])
    assert res.exit_code == 2 and res.stdout == "" and "span selector" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_adapter_and_no_adapter_contradict(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    for command in (["fix", str(tmp_path / "a.py"), "Rename x."], ["bench", "--mode", "copy"]):
        res = CliRunner().invoke(app, [*command, "--adapter", str(tmp_path), "--no-adapter"])
        assert res.exit_code == 2 and "contradict" in res.stderr


def test_model_info_shows_it():
    res = CliRunner().invoke(app, ["model", "info", "bundled:1.5b"])
    assert res.exit_code == 0
    info = json.loads(res.stdout)["selector"]
    assert info["adapter"] == str(SHIPPED.folder)
    assert {k: v["sha256"] for k, v in info["files"].items()} == SHIPPED.sha256
    assert all(v["bytes"] for v in info["files"].values())


def test_model_info_says_what_each_engine_reads(tmp_path, monkeypatch):
    """It said `prepared: false` with the GGUF the default llama.cpp engine reads in place: an invitation to
    a needless conversion. Each engine's file is named with whether it is ready."""
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path))
    info = json.loads(CliRunner().invoke(app, ["model", "info", "bundled:1.5b"]).stdout)
    assert info["gguf"] == {"path": str(tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), "ready": False}
    assert info["converted"]["ready"] is False and info["converted"]["for"] == "the torch engine"
    assert "prepared" not in info


def test_the_wheel_carries_it(tmp_path):
    """Installed with the package: the wheel holds every recorded file under editllm/selector/."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path), str(root)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("editllm-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in SHIPPED.sha256:
        assert f"editllm/selector/{SHIPPED.folder.name}/{name}" in names
    assert "editllm/selector/README.md" in names
