"""Batch-invariant llama.cpp kernels (`--batch-invariant`, editor.invariant): a token's logits are the same bit
for bit in any batch, so spec's verified drafts, a server's single steps and local copy mode's forced tokens
all write what step-by-step greedy decoding writes, near-ties included.

The model is a tiny random Qwen2 quantized to Q4_K_M (the K-quant kernels are the ones that round by batch
shape), its head not scaled: its top-2 logit gaps are ~0.03, as small as the rounding, so the default
kernels' results are compared too, as the control that shows these tests can fail. ggml chooses its tiled
K-quant kernels once per process, so every engine here runs in a fresh process (`invariant_run.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from editllm.editor import invariant
from editllm.editor.errors import EditError

RUN = Path(__file__).with_name("invariant_run.py")


def run(task: str, gguf: Path, kernels: str, *args: str, cache: Path | None = None,
        env: dict[str, str] | None = None) -> dict:
    env = dict(os.environ) | ({"EDITLLM_CACHE": str(cache)} if cache else {}) | (env or {})
    env.pop(invariant.TILED_VAR, None)
    done = subprocess.run([sys.executable, str(RUN), task, str(gguf), kernels, *args], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_tokens_logits_are_the_same_in_any_batch(tiny_kquant_gguf):
    got = run("logits", tiny_kquant_gguf, "invariant")
    assert got["steps_equal_batch"] and got["split_equal_batch"] and got["max_diff"] == 0.0
    control = run("logits", tiny_kquant_gguf, "default")  # what the mode is for
    assert not control["steps_equal_batch"] and control["max_diff"] > 0


def first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None if len(a) == len(b) else 0)


def test_verified_drafts_write_step_by_step_greedy_exactly(tiny_kquant_gguf, tmp_path):
    """Every step verifies a batch of the reference's own next tokens (and, in the second run, a wrong last
    one that is cut from the cache): the output is step-by-step greedy's, token for token."""
    got = run("drafts", tiny_kquant_gguf, "invariant", "300", cache=tmp_path)
    reference = got.pop("reference")
    assert len(reference) == 300
    for name, one in got.items():
        assert first_difference(one["ids"], reference) is None, name
        assert one["forwards"] < 300 // 4, name  # batches, not single steps
    control = run("drafts", tiny_kquant_gguf, "default", "300", cache=tmp_path)
    reference = control.pop("reference")
    assert any(first_difference(one["ids"], reference) is not None for one in control.values())


def test_a_batch_invariant_server_writes_what_the_local_engine_writes(tiny_kquant_gguf, tmp_path):
    """rewrite through llama-server (a token a step) = local spec (drafts in batches), and the server's copy
    loop = local copy mode (forced tokens and drafted tags in batches), with both on batch-invariant kernels."""
    from editllm.editor.llamaserver import server_binary

    binary = {"EDITLLM_LLAMA_SERVER": str(server_binary())}  # built once in the real cache, not in tmp_path
    got = run("server", tiny_kquant_gguf, "invariant", "400", cache=tmp_path, env=binary)
    for name, one in got.items():
        assert one["server_rewrite"] == one["spec"], name
        assert one["server_copy"] == one["copy"], name
        assert len(one["spec"]) == 400
    control = run("server", tiny_kquant_gguf, "default", "400", cache=tmp_path, env=binary)
    assert any(one["server_rewrite"] != one["spec"] for one in control.values())


def test_a_build_with_llamafile_is_refused():
    assert invariant.build_refusal("CPU : AVX2 = 1 | LLAMAFILE = 1 | OPENMP = 1 |")
    assert invariant.build_refusal("CPU : AVX2 = 1 | OPENMP = 1 | REPACK = 1 |") is None


def test_the_kernels_are_chosen_once_per_process(monkeypatch):
    monkeypatch.setattr(invariant, "_CHOSEN", [False])
    invariant.choose(False)
    with pytest.raises(EditError, match="once per process"):
        invariant.choose(True)


def test_servers_get_the_tiled_switch_only_when_they_ask(monkeypatch):
    monkeypatch.setenv(invariant.TILED_VAR, "0")
    monkeypatch.setenv(invariant.MARK, "0")  # set by editllm for this process's engine
    env = dict(os.environ)
    assert invariant.TILED_VAR not in invariant.server_environment(env, False)
    assert invariant.server_environment(env, True)[invariant.TILED_VAR] == "0"
    monkeypatch.delenv(invariant.MARK)  # the user's own setting is kept
    assert invariant.server_environment(dict(os.environ), False)[invariant.TILED_VAR] == "0"


def test_batch_invariant_is_refused_where_it_cannot_hold(tiny_model_dir):
    from editllm.api import EditSession
    from editllm.editor import models

    with pytest.raises(EditError, match="llama.cpp engine"):
        models.load_model(str(tiny_model_dir), device="cpu", dtype="float32", batch_invariant=True)
    with pytest.raises(EditError, match="where it starts"):
        EditSession("bundled:1.5b", server="http://127.0.0.1:9", batch_invariant=True)


@pytest.mark.parametrize("has", [0, 1])
def test_a_server_build_with_llamafile_is_found_out(tmp_path, has):
    """`program_refusal` asks the ggml CPU library beside the binary (a stand-in library here)."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler for the stand-in library")
    (tmp_path / "lib.c").write_text(f"int ggml_cpu_has_llamafile(void) {{ return {has}; }}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libggml-cpu.so"), str(tmp_path / "lib.c")],
                   check=True)
    why = invariant.program_refusal(tmp_path / "llama-server")
    assert (why is not None and "GGML_LLAMAFILE=OFF" in why) if has else why is None
    assert invariant.program_refusal(tmp_path / "elsewhere" / "llama-server") is None  # nothing to ask
