"""Test doubles. `ScriptedModel` stands in for a model only where a test must force one specific edit;
`FakeHttp` for a serving engine's HTTP, where a test checks the requests a client sends and how it reads answers.

Also importable from a subprocess (the pre-commit hook test) through `sitecustomize.py` beside it.
"""

from __future__ import annotations

import json

import torch
from editllm.editor.models import LoadedModel

IM_START = 151644  # `<|im_start|>`: every prompt's last part has one (the assistant turn), no output does


class ScriptedModel(torch.nn.Module):
    """A fake causal LM that writes a fixed token script after the prompt, whatever it is shown.

    Its prediction depends only on the position, so it behaves identically under plain decoding,
    verified drafts and cache crops. Only for tests that must force a specific edit.
    """

    def __init__(self, script: list[int], vocab: int, eos: int) -> None:
        super().__init__()
        self.script, self.vocab, self.eos = script, vocab, eos
        self.prompt_len: int | None = None
        self.head = 0  # tokens of the first forward after a reset: where a prompt's rest begins
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        from transformers import GenerationConfig, Qwen2Config

        self.config = Qwen2Config(vocab_size=vocab, hidden_size=8, num_hidden_layers=1,
                                  num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=32768)
        self.generation_config = GenerationConfig(eos_token_id=eos)

    def forward(self, input_ids, past_key_values, use_cache=True, logits_to_keep=1):
        past = past_key_values.get_seq_length()
        n = input_ids.shape[1]
        # the prompt, or its part after a kept prefix (it starts where the prefix ended and holds the
        # chat turns); a draft copied from the prompt may hold <|im_start|> too, but never starts there.
        # The prompt's forward may carry the first draft (editor.decode): its rows are the last prompt
        # token's and the draft's, so the prompt ends `logits_to_keep - 1` tokens before the input does.
        if past == 0:
            self.head = n  # a kept prefix (Engine.start), or a whole prompt read at once
        if past == 0 or (past == self.head and IM_START in input_ids[0].tolist()):
            self.prompt_len = past + n - (logits_to_keep - 1)
        kv = torch.zeros(1, 1, n, 1)
        past_key_values.update(kv, kv, 0)
        logits = torch.zeros(1, logits_to_keep, self.vocab)
        for row in range(logits_to_keep):
            pos = past + n - logits_to_keep + row  # absolute position of this row's input token
            j = pos + 1 - self.prompt_len
            target = self.script[j] if 0 <= j < len(self.script) else self.eos
            logits[0, row, target] = 1.0
        return type("Out", (), {"logits": logits})()


def scripted_model(tokenizer, text: str) -> LoadedModel:
    """A LoadedModel whose output is exactly `text` (then EOS)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    model = ScriptedModel(ids, 151936, tokenizer.convert_tokens_to_ids("<|im_end|>"))
    return LoadedModel(model, tokenizer, "scripted", "cpu", torch.float32, 0.0)


def ask_again_on_every_copy(monkeypatch) -> list[tuple]:
    """Copy mode taking every program that copies for idle (the copy before its first gen, else its first
    copy): each ask stops at its first copy and the model is asked again, so a random model exercises the
    asks. Returns the list the asks are recorded in: (prompt, banned, cached, program so far) each."""
    from editllm.editor.copymode import CopyRun
    from editllm.grammar import Copy

    asks: list[tuple] = []
    ask = CopyRun.run_model

    def recorded(self, max_tokens, cached=False):
        try:
            return ask(self, max_tokens, cached)
        finally:
            asks.append((tuple(self.prompt), self.matcher.banned, cached, tuple(self.program)))

    monkeypatch.setattr(CopyRun, "run_model", recorded)
    monkeypatch.setattr("editllm.editor.copymode.idle_copy",
                        lambda ops, lines: next((op for op in ops if isinstance(op, Copy)), None))
    return asks


class FakeHttp:
    """Answers `HttpClient._fetch` from a table of path -> JSON (or text, or an HTTP status) and keeps the
    bodies sent; the generation paths (vLLM's `/v1/completions`, SGLang's `/generate`) answer from a script,
    one answer per request."""

    SCRIPTED = ("/v1/completions", "/generate")

    def __init__(self, pages: dict, script: list[dict] | None = None) -> None:
        self.pages, self.script, self.sent = pages, list(script or []), []

    def __call__(self, client, path, data, timeout):
        from editllm.remote.client import ServerError

        body = None if data is None else json.loads(data)
        self.sent.append((path, body))
        if path in self.SCRIPTED and self.script:
            return json.dumps(self.script.pop(0)).encode()
        page = self.pages.get(path, 404)
        if isinstance(page, int):
            raise ServerError(f"server {path}: HTTP {page}: Not Found", transient=page >= 500)
        return page.encode() if isinstance(page, str) else json.dumps(page).encode()

    def bodies(self, path: str) -> list[dict]:
        return [b for p, b in self.sent if p == path]
