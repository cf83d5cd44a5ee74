"""The copy-program grammar as a CFG and as an outlines output type: the line rules it states agree
with `check`, and an outlines transformers model writes only valid programs under it."""

from __future__ import annotations

import random

import pytest
import torch
from editllm.grammar import Copy, Gen, ProgramError, check, parse, render
from editllm.grammar.cfg import EXACT_LIMIT, exact_size, lark_grammar, output_type
from editllm.grammar.matcher import ll_tokenizer
from editllm.resolver import Resolver
from test_grammar import reference_ok


@pytest.fixture(scope="module")
def accepts(tokenizer):
    """Whether llguidance takes `text` as a whole program under `grammar` (token by token, as a
    model's constrained decoding would write it)."""
    import llguidance

    llt = ll_tokenizer(tokenizer, 151936, [151645])

    def run(grammar: str, text: str) -> bool:
        m = llguidance.LLMatcher(llt, grammar, log_level=0)
        assert not m.is_error(), m.get_error()
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if m.validate_tokens(ids) < len(ids):
            return False
        for t in ids:
            m.consume_token(t)
        return m.is_accepting()

    return run


def _valid(ops, n: int, monotonic: bool) -> bool:
    try:
        check(ops, n, monotonic)
        return True
    except ProgramError:
        return False


@pytest.mark.parametrize("monotonic", [True, False])
def test_exact_grammar_states_the_line_rules(accepts, monotonic):
    """Random programs, valid and not: the grammar accepts exactly those `check` accepts."""
    rng = random.Random(int(monotonic))
    seen = {True: 0, False: 0}
    for n in (1, 4, 11):
        grammar = lark_grammar(n, monotonic)
        for _ in range(25):
            ops = []
            for _ in range(rng.randint(0, 4)):
                if rng.random() < 0.3:
                    ops.append(Gen(rng.choice(["x\n", "", "a = 1\n"])))
                else:
                    i = rng.randint(1, n + 1)
                    ops.append(Copy(i, rng.randint(max(1, i - 2), n + 1)))
            want = _valid(ops, n, monotonic)
            seen[want] += 1
            assert accepts(grammar, render(ops)) == want, (n, render(ops))
    assert seen[True] > 10 and seen[False] > 10  # both kinds were tried


def test_after_starts_past_the_last_line_used(accepts):
    """What a server request carries once a program has copied up to line 4."""
    grammar = lark_grammar(12, after=4)
    assert accepts(grammar, '<copy lines="5-6"/><gen>x\n</gen><copy lines="7-12"/>')
    assert not accepts(grammar, '<copy lines="4-6"/>')
    assert accepts(grammar, "<gen>x\n</gen>") and accepts(grammar, "")


def test_past_the_size_limit_the_grammar_allows_more_and_the_resolver_refuses_it(accepts):
    n = 200
    assert exact_size(n) > EXACT_LIMIT
    grammar = lark_grammar(n)
    assert grammar == lark_grammar(None)
    backwards = '<copy lines="5-9"/><copy lines="1-3"/>'
    assert accepts(grammar, backwards)
    lines = "".join(f"line {k}\n" for k in range(1, n + 1))
    with pytest.raises(ProgramError, match="copied already"):
        Resolver(None, lines).text(backwards, monotonic=True)
    assert Resolver(None, lines).text(backwards) == "".join(f"line {k}\n" for k in (5, 6, 7, 8, 9, 1, 2, 3))


def _generate(model, n: int, grammar_n: int | None, seeds) -> list[str]:
    import outlines

    grammar = output_type(grammar_n) if grammar_n else outlines.types.CFG(lark_grammar(None))
    generator = outlines.Generator(model, grammar)
    outs = []
    for seed in seeds:
        torch.manual_seed(seed)
        outs.append(generator(f"Write a copy program for a file of {n} lines.", max_new_tokens=24, do_sample=True))
    return outs


def test_an_outlines_transformers_model_writes_valid_copy_programs(tiny_lm, tiny_model_dir, monkeypatch):
    """outlines' own transformers model and its llguidance backend, on the tiny random Qwen2: every
    output is a valid program or (cut at max_new_tokens) the prefix of one, copies included. The same
    model under the loose grammar breaks the line rules, so the check above can fail."""
    import outlines
    from transformers import AutoTokenizer

    # llguidance applies its mask with a torch.compile kernel: ~50 s to compile on 2 CPU cores.
    monkeypatch.setattr(torch._dynamo.config, "disable", True)
    n, seeds = 5, range(8)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)  # outlines sets its pad token
    model = outlines.from_transformers(tiny_lm.model, tokenizer)
    outs = _generate(model, n, n, seeds)
    assert all(reference_ok(out, n, monotonic=True) for out in outs), outs
    complete = []
    for out in outs:
        try:
            ops = parse(out)
        except ProgramError:
            continue  # cut inside an op: the prefix check above covers it
        check(ops, n, monotonic=True)
        complete.append(ops)
    assert any(isinstance(op, Copy) for ops in complete for op in ops), outs
    lines = "".join(f"line {k}\n" for k in range(1, n + 1))
    for ops in complete:
        Resolver(None, lines).text(ops, monotonic=True)
    loose = _generate(model, n, None, seeds)
    assert not all(reference_ok(out, n, monotonic=True) for out in loose), loose
