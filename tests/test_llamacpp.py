"""The llama.cpp engine on a tiny F32 GGUF written at test time from the tiny random Qwen2."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("llama_cpp")

from conftest import _part1  # noqa: E402
from editllm.editor.llamacpp import LlamaCppEngine  # noqa: E402
from tiny_gguf import write_tiny_gguf  # noqa: E402

HEAD_SCALE = 100.0


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory, tiny_model_dir) -> Path:
    """The tiny model as F32 GGUF, output head scaled up (no near-ties), real Qwen tokenizer."""
    work = tmp_path_factory.mktemp("tiny-gguf")
    head = work / "head.gguf"
    shutil.copyfile(_part1(), head)
    os.truncate(head, 4 << 30)  # the reader maps every tensor of the full model: make the file that long
    out = write_tiny_gguf(tiny_model_dir, head, work / "tiny-f32.gguf", head_scale=HEAD_SCALE)
    head.unlink()
    return out


@pytest.fixture(scope="session")
def engine(tiny_gguf) -> LlamaCppEngine:
    return LlamaCppEngine(tiny_gguf, n_ctx=1024, n_batch=64, threads=1)


IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + list(
    range(1000, 1090)
)


def test_logits_match_the_torch_model(engine, tiny_model_dir):
    """Same weights, same tokens: llama.cpp's F32 logits equal transformers' (the converter is right)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    # untie: with tied embeddings, scaling lm_head's data would scale the input embedding too
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * HEAD_SCALE)
    with torch.no_grad():
        ref = model(torch.tensor([IDS])).logits[0, -5:].numpy()
    engine.reset()
    got = engine.forward(IDS, keep=5).copy()
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() < 1e-2 * np.abs(ref).max()
    assert (got.argmax(-1) == ref.argmax(-1)).all()


def test_truncate_then_forward_equals_never_having_seen_the_draft(engine):
    """A rejected draft leaves no trace: the rows after a crop are those of a clean run."""
    engine.reset()
    clean = engine.forward(IDS[:60], keep=1).copy()
    clean_next = engine.forward([IDS[60]], keep=1).copy()
    engine.reset()
    engine.forward(IDS[:50], keep=1)
    engine.forward(IDS[50:60] + [7, 8, 9, 10], keep=5)  # a draft of 4 wrong tokens rides along
    engine.truncate(4)
    assert engine.length == 60
    again = engine.forward([IDS[60]], keep=1)
    assert np.allclose(again, clean_next, atol=1e-3 * np.abs(clean_next).max())
    assert int(again.argmax()) == int(clean_next.argmax())
    assert clean.shape == (1, engine.n_vocab)


def test_long_input_goes_in_chunks_with_kept_rows_in_the_last(engine):
    """More tokens than n_batch (64): chunked, and the kept rows are still the last positions."""
    ids = IDS + IDS[15:]  # 195 tokens
    engine.reset()
    rows = engine.forward(ids, keep=3).copy()
    engine.reset()
    engine.forward(ids[:-3], keep=1)
    one_by_one = [engine.forward([t], keep=1).copy()[0] for t in ids[-3:]]
    assert engine.length == len(ids)
    assert (rows.argmax(-1) == np.array([r.argmax() for r in one_by_one])).all()


def test_bad_keep_and_full_context_are_refused(engine):
    from editllm.editor.errors import EditError

    engine.reset()
    with pytest.raises(ValueError):
        engine.forward([1, 2], keep=3)
    with pytest.raises(EditError):
        engine.forward(list(range(100, 100 + 1025)), keep=1)
