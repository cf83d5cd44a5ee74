"""Tiny Qwen2 HF folders for the tests that run a real serving engine (vLLM, SGLang) beside the local torch
engine, and the local side's greedy reference.

Two models: a "chain" whose next token depends on the last one only (it finishes a rewrite with `pass)` and
writes the program `<copy lines="1-2"/>`), and a random one with its head scaled up (greedy's top-2 gaps wide,
so that two engines' rounding cannot flip a choice). head_dim 64: vLLM's CPU attention refuses 16.
"""

from __future__ import annotations

import shutil
from pathlib import Path

EOS = 151645  # <|im_end|>

CHAIN = {  # token -> the one token the chain model writes after it; any other token -> <|im_end|>
    3989: 6385, 6385: 340, 340: 73594,  # a rewrite prompt's "`\n" -> "pass" -> ")\n" -> "```": the file "pass)\n"
    198: 27, 27: 8560, 8560: 5128, 5128: 428, 428: 16, 16: 12, 12: 17, 17: 13123,  # "\n" -> '<copy lines="1-2"/>'
}
COPY_FILE = "a = 1\nb = x"  # ends in " x", off the chain: after the copied lines the model ends the program


def write_qwen2(tokenizer_dir: Path, out: Path, edit) -> Path:
    """A tiny Qwen2 HF folder (hidden 128, 2 heads of 64, 2 layers, Qwen's vocabulary and tokenizer), its
    weights changed by `edit(model)`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=151936, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=4096,
                         tie_word_embeddings=False, eos_token_id=EOS, bos_token_id=151643)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        edit(model)
    model.save_pretrained(out)
    for f in tokenizer_dir.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    return out


def scale_head(model) -> None:
    """Random weights, the head scaled up 100x so that greedy's top-2 gaps are wide."""
    model.lm_head.weight.mul_(100.0)


def chain(model) -> None:
    """Layers that add nothing (zero output projections), one-hot embeddings and a head that maps each token
    to its successor (logit ~113), with <|im_end|> as every token's second choice (~57) and the first choice
    of every other token: where a grammar refuses the successor, the program ends."""
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
    emb, head = model.model.embed_tokens.weight, model.lm_head.weight
    other = len(CHAIN)
    emb.zero_()
    head.zero_()
    emb[:, other] = 1.0
    head[EOS, other] = 10.0
    for k, (token, successor) in enumerate(CHAIN.items()):
        emb[token] = 0.0
        emb[token, k] = 1.0
        head[successor, k] = 10.0
        head[EOS, k] = 5.0


def greedy(model, ids: list[int], n: int) -> list[int]:
    """n greedy tokens from a transformers model (no end token stops it)."""
    import torch

    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor([ids]), max_new_tokens=n, do_sample=False, eos_token_id=None,
                             pad_token_id=0)
    return out[0, len(ids):].tolist()


def chat_ids(tokenizer, text: str) -> list[int]:
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                           tokenize=False)
    return tokenizer(prompt, add_special_tokens=False)["input_ids"]


def local_lm(model_dir: Path):
    from editllm.editor.models import load_model

    return load_model(str(model_dir), device="cpu", dtype="float32", engine="torch")
