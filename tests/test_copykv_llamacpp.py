"""--copy-kv reuse on the llama.cpp engine (tiny F32 GGUF): the cells it takes from the prompt give what
the torch engine's rotated cache entries give, and oracle programs still resolve to the exact text."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import TINY_HEAD_SCALE
from editllm.editor.engine import Reuse, TorchEngine
from editllm.editor.llamacpp import LlamaCppEngine

PROMPT = list(range(1000, 1060))

def arr(rows) -> np.ndarray:
    """Logits rows as numpy: llama.cpp's engine returns numpy, the torch engine a tensor."""
    return rows.numpy() if hasattr(rows, "numpy") else np.asarray(rows)



@pytest.fixture(scope="module")
def engines(tiny_gguf, tiny_model_dir, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * TINY_HEAD_SCALE)
    return LlamaCppEngine(tiny_gguf, tokenizer, n_ctx=1024, n_batch=64, threads=1), TorchEngine(model, tokenizer)


@pytest.mark.parametrize("parts", [
    [7, Reuse(10, tuple(PROMPT[10:30])), 8, 9],
    [7, Reuse(5, tuple(PROMPT[5:12])), 3, Reuse(20, tuple(PROMPT[20:40])), Reuse(41, tuple(PROMPT[41:45])), 8, 9],
])
def test_reused_cells_match_the_torch_engine(engines, parts):
    llama, ref = engines
    for engine in engines:
        engine.reset()
        engine.forward(PROMPT, keep=1)
        engine.forward([5, 6], keep=1)
    a = arr(llama.forward_reuse(parts, keep=2)).copy()
    b = arr(ref.forward_reuse(parts, keep=2))
    assert llama.length == ref.length == len(PROMPT) + 2 + sum(len(p.ids) if isinstance(p, Reuse) else 1 for p in parts)
    assert np.abs(a - b).max() < 1e-2 * np.abs(b).max() and (a.argmax(-1) == b.argmax(-1)).all()
    after_a = arr(llama.forward([11, 12], keep=1)).copy()  # later forwards see the reused cells
    after_b = arr(ref.forward([11, 12], keep=1))
    assert np.abs(after_a - after_b).max() < 1e-2 * np.abs(after_b).max()


def test_without_the_shift_the_cells_would_differ(engines):
    """A control that can fail: the same cells at their prompt positions (no shift) give other logits."""
    llama, _ = engines
    llama.reset()
    llama.forward(PROMPT, keep=1)
    shifted = arr(llama.forward_reuse([7, Reuse(10, tuple(PROMPT[10:30])), 8], keep=1)).copy()
    llama.reset()
    llama.forward(PROMPT, keep=1)
    recomputed = arr(llama.forward([7, *PROMPT[10:30], 8], keep=1)).copy()
    assert not np.allclose(shifted, recomputed, atol=1e-3 * np.abs(recomputed).max())  # context differs
    assert np.abs(shifted - recomputed).max() < 0.5 * np.abs(recomputed).max()


def test_oracle_with_reuse_gives_the_exact_text_on_llamacpp(tiny_gguf, tmp_path_factory, monkeypatch):
    import editllm.editor.models as models
    from editllm.editor.copymode import run_oracle
    from editllm.grammar import oracle

    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
    lm = models.load_model(str(tiny_gguf), engine="llamacpp")
    before = "".join(f"def f{k}(x):\n    return x + {k}\n\n\n" for k in range(8))
    after = before.replace("return x + 5", "return x - 5")
    text, stats = run_oracle(lm, "m.py", before, "fix f5", oracle(before, after), copy_kv="reuse")
    plain, _ = run_oracle(lm, "m.py", before, "fix f5", oracle(before, after))
    assert text == plain == after and stats.reused_tokens > stats.prefilled_tokens // 2
    assert lm.engine.length == stats.prompt_tokens + stats.program_tokens + stats.prefilled_tokens


def test_reuse_after_a_prefix_read_kept_or_loaded(engines, tiny_gguf, tokenizer):
    """Copy mode starts its prompt from the saved fixed part (Engine.start): whether that part was read,
    kept from the last request or loaded from disk, the cells reuse takes are this request's prompt's
    (a state or prompt length left from the last request would give other rows, or raise)."""
    llama, _ = engines
    parts = [7, Reuse(10, tuple(PROMPT[10:30])), 8, 9]
    other = PROMPT[:8] + list(range(2000, 2052))  # same fixed part, another file
    want = {}
    for prompt in (PROMPT, other):
        llama.reset()
        llama.forward(prompt, keep=1)
        want[prompt[8]] = arr(llama.forward_reuse(parts, keep=2)).copy()
    llama.reset()
    fresh = LlamaCppEngine(tiny_gguf, tokenizer, n_ctx=1024, n_batch=64, threads=1)
    for engine, prompt, source in ((llama, PROMPT, "read"), (llama, other, "memory"), (fresh, PROMPT, "disk")):
        assert engine.start(prompt[:8]) == (8, source)
        engine.forward(prompt[8:], keep=1)
        got = arr(engine.forward_reuse(parts, keep=2))
        ref = want[prompt[8]]
        assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max() and (got.argmax(-1) == ref.argmax(-1)).all()
    fresh.close()


@pytest.mark.parametrize("copy_kv", ["reread", "reuse"])
@pytest.mark.parametrize("engine", ["llamacpp", "torch"])
def test_copy_mode_with_its_prefix_writes_the_same_program(tiny_gguf, tiny_model_dir, tmp_path_factory,
                                                           monkeypatch, copy_kv, engine):
    """The copy prompt's fixed part kept or loaded instead of read: the model writes the same program
    (the tiny F32 GGUF's scaled head leaves no near-ties; torch keeps the prefix in memory only), file
    after file."""
    import editllm.editor.models as models
    from editllm.editor.copymode import CopyRun, ProgramFailed

    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
    if engine == "llamacpp":
        lm = models.load_model(str(tiny_gguf), engine="llamacpp")
    else:
        lm = models.load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    files = ["".join(f"def f{k}(x):\n    return x + {k}\n\n\n" for k in range(n)) for n in (5, 7, 5)]

    def program(text: str, prefix: bool) -> tuple[str, int, str]:
        run = CopyRun(lm, "m.py", text, "fix f3", copy_kv=copy_kv, prefix=prefix)
        try:
            run.run_model(48)
        except ProgramFailed:
            pass  # a random model's program need not resolve: the tokens it wrote are compared
        return lm.tokenizer.decode(run.program), run.stats.prefix_tokens, run.stats.prefix_source

    kept = [program(text, True) for text in files]  # file after file: the prefix stays in the cache
    assert [source for _, _, source in kept] == ["read", "memory", "memory"] and kept[0][1] > 100
    assert [program(text, False)[0] for text in files] == [text for text, _, _ in kept]
    lm.engine.reset()
    assert program(files[1], True)[::2] == (kept[1][0], "disk" if engine == "llamacpp" else "read")
