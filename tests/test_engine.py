"""The engine interface: TorchEngine keeps its cache exact, and the one verify loop runs on any engine
and takes a Steer's picks and fed tokens."""

from __future__ import annotations

import random

import pytest
import torch
from editllm.editor.decode import Decoder, Free
from editllm.editor.drafter import CopyDrafter, DraftSchedule
from editllm.editor.engine import Engine, TorchEngine


class TableEngine:
    """An engine with no model at all: the next token is a fixed function of the last one (so outputs
    cycle and drafts get accepted). Its "cache" is the token list: a wrong truncate changes what it
    predicts next."""

    def __init__(self, vocab: int = 40) -> None:
        self.tokenizer = None
        self.vocab_size = vocab
        self.eos = frozenset({vocab - 1})
        self.tokens: list[int] = []
        self.forwarded: list[list[int]] = []

    def forward(self, tokens: list[int], keep: int) -> torch.Tensor:
        self.tokens += tokens
        self.forwarded.append(list(tokens))
        rows = torch.zeros(keep, self.vocab_size)
        for r in range(keep):
            pos = len(self.tokens) - keep + r
            rows[r, (self.tokens[pos] * 7 + 1) % 29] = 1.0  # 29..38: never predicted, free to feed
        return rows

    def truncate(self, n: int) -> None:
        if n > 0:
            del self.tokens[-n:]

    def reset(self) -> None:
        self.tokens = []

    @property
    def length(self) -> int:
        return len(self.tokens)


def test_torch_engine_truncate_and_reset_keep_the_cache_exact(tiny_lm):
    engine: Engine = TorchEngine(tiny_lm.model, tiny_lm.tokenizer)
    assert engine.vocab_size == 151936 and 151645 in engine.eos
    first = engine.forward([11, 22, 33], keep=1)
    assert first.shape == (1, 151936) and first.device == tiny_lm.model.device
    rows = engine.forward([44, 55, 66, 77], keep=3)
    assert rows.shape == (3, 151936) and engine.length == 7
    engine.truncate(3)  # back to 11 22 33 44
    assert engine.length == 4
    again = engine.forward([55, 66], keep=2)
    torch.testing.assert_close(again, rows[:2], rtol=1e-4, atol=1e-4)
    engine.reset()
    assert engine.length == 0
    torch.testing.assert_close(engine.forward([11, 22, 33], keep=1), first, rtol=1e-5, atol=1e-5)


def test_spec_equals_rewrite_on_an_engine_without_a_model():
    """The loop, the drafter and truncation work on anything with the Engine members."""
    copied = forwards = tokens = 0
    for seed in range(20):
        rng = random.Random(seed)
        prompt = [rng.randrange(29) for _ in range(rng.randint(2, 30))]
        plain, _ = Decoder(TableEngine()).run(prompt, 60)
        engine = TableEngine()
        fast, stats = Decoder(engine).run(prompt, 60, None, CopyDrafter(3, DraftSchedule.parse("adaptive:4,2,16,2")))
        assert fast == plain
        assert engine.tokens[: len(prompt) + len(fast) - 1] == prompt + fast[:-1]
        copied, forwards, tokens = copied + stats.copied_tokens, forwards + stats.forwards, tokens + len(fast)
    assert copied > 100 and forwards < tokens  # drafts were accepted (and rejected ones truncated)


def test_a_run_on_the_cached_prompt_reads_only_its_last_token_again():
    """`cached`: the cache still begins with the prompt (a run on it just ended), so a second run cuts it back
    and reads the prompt's last token alone, and decodes what a fresh run decodes."""
    prompt = [3, 7, 11, 2, 5]
    engine = TableEngine()
    decoder = Decoder(engine)
    first, _ = decoder.run(prompt, 12)
    engine.forwarded.clear()
    again, stats = decoder.run(prompt, 12, cached=True)
    assert again == first and engine.forwarded[0] == prompt[-1:] and stats.forwards == 1 + len(first) - 1
    engine.reset()
    with pytest.raises(ValueError, match="fewer than the prompt"):
        decoder.run(prompt, 12, cached=True)


def test_steer_picks_and_feeds():
    """`pick` overrides the model's choice; `feed`'s tokens join the next forward and the drafter, not
    the output; `accept` hears each verified draft token."""

    class Steered(Free):
        def __init__(self) -> None:
            self.accepted: list[int] = []

        def pick(self, logits, best):
            return 5 if best == 7 else best

        def feed(self, token):
            return [38] if token == 5 else []

        def accept(self, token):
            self.accepted.append(token)

    class Seen(CopyDrafter):
        def append(self, token):
            super().append(token)
            self.seen = getattr(self, "seen", []) + [token]

    engine, steer, drafter = TableEngine(), Steered(), Seen()
    out, stats = Decoder(engine).run([1, 2, 3], 40, drafter=drafter, steer=steer)
    assert 7 not in out and 38 not in out and 5 in out
    fed = [call for call in engine.forwarded[1:] if call[0] == 5]
    assert fed and all(call[1] == 38 for call in fed)
    assert drafter.seen.count(38) == sum(call.count(38) for call in engine.forwarded) > 0
    assert len(steer.accepted) == stats.copied_tokens


def test_scripted_model_runs_through_torch_engine(scripted_lm):
    lm = scripted_lm("hello world")
    script = lm.tokenizer("hello world", add_special_tokens=False)["input_ids"]
    engine = TorchEngine(lm.model, lm.tokenizer)
    out, stats = Decoder(engine).run([1, 2, 3], 50, drafter=CopyDrafter())
    assert out == script and stats.stop_reason == "eos"
