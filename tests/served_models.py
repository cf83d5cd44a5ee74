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


def write_lora(model_dir: Path, out: Path) -> Path:
    """A random rank-8 LoRA of the model in `model_dir` on q_proj and v_proj (peft's format, as `editllm train`
    writes the selector's)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    torch.manual_seed(1)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(base, config).save_pretrained(out)
    return out


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


# --- checks that every served engine's tests run (the engine's own server and folder passed in) -------------


def check_copy_loop_writes_local_copy_modes_program(url: str, model_dir: Path) -> None:
    """Each request writes up to the next copy tag under the engine's grammar backend; the client appends the
    copied lines' ids; the program is local copy mode's on the same folder, and it resolves."""
    from editllm.editor.copymode import run_copy
    from editllm.editor.edit import EditOptions
    from editllm.editor.source import source_from_text
    from editllm.grammar.program import parse
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import edit_remote, run_copy_loop
    from editllm.remote.session import connect

    served, local = connect(url, str(model_dir)), local_lm(model_dir)
    src = source_from_text(COPY_FILE.encode(), "m.py")
    prompt, resolver, stats = copy_parts(served, src.path, src.text, src.lines, "Keep it.")
    text = run_copy_loop(served, prompt, resolver, stats, 64)
    local_text, local_stats = run_copy(local, src.path, src.text, "Keep it.", 64, lines=src.lines, retries=0)
    assert stats.program == local_stats.program == '<copy lines="1-2"/>'
    assert text == local_text == COPY_FILE == resolver.text(parse(stats.program), monotonic=True)
    assert stats.requests == stats.spans + 1 + stats.cuts == 2 and stats.cuts == 0
    res = edit_remote(served, src, "Keep it.", EditOptions(mode="copy"))
    assert res.fallback is None and res.new_text == COPY_FILE and res.stats.program == '<copy lines="1-2"/>'


def check_cli_fix(url: str, model_dir: Path, engine: str, tmp_path: Path, monkeypatch) -> None:
    """`editllm fix --server URL` prints the chain model's diff and its stats name the engine."""
    import json

    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "settings.cfg").write_text("value = 1\n")
    res = CliRunner().invoke(app, ["fix", "settings.cfg", "Simplify.", "--model", str(model_dir), "--server", url,
                                   "--mode", "rewrite", "--allow-deletions", "--stats"])
    assert res.exit_code == 0, res.output
    assert "-value = 1\n+pass)\n" in res.stdout
    stats = json.loads(next(line for line in res.stderr.splitlines() if line.startswith("{")))
    assert stats["engine"] == engine and stats["server"] == url


def check_bench(url: str, model_dir: Path, engine: str, tmp_path: Path, modes: str) -> dict:
    """`editllm bench --server URL` on one case: no errors, rewrite exact, spec identical to it; the records."""
    import json

    from editllm.cli.main import app
    from typer.testing import CliRunner

    case = {"id": "cfg_1", "kind": "edit", "path": "settings.cfg", "instruction": "Simplify.",
            "before": "value = 1\nother = 2\n", "after": "pass)\n", "tests": []}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["bench", "--model", str(model_dir), "--cases", str(cases), "--out", str(out),
                                   "--server", url, "--mode", modes, "--no-focus"])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    records = {r["mode"]: r for r in results["records"]}
    assert set(records) == set(modes.split(",")) and results["engine"] == engine
    assert all(r["error"] is None for r in records.values()) and records["rewrite"]["exact_match"]
    assert records["spec"]["identical_to_rewrite"] is True and results["settings"]["server"] == url
    return records


def check_another_tokenizer_is_refused(client) -> None:
    import pytest
    from editllm.remote.client import ServerError

    class Other:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [1, 2, 3]}

    with pytest.raises(ServerError, match="another tokenizer"):
        client.check_tokenizer(Other())


def check_request_grammar_obeyed(client, model_dir: Path, after: int) -> None:
    """The copy loop's GBNF sent with a request: gen spans, then at most one copy of lines after `after`."""
    from editllm.grammar.program import Copy, parse
    from editllm.remote.gbnf import request_grammar
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    ids = tok("Write a program.\n", add_special_tokens=False)["input_ids"]
    answer = client.complete(ids, 48, grammar=request_grammar(12, after))
    text = tok.decode(answer["tokens"], skip_special_tokens=False).replace("<|im_end|>", "")
    if answer["stop_type"] == "limit":  # cut mid-span: what was written is a prefix of a legal program
        assert text.startswith("<gen>")
        return
    ops = parse(text)
    copies = [op for op in ops if isinstance(op, Copy)]
    assert len(copies) <= 1 and all(after < c.i <= c.j <= 12 for c in copies)
    assert not copies or ops[-1] == copies[0]


def check_adapter_only_where_named(url: str, model_dir: Path, lora_dir: Path) -> None:
    """A program request names the adapter and writes what peft's model writes; every other request runs the
    base model."""
    import torch
    from editllm.remote.session import connect
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    served = connect(url, str(model_dir), lora=True)
    assert served.info.adapters == ("selector",)
    ids = chat_ids(served.tokenizer, "def f(x):\n    return x + 1\n" * 8)
    on = served.client.complete(ids, 32, lora=served.scale(True))["tokens"]
    off = served.client.complete(ids, 32, lora=served.scale(False))["tokens"]
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    assert off == greedy(base, ids, 32)
    assert on == greedy(PeftModel.from_pretrained(base, str(lora_dir)), ids, 32) and on != off
