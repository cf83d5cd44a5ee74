"""Which CPU engine `--engine auto` takes (editor.enginechoice): priced from measured forward costs, recorded per
machine and model file by `model prepare`, and read only where it was made and the torch conversion is whole."""

from __future__ import annotations

import json

import pytest
from editllm.editor import enginechoice
from editllm.editor.costs import Costs
from editllm.editor.enginechoice import estimate, record, recorded
from editllm.editor.models import gguf_conversion, pick_engine

# Forward times (seconds) measured by editor.costs.measure with the bundled 1.5B, session 44's Xeon (AMX, 2 cores):
# llama.cpp's AVX2 Q4_K kernels against the torch engine's bf16 (AMX tiles in oneDNN)
LLAMA_AMX = Costs(0.076, 0.024, ((1, 0.0886), (8, 0.368), (16, 0.442), (32, 1.029), (64, 1.622), (128, 3.370)))
TORCH_AMX = Costs(0.26, 0.006, ((1, 0.288), (8, 0.259), (16, 0.274), (32, 0.448), (64, 0.634), (128, 1.029)))
# 2 AVX2 cores without bf16 units: llama.cpp as tests/test_costs.py's LLAMA_CPU, the torch engine in float32 as
# editor/costs.py gives it (a step ~470 ms, a batched token ~26 ms)
LLAMA_AVX2 = Costs(0.068, 0.025, ((1, 0.0836), (8, 0.4809), (16, 0.5269), (32, 0.9729), (64, 1.4241),
                                  (128, 3.4128)))
TORCH_FP32 = Costs(0.47, 0.026, ((1, 0.47), (8, 0.66), (16, 0.87), (32, 1.30), (64, 2.14), (128, 3.80)))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def test_the_reference_edit_favours_cheap_batched_forwards_and_a_cheap_step_where_batches_cost_as_much():
    assert estimate(TORCH_AMX) < 0.7 * estimate(LLAMA_AMX)  # AMX: the torch engine
    assert estimate(LLAMA_AVX2) < 0.7 * estimate(TORCH_FP32)  # no bf16 units: llama.cpp
    slow_step = Costs(1.0, 0.006, ((1, 1.0), (64, 1.0), (128, 1.2)))  # a cheap batch cannot pay for a slow step
    assert estimate(LLAMA_AMX) < estimate(slow_step)


def test_a_recorded_choice_holds_only_for_its_machine_and_model_file(gguf, monkeypatch):
    saved = record(gguf, LLAMA_AMX, TORCH_AMX)
    assert saved["engine"] == "torch" and recorded(gguf)["engine"] == "torch"
    assert saved["reference_edit_seconds"]["llamacpp"] > saved["reference_edit_seconds"]["torch"]
    gguf.write_bytes(b"GGUF" + bytes(61))  # the model file changed: measured for another
    assert recorded(gguf) is None
    record(gguf, LLAMA_AMX, TORCH_AMX)
    monkeypatch.setattr(enginechoice, "cpu_kind", lambda: "another CPU")
    assert recorded(gguf) is None
    assert recorded(None) is None


def test_a_damaged_record_is_no_choice(gguf):
    record(gguf, LLAMA_AMX, TORCH_AMX)
    path = enginechoice.choice_path(gguf)
    path.write_text("{not json")
    assert recorded(gguf) is None
    path.write_text(json.dumps({"key": enginechoice.machine_key(gguf), "engine": "vulkan"}))
    assert recorded(gguf) is None


def whole_conversion(folder):
    """A converted folder `models.whole_conversion` accepts: a config and one safetensors file of no tensors."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    header = b"{}"
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)


def test_auto_takes_the_torch_engine_only_where_it_was_measured_faster_and_is_converted(gguf):
    pytest.importorskip("llama_cpp")
    spec = str(gguf)
    assert pick_engine("auto", spec, "cpu", None) == "llamacpp"  # nothing measured
    record(gguf, LLAMA_AMX, TORCH_AMX)
    assert pick_engine("auto", spec, "cpu", None) == "llamacpp"  # faster, but not converted: auto never converts
    whole_conversion(gguf_conversion(gguf))
    assert pick_engine("auto", spec, "cpu", None) == "torch"
    assert pick_engine("llamacpp", spec, "cpu", None) == "llamacpp"  # a named engine is what runs
    record(gguf, LLAMA_AVX2, TORCH_FP32)
    assert pick_engine("auto", spec, "cpu", None) == "llamacpp"  # measured slower


def test_an_adapter_keeps_llamacpp_whatever_was_measured(gguf, tmp_path):
    pytest.importorskip("llama_cpp")
    record(gguf, LLAMA_AMX, TORCH_AMX)
    whole_conversion(gguf_conversion(gguf))
    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"GGUF")
    assert pick_engine("auto", str(gguf), "cpu", str(adapter)) == "llamacpp"
