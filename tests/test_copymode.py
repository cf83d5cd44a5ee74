"""Copy mode's runtime: one-forward copies equal token-by-token feeding, oracle programs round-trip
through the full path on every bench case, and the model-driven loop only writes valid programs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from editllm.editor.copymode import CopyRun, ProgramFailed, run_oracle
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.source import SourceFile
from editllm.grammar import check, oracle, parse
from transformers import DynamicCache

CASES = Path(__file__).resolve().parents[1] / "benchmarks" / "cases"


def test_copy_forward_equals_token_by_token(tiny_lm):
    model = tiny_lm.model
    prompt = torch.tensor([[11, 22, 33, 44, 55]])
    copied = torch.tensor([[66, 77, 88, 99, 111, 222, 333]])
    with torch.inference_mode():
        one = DynamicCache(config=model.config)
        model(input_ids=prompt, past_key_values=one)
        a = model(input_ids=copied, past_key_values=one).logits[0, -1]
        steps = DynamicCache(config=model.config)
        model(input_ids=prompt, past_key_values=steps)
        for k in range(copied.shape[1]):
            b = model(input_ids=copied[:, k:k + 1], past_key_values=steps).logits[0, -1]
        probe = torch.tensor([[444]])
        after_one = model(input_ids=probe, past_key_values=one).logits[0, -1]
        after_steps = model(input_ids=probe, past_key_values=steps).logits[0, -1]
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(after_one, after_steps, rtol=1e-4, atol=1e-4)
    assert one.get_seq_length() == steps.get_seq_length() == 13


def _cases():
    out = []
    for f in sorted(CASES.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def test_oracle_programs_round_trip_through_the_runtime_on_every_bench_case(tiny_lm):
    cases = _cases()
    if not cases:
        pytest.skip("no bench cases")
    for case in cases:
        ops = oracle(case["before"], case["after"])
        text, stats = run_oracle(tiny_lm, case["path"], case["before"], case["instruction"], ops)
        assert text == case["after"], case["id"]
        assert stats.forwards == 1 + len(ops) and stats.spans == sum(1 for o in ops if hasattr(o, "i"))
        assert stats.prefilled_tokens > stats.program_tokens  # most of an edit is copied


@pytest.mark.parametrize("seed", range(4))
def test_model_loop_writes_only_valid_programs(tiny_lm, seed):
    rng = random.Random(seed)
    text = "".join(f"line {rng.randrange(100)} = {k}\n" for k in range(rng.randint(1, 25)))
    run = CopyRun(tiny_lm, "f.py", text, "change something")
    try:
        new_text, ops = run.run_model(max_tokens=40)
        check(ops, len(text.splitlines()), monotonic=True)
    except ProgramFailed:
        ops = parse(run.matcher.text[: run.matcher.op_start])
        check(ops, len(text.splitlines()), monotonic=True)
    s = run.stats
    assert run.cache.get_seq_length() == s.prompt_tokens + s.program_tokens + s.prefilled_tokens


def test_failed_program_falls_back_to_spec(monkeypatch, scripted_lm):
    body = "def f():\n    return 1\n"
    lm = scripted_lm(body.replace("1", "2") + "```\n")

    def broken(*args, **kwargs):
        raise ProgramFailed("the program exceeded 5 tokens")

    monkeypatch.setattr("editllm.editor.copymode.run_copy", broken)
    result = edit_file(lm, SourceFile("m.py", body), "return 2", EditOptions(mode="copy"))
    assert result.fallback == "the program exceeded 5 tokens"
    assert result.stats.mode == "spec" and result.new_text == body.replace("1", "2")


def test_oracle_without_copy_prefill_resolves_the_same_text_with_a_shorter_cache(tiny_lm):
    before, after = "a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\n"
    ops = oracle(before, after)
    text, stats = run_oracle(tiny_lm, "m.py", before, "b is 20", ops, prefill_copies=False)
    full, full_stats = run_oracle(tiny_lm, "m.py", before, "b is 20", ops)
    assert text == full == after
    assert stats.prefilled_tokens == 0 < full_stats.prefilled_tokens and stats.spans == full_stats.spans == 2


@pytest.mark.parametrize("seed", range(3))
def test_tag_drafts_do_not_change_the_program(tiny_lm, seed, monkeypatch):
    """Drafted tags are verified like copied text: the model's greedy program is the same without them."""
    rng = random.Random(seed)
    text = "".join(f"x{rng.randrange(9)} = {k}\n" for k in range(rng.randint(3, 20)))
    results = []
    for drafting in (True, False):
        if not drafting:
            monkeypatch.setattr(CopyRun, "tag_draft", lambda self: [])
        run = CopyRun(tiny_lm, "f.py", text, "change something")
        try:
            run.run_model(max_tokens=30)
        except ProgramFailed:
            pass
        s = run.stats
        assert run.cache.get_seq_length() == s.prompt_tokens + s.program_tokens + s.prefilled_tokens
        results.append((run.program, s.forwards))
    assert results[0][0] == results[1][0] and results[0][1] <= results[1][1]
