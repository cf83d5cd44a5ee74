"""The decision-point probe for --copy-kv reuse (benchmarks/copy_probe.py) on the tiny model."""

from __future__ import annotations

from editllm.bench.copy_probe import predictions, split_copies, teacher_forced
from editllm.editor.copykv import PromptCopies
from editllm.editor.copymode import copy_prompt_ids
from editllm.editor.source import split_lines
from editllm.grammar.program import Copy, Gen, oracle

BEFORE = "".join(f"def f{k}(x):\n    return x + {k}\n\n\n" for k in range(6))
AFTER = BEFORE.replace("return x + 3", "return x - 3")


def test_split_copies_makes_points_where_the_program_keeps_copying():
    ops = split_copies(oracle(BEFORE, AFTER))
    assert isinstance(ops[0], Copy) and isinstance(ops[1], Copy) and ops[1].i == ops[0].j + 1
    assert any(isinstance(op, Gen) for op in ops)


def test_probe_reuse_equals_reread_when_everything_is_computed(tiny_lm):
    """With a tail longer than any copy, reuse computes every token: its argmax must be reread's exactly;
    with tail 1 it computes fewer tokens (the probe measures something)."""
    lines = split_lines(BEFORE)
    prompt = copy_prompt_ids(tiny_lm, "m.py", BEFORE, "fix f3")
    items = teacher_forced(tiny_lm.tokenizer, split_copies(oracle(BEFORE, AFTER)), lines, 151645)
    ref, n_ref = predictions(tiny_lm.engine, prompt, items, None)
    every = PromptCopies(tiny_lm.tokenizer, "m.py", BEFORE, "fix f3", lines, prompt, tail=10_000)
    got, n_got = predictions(tiny_lm.engine, prompt, items, every)
    assert got == ref and n_got == n_ref
    few = PromptCopies(tiny_lm.tokenizer, "m.py", BEFORE, "fix f3", lines, prompt, tail=1)
    _, n_few = predictions(tiny_lm.engine, prompt, items, few)
    copied = sum(len(it[1]) for it in items if isinstance(it[0], Copy))
    assert n_ref - n_few >= copied // 2  # at least half of the copied tokens come from the prompt
