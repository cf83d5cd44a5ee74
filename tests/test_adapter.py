"""The selector's LoRA adapter kept unmerged: on for copy mode's program, off for rewrite, spec and copy
mode's fallback (lossless output is the base model's, byte for byte), on both engines; its GGUF form
for llama.cpp, and `editllm train convert` that writes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TINY_HEAD_SCALE
from editllm.cli.main import app
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.source import source_from_text
from typer.testing import CliRunner

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + list(
    range(1000, 1060)
)
FILES = {
    "stats.py": "import math\n\n\ndef average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                "    return total / (len(xs) - 1)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n",
    "notes.md": "# Notes\n\nSome text with a tpyo.\n\nMore text here.\n",
}
INSTRUCTION = {"stats.py": "Fix the bug in average.", "notes.md": "Fix the typo."}

def arr(rows) -> np.ndarray:
    """Logits rows as numpy: llama.cpp's engine returns numpy, the torch engine a tensor."""
    return rows.numpy() if hasattr(rows, "numpy") else np.asarray(rows)



@pytest.fixture(scope="session")
def lora_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """A random peft LoRA of the tiny model. peft starts B at zero (a no-op adapter); random B makes it
    change the logits, as a trained selector does."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    torch.manual_seed(1)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, init_lora_weights=False, target_modules=TARGETS)
    out = tmp_path_factory.mktemp("tiny-lora")
    get_peft_model(model, config).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def lora_gguf(lora_dir, tmp_path_factory) -> Path:
    from tiny_gguf import write_tiny_lora_gguf

    return write_tiny_lora_gguf(lora_dir, tmp_path_factory.mktemp("tiny-lora-gguf") / "lora.gguf")


@pytest.fixture(scope="session")
def adapted_lm(tiny_model_dir, lora_dir):
    """The tiny torch model with the adapter loaded the way `--adapter` loads it."""
    from editllm.editor.models import load_model

    return load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(lora_dir))


@pytest.fixture
def raw_outputs(monkeypatch) -> list[str]:
    """Every text rewrite or spec decoded, in order, whether or not it then made a usable file (a random
    tiny model rarely closes its fence, so the error alone would hide what it wrote)."""
    import editllm.editor.edit as edit

    seen: list[str] = []
    finish = edit.finish_text

    def record(src, output, *args, **kwargs):
        seen.append(output)
        return finish(src, output, *args, **kwargs)

    monkeypatch.setattr(edit, "finish_text", record)
    return seen


def outputs(lm, seen: list[str], copy_first: bool = True) -> dict:
    """Each file's rewrite and spec output and outcome, after a copy-mode run that leaves the adapter on
    (so a missing switch-off would show)."""
    got = {}
    for name, text in FILES.items():
        src = source_from_text(text.encode(), name)
        for mode in ("copy", "rewrite", "spec") if copy_first else ("rewrite", "spec"):
            del seen[:]
            try:
                res = edit_file(lm, src, INSTRUCTION[name], EditOptions(mode=mode, max_new_tokens=48))
                got[name, mode] = (list(seen), res.raw_output, res.new_text, res.stats.output_tokens)
            except EditError as exc:
                got[name, mode] = (list(seen), "EditError", str(exc))
            assert mode == "copy" or seen, "rewrite/spec decoded nothing"
    return {k: v for k, v in got.items() if k[1] != "copy"}


# --- torch ----------------------------------------------------------------------------------------------------

def test_torch_adapter_is_off_by_default_and_switches_the_logits(tiny_lm, adapted_lm):
    """Unmerged: off, the rows are the base model's exactly; on, they differ; a switch empties the cache."""
    base = tiny_lm.engine
    base.reset()
    ref = base.forward(IDS, keep=4).clone()
    engine = adapted_lm.engine
    assert engine.has_adapter and not engine.adapter_on and not base.has_adapter
    engine.reset()
    assert torch.equal(engine.forward(IDS, keep=4), ref)
    engine.use_adapter(True)
    assert engine.length == 0  # entries computed without the adapter are dropped
    on = engine.forward(IDS, keep=4).clone()
    assert (on - ref).abs().max() > 100 * (ref - ref.mean()).abs().max() * 1e-3
    assert not torch.allclose(on, ref, atol=1e-3)
    engine.use_adapter(False)
    assert engine.length == 0
    assert torch.equal(engine.forward(IDS, keep=4), ref)


def test_a_bf16_model_with_its_adapter_keeps_the_base_models_every_other_tensor(tiny_model_dir, lora_dir):
    """Only the adapter's weights take the model's dtype: the rotary tables' inverse frequencies stay float32
    (a bf16 cast turned every position by a wrong angle), so with the adapter off the logits are the bf16
    base model's bit for bit, at a long prompt's positions too."""
    from editllm.editor.engine import TorchEngine
    from editllm.editor.models import load_model

    base = load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16")
    adapted = load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16", adapter=str(lora_dir))
    buffers = {n.split("model.", 1)[-1]: b for n, b in adapted.model.named_buffers() if "inv_freq" in n}
    assert buffers and all(b.dtype == torch.float32 for b in buffers.values())
    assert all(p.dtype == torch.bfloat16 for n, p in adapted.model.named_parameters() if "lora_" in n)
    ids = list(range(1000, 2200))
    ref = TorchEngine(base.model, base.tokenizer).forward(ids, keep=4)
    assert torch.equal(TorchEngine(adapted.model, adapted.tokenizer).forward(ids, keep=4), ref)


def test_torch_spec_and_rewrite_with_the_adapter_loaded_are_the_base_models(tiny_lm, adapted_lm, raw_outputs):
    """Byte-identical to the model without any adapter, even right after copy mode ran with it on."""
    assert outputs(adapted_lm, raw_outputs) == outputs(tiny_lm, raw_outputs, copy_first=False)


def test_copy_mode_writes_with_the_adapter_and_falls_back_without_it(tiny_lm, adapted_lm, monkeypatch,
                                                                      raw_outputs):
    """The program is written with the adapter on; the fallback to spec runs without it: it decodes the
    base model's spec output (and ends as that does)."""
    from editllm.editor.copymode import CopyRun, ProgramFailed

    seen = []
    run_model = CopyRun.run_model

    def unusable(self, max_tokens, cached=False):
        try:
            run_model(self, max_tokens, cached)
        except (ProgramFailed, EditError):
            pass
        seen.append(self.engine.adapter_on)
        raise ProgramFailed("forced unusable program")

    def outcome(lm, mode: str) -> tuple:
        del raw_outputs[:]
        src = source_from_text(FILES["stats.py"].encode(), "stats.py")
        try:
            res = edit_file(lm, src, INSTRUCTION["stats.py"], EditOptions(mode=mode, max_new_tokens=48, focus=False))
            return list(raw_outputs), res.new_text, res.fallback
        except EditError as exc:  # the random model may never close the file
            return list(raw_outputs), str(exc), "forced unusable program"

    base = outcome(tiny_lm, "spec")
    monkeypatch.setattr(CopyRun, "run_model", unusable)
    fallback = outcome(adapted_lm, "copy")
    assert seen == [True] and base[0]
    assert fallback[:2] == base[:2] and fallback[2] == "forced unusable program"
    assert not adapted_lm.engine.adapter_on


# --- llama.cpp ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def llama_engines(tiny_gguf, lora_gguf):
    from editllm.editor.llamacpp import LlamaCppEngine

    kw = {"n_ctx": 512, "n_batch": 128, "threads": 1}
    return LlamaCppEngine(tiny_gguf, **kw), LlamaCppEngine(tiny_gguf, adapter=lora_gguf, **kw)


def peft_reference(tiny_model_dir, lora_dir) -> np.ndarray:
    """transformers + peft logits of the last 4 IDS, with the output head scaled as in the tiny GGUF."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * TINY_HEAD_SCALE)
    model = PeftModel.from_pretrained(model, lora_dir).eval()
    with torch.no_grad():
        return model(torch.tensor([IDS])).logits[0, -4:].numpy()


def test_llamacpp_adapter_applies_peft_lora_and_removes_cleanly(llama_engines, tiny_model_dir, lora_dir):
    """On: llama.cpp's rows equal transformers+peft's (names, shapes and alpha/r scale are right). Off:
    the base engine's rows again, after a switch that emptied the cache."""
    base, engine = llama_engines
    base.reset()
    ref = arr(base.forward(IDS, keep=4)).copy()
    assert engine.has_adapter and not engine.adapter_on
    engine.reset()
    off = arr(engine.forward(IDS, keep=4)).copy()
    np.testing.assert_allclose(off, ref, rtol=0, atol=1e-4 * np.abs(ref).max())
    engine.use_adapter(True)
    assert engine.length == 0
    on = arr(engine.forward(IDS, keep=4)).copy()
    want = peft_reference(tiny_model_dir, lora_dir)
    assert np.abs(on - want).max() < 1e-2 * np.abs(want).max()
    assert (on.argmax(-1) == want.argmax(-1)).all()
    assert np.abs(on - ref).max() > 0.1 * np.abs(ref).max()  # the adapter changes the rows a lot
    engine.use_adapter(False)
    assert engine.length == 0
    np.testing.assert_allclose(arr(engine.forward(IDS, keep=4)), ref, rtol=0, atol=1e-4 * np.abs(ref).max())


def test_a_bad_lora_gguf_is_one_clear_error(tiny_gguf):
    from editllm.editor.llamacpp import LlamaCppEngine

    with pytest.raises(EditError, match="could not load it as a LoRA"):
        LlamaCppEngine(tiny_gguf, n_ctx=256, n_batch=32, threads=1, adapter=tiny_gguf)  # a model, not a LoRA


@pytest.fixture(scope="session")
def llama_lms(tiny_gguf, lora_gguf, tmp_path_factory):
    """The tiny GGUF without and with the LoRA GGUF, loaded as `--engine llamacpp [--adapter]` loads them."""
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
        return (models.load_model(str(tiny_gguf), engine="llamacpp"),
                models.load_model(str(tiny_gguf), engine="llamacpp", adapter=str(lora_gguf)))


def test_llamacpp_spec_and_rewrite_with_the_adapter_loaded_are_the_base_models(llama_lms, raw_outputs):
    base, adapted = llama_lms
    assert adapted.engine_name == "llamacpp" and adapted.engine.has_adapter and adapted.adapter
    got, want = outputs(adapted, raw_outputs), outputs(base, raw_outputs, copy_first=False)
    assert got == want
    for name in FILES:
        assert got[name, "spec"] == got[name, "rewrite"]


# --- choosing the engine --------------------------------------------------------------------------------------

def test_engine_choice_with_an_adapter(tmp_path):
    from editllm.editor.models import adapter_gguf, pick_engine

    peft_only = tmp_path / "peft"
    peft_only.mkdir()
    both = tmp_path / "both"
    both.mkdir()
    (both / "adapter.gguf").write_bytes(b"GGUF")
    lone = tmp_path / "lone.gguf"
    lone.write_bytes(b"GGUF")
    assert adapter_gguf(str(peft_only)) is None and adapter_gguf(str(both)) == both / "adapter.gguf"
    assert adapter_gguf(str(lone)) == lone and adapter_gguf(str(tmp_path / "missing.gguf")) is None
    assert pick_engine("auto", "bundled:1.5b", "cpu", str(both)) == "llamacpp"
    assert pick_engine("auto", "m.gguf", "cpu", str(lone)) == "llamacpp"
    assert pick_engine("auto", "bundled:1.5b", "cpu", str(peft_only)) == "torch"
    assert pick_engine("auto", "bundled:1.5b", "cuda", str(both)) == "static"  # the GPU engine (editor.static)
    assert pick_engine("llamacpp", "bundled:1.5b", "cpu", str(both)) == "llamacpp"
    with pytest.raises(EditError, match="editllm train convert"):
        pick_engine("llamacpp", "bundled:1.5b", "cpu", str(peft_only))
    with pytest.raises(EditError, match="runs on llama.cpp only"):
        pick_engine("torch", "bundled:1.5b", "cpu", str(lone))
    with pytest.raises(EditError, match="runs on llama.cpp only"):
        pick_engine("auto", "some/dir", "cpu", str(lone))


def test_cli_copy_mode_on_llamacpp_with_an_adapter_folder(tiny_gguf, lora_dir, lora_gguf, tmp_path, monkeypatch):
    """`--adapter DIR` holding adapter.gguf runs on llama.cpp by default and --stats names both."""
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    adapter = tmp_path / "selector"
    shutil.copytree(lora_dir, adapter)
    (tmp_path / "stats.py").write_text(FILES["stats.py"])
    args = ["fix", "stats.py", INSTRUCTION["stats.py"], "--model", str(tiny_gguf), "--mode", "copy",
            "--max-new-tokens", "48", "--stats", "--quiet", "--adapter", str(adapter)]
    res = CliRunner().invoke(app, args + ["--engine", "llamacpp"])
    assert res.exit_code == 2 and "editllm train convert" in res.stderr and len(res.stderr.splitlines()) == 1
    shutil.copy(lora_gguf, adapter / "adapter.gguf")
    res = CliRunner().invoke(app, args)
    assert res.exit_code in (0, 2), res.output
    lines = res.stderr.strip().splitlines()
    stats = json.loads(lines[0])
    assert stats["engine"] == "llamacpp" and stats["adapter"] == str(adapter)
    if res.exit_code == 2:  # a random model may never close the file: the stats with its error, then the error
        assert len(lines) == 2 and lines[1].startswith("editllm: error: ") and "error" in stats


# --- conversion -----------------------------------------------------------------------------------------------

def test_train_convert_refuses_bad_input_in_one_line(tmp_path, lora_dir):
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    for args, says in (([str(tmp_path / "nowhere")], "no such adapter folder"),
                       ([str(tmp_path / "empty")], "no adapter_config.json"),
                       ([str(lora_dir), "--model", str(tmp_path / "no-base")], "model not found"),
                       ([str(lora_dir), "--model", str(tmp_path / "empty"), "--outtype", "f32"], "no config.json")):
        res = runner.invoke(app, ["train", "convert", *args])
        assert res.exit_code == 2 and says in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_train_convert_writes_a_gguf_llamacpp_applies_like_peft(request, tmp_path, monkeypatch, tiny_model_dir,
                                                               tiny_gguf, lora_dir, llama_engines):
    """End to end: llama.cpp's own converter (from llama-cpp-python's sdist, fetched once into a cache
    that pytest keeps) against the tiny model's HF folder; the result loads and gives the rows of the
    GGUF this suite writes itself, which match transformers + peft."""
    from editllm.editor.llamacpp import LlamaCppEngine

    monkeypatch.setenv("EDITLLM_CACHE", str(request.config.cache.mkdir("editllm-lora-converter")))
    adapter = tmp_path / "selector"
    shutil.copytree(lora_dir, adapter)
    res = CliRunner().invoke(app, ["train", "convert", str(adapter), "--model", str(tiny_model_dir),
                                   "--outtype", "f32"])
    assert res.exit_code == 0, res.stderr
    assert "wrote" in res.stderr and (adapter / "adapter.gguf").is_file()
    assert not [p for p in adapter.iterdir() if p.name.startswith(".")]  # no temp file left behind
    _, ours = llama_engines
    ours.use_adapter(True)
    ours.reset()
    want = arr(ours.forward(IDS, keep=4)).copy()
    converted = LlamaCppEngine(tiny_gguf, n_ctx=512, n_batch=128, threads=1,
                               adapter=adapter / "adapter.gguf")
    converted.use_adapter(True)
    got = arr(converted.forward(IDS, keep=4))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    ours.use_adapter(False)


def test_the_transformers_peers_count_forwards_through_a_peft_wrapper(adapted_lm):
    """hf-greedy on a model with the adapter loaded: peft's `generate` runs its base model's forward, which is
    what the bench counts (it counted none on the wrapper)."""
    from editllm.bench.runner import hf_pld_generate

    adapted_lm.engine.use_adapter(False)
    out, stats = hf_pld_generate(adapted_lm, IDS[:20], 8, lambda ids: False, lookup=None, name="hf-greedy")
    assert len(out) == stats.output_tokens == stats.forwards == 8
