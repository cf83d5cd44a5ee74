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
from editllm.grammar import Copy, check, oracle
from editllm.grammar.program import idle_copy
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
        ops = run.matcher.ops()
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


def test_an_idle_gen_span_asks_the_model_again_without_the_copy_before_it(tiny_lm, monkeypatch):
    """A program whose gen span writes its lines as they were is asked again, on the prompt already read, with
    that copy banned; the asks' costs add up, the programs set aside are kept, and a failed ask keeps the one
    before it."""
    from editllm.editor.copymode import run_copy
    from editllm.grammar import Copy, Gen, render

    text = "a\nb\nc\nd\n"
    answers = {  # what the model writes under each set of banned copies
        frozenset(): [Copy(1, 2), Gen("c\n"), Copy(4, 4)],  # one line short: c written as it was
        frozenset({Copy(1, 2)}): [Copy(1, 1), Gen("b\n"), Copy(3, 4)],  # idle again
        frozenset({Copy(1, 2), Copy(1, 1)}): [Gen("A\n"), Copy(2, 4)],
    }
    asked = []

    def run_model(self, max_tokens, cached=False):
        asked.append((self.matcher.banned, cached, self.stop_idle))
        ops = answers[self.matcher.banned]
        if ops is None:
            raise ProgramFailed("the program exceeded 5 tokens")
        self.stats.program, self.stats.forwards, self.stats.decode_seconds = render(ops), 3, 0.5
        return self.source.text(ops), ops

    monkeypatch.setattr(CopyRun, "run_model", run_model)
    new, stats = run_copy(tiny_lm, "m.py", text, "fix it", 64)
    assert new == "A\nb\nc\nd\n" and [cached for _, cached, _ in asked] == [False, True, True]
    assert [stop for _, _, stop in asked] == [True, True, False]  # the last ask writes its program whole
    assert stats.retries == 2 and stats.forwards == 9 and stats.set_aside == [render(answers[frozenset()]),
                                                                            render(answers[frozenset({Copy(1, 2)})])]
    asked.clear()
    assert run_copy(tiny_lm, "m.py", text, "fix it", 64, retries=1)[0] == text  # the last ask stands, idle too
    assert run_copy(tiny_lm, "m.py", text, "fix it", 64, retries=0)[1].retries == 0
    answers[frozenset({Copy(1, 2)})] = None
    new, stats = run_copy(tiny_lm, "m.py", text, "fix it", 64)
    assert new == text and stats.retries == 0 and stats.program == render(answers[frozenset()])



def test_an_ask_stops_once_its_idle_span_is_known_and_reads_no_more(tiny_lm, monkeypatch):
    """`stop_idle`: when the copy after an idle gen span closes, the program is known to be set aside, so the
    ask stops there, before that copy's lines are read; its ops so far name the same copy to ban. Whole, the
    same program (the same picks) reads every copy. The "model" here picks a fixed program's tokens."""
    text = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n"
    program = '<copy lines="1-2"/><gen>c = 3\n</gen><copy lines="4-6"/>'
    eos = sorted(tiny_lm.engine.eos)[0]
    script = tiny_lm.tokenizer(program, add_special_tokens=False)["input_ids"] + [eos]
    monkeypatch.setattr(CopyRun, "pick", lambda self, logits, best: script[min(len(self.program), len(script) - 1)])
    runs = {}
    for stop in (False, True):
        run = CopyRun(tiny_lm, "m.py", text, "fix it", stop_idle=stop)
        runs[stop] = run, *run.run_model(64)
    (whole, whole_text, whole_ops), (stopped, stopped_text, stopped_ops) = runs[False], runs[True]
    assert whole_text == text and whole.stats.program == program and whole.stats.stop_reason == "eos"
    assert stopped_text is None and stopped_ops == whole_ops and stopped.stats.program == program
    assert idle_copy(stopped_ops, text.splitlines(keepends=True)) == Copy(1, 2) and stopped.stats.stop_reason == "idle"
    assert stopped.stats.prefilled_tokens == len(stopped.source.tokens(Copy(1, 2)))  # lines 4-6 never read
    assert whole.stats.prefilled_tokens == stopped.stats.prefilled_tokens + len(whole.source.tokens(Copy(4, 6)))


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


# --- --copy-kv reuse: copied lines take the prompt's cache entries (issue 22) ---------------------------

def _engine(tiny_lm):
    from editllm.editor.engine import TorchEngine

    return TorchEngine(tiny_lm.model, tiny_lm.tokenizer)


PROMPT = list(range(1000, 1040))


def test_reused_keys_are_the_recomputed_keys_at_the_new_positions(tiny_lm, monkeypatch):
    """Layer 0's keys depend only on the token and its position: rotated prompt keys must equal the keys
    computed at the new positions; without the rotation they must not."""
    from editllm.editor.engine import Reuse

    def layer0(engine, n):
        return engine.cache.layers[0].keys[0, :, -n:], engine.cache.layers[0].values[0, :, -n:]

    ref = _engine(tiny_lm)
    ref.forward(PROMPT + [7] + PROMPT[10:20] + [8], keep=1)
    want_k, want_v = layer0(ref, 12)
    for rotate in (True, False):
        if not rotate:
            monkeypatch.setattr(type(ref), "shift_keys", lambda self, keys, delta: keys)
        eng = _engine(tiny_lm)
        eng.forward(PROMPT, keep=1)
        eng.forward_reuse([7, Reuse(10, tuple(PROMPT[10:20])), 8], keep=1)
        assert eng.length == len(PROMPT) + 12
        got_k, got_v = eng.cache.layers[0].keys[0], eng.cache.layers[0].values[0]
        order = eng.positions.argsort()  # entries by position: token 7, the reused run, token 8
        got_k, got_v = got_k[:, order][:, -12:], got_v[:, order][:, -12:]
        torch.testing.assert_close(got_v, want_v, rtol=1e-5, atol=1e-5)
        assert torch.allclose(got_k, want_k, rtol=1e-4, atol=1e-4) is rotate


def test_forward_reuse_masks_by_position(tiny_lm):
    """One forward with entries out of order (a computed token before the reused run, tokens after it)
    gives what feeding them in order gives, and later forwards and truncation agree too."""
    from editllm.editor.engine import Reuse

    run = Reuse(5, tuple(PROMPT[5:15]))
    mixed = _engine(tiny_lm)
    mixed.forward(PROMPT, keep=1)
    a = mixed.forward_reuse([7, run, 8, 9], keep=2)
    ordered = _engine(tiny_lm)
    ordered.forward(PROMPT, keep=1)
    ordered.forward([7], keep=1)
    # in order: the reused run right after 7 (nothing computed before it in that forward), then 8, 9
    for layer in ordered.cache.layers:
        keys = ordered.shift_keys(layer.keys[:, :, 5:15], len(PROMPT) + 1 - 5)
        layer.keys = torch.cat([layer.keys, keys], dim=2)
        layer.values = torch.cat([layer.values, layer.values[:, :, 5:15]], dim=2)
    b = ordered.forward([8, 9], keep=2)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    mixed.forward([10, 11, 12], keep=1)
    ordered.forward([10, 11, 12], keep=1)
    mixed.truncate(2)
    ordered.truncate(2)
    torch.testing.assert_close(mixed.forward([13], keep=1), ordered.forward([13], keep=1), rtol=1e-4, atol=1e-4)
    assert mixed.length == ordered.length == len(PROMPT) + 15


def test_prompt_copies_find_nearly_every_copied_token_in_the_prompt(tokenizer):
    """The copy prompt's `12|line` numbering keeps a copy's tokens the prompt's tokens (issue 22):
    over the bench's code cases, >= 98 % of whole-file copies are reusable (the rest is computed), in
    few runs: blank lines shown without a number keep the newlines a copy feeds as one token, so they do
    not cut a reused run in two (each computed run costs llama.cpp one more decode call)."""
    from editllm.editor.copykv import PromptCopies
    from editllm.editor.prompt import copy_prompt
    from editllm.editor.source import split_lines
    from editllm.grammar.program import Copy

    total = reused = computed_runs = 0
    files = [c for c in _cases() if c["path"].endswith(".py")][:20]
    for case in files:
        lines = split_lines(case["before"])
        ids = tokenizer(copy_prompt(tokenizer, case["path"], case["before"], case["instruction"]),
                        add_special_tokens=False)["input_ids"]
        copies = PromptCopies(tokenizer, case["path"], case["before"], case["instruction"], lines, ids, tail=1)
        whole = Copy(1, len(lines))
        fed = tokenizer("".join(lines), add_special_tokens=False)["input_ids"]
        parts = copies.parts(whole, fed, ids)
        got = [t for p in parts for t in (p.ids if hasattr(p, "ids") else [p])]
        assert got == fed  # the same tokens, reused or computed
        for k, p in enumerate(parts):
            if hasattr(p, "ids"):
                assert ids[p.src:p.src + len(p.ids)] == list(p.ids)  # what is reused is what the prompt holds
                reused += len(p.ids)
            elif k == 0 or hasattr(parts[k - 1], "ids"):
                computed_runs += 1
        total += len(fed)
    assert reused >= 0.98 * total and computed_runs <= 2 * len(files)


@pytest.mark.parametrize("tail", [1, 4])
def test_oracle_with_reuse_gives_the_exact_text_and_reads_fewer_tokens(tiny_lm, tail, monkeypatch):
    import editllm.editor.copymode as cm

    monkeypatch.setattr(cm, "DEFAULT_TAIL", tail)
    cases = [c for c in _cases() if c["path"].endswith(".py")][:6]
    for case in cases:
        ops = oracle(case["before"], case["after"])
        text, stats = run_oracle(tiny_lm, case["path"], case["before"], case["instruction"], ops, copy_kv="reuse")
        plain, plain_stats = run_oracle(tiny_lm, case["path"], case["before"], case["instruction"], ops)
        assert text == plain == case["after"], case["id"]
        assert plain_stats.reused_tokens == 0 < stats.reused_tokens <= stats.prefilled_tokens
        assert stats.forwards == plain_stats.forwards and tiny_lm.engine.length == \
            stats.prompt_tokens + stats.program_tokens + stats.prefilled_tokens


def test_copy_kv_reuse_on_the_model_loop_keeps_the_cache_consistent(tiny_lm):
    text = "".join(f"value_{k} = compute({k}, {k + 1})\n" for k in range(12))
    run = CopyRun(tiny_lm, "f.py", text, "change something", copy_kv="reuse")
    try:
        run.run_model(max_tokens=40)
    except ProgramFailed:
        pass
    s = run.stats
    assert run.engine.length == s.prompt_tokens + s.program_tokens + s.prefilled_tokens


def test_unknown_copy_kv_is_refused(tiny_lm):
    from editllm.editor.errors import EditError

    with pytest.raises(EditError, match="copy-kv"):
        CopyRun(tiny_lm, "f.py", "x = 1\n", "change", copy_kv="sometimes")


def test_copy_prompt_starts_with_its_fixed_prefix_token_for_token(tokenizer):
    """The fixed part (rules, worked example) comes first and is a clean token prefix of every copy
    prompt, so a saved prompt state can hold it; the file follows as `12|line`."""
    from editllm.editor.prompt import EXAMPLE_FILE, copy_prefix, copy_prompt, numbered

    head = tokenizer(copy_prefix(tokenizer), add_special_tokens=False)["input_ids"]
    assert numbered(EXAMPLE_FILE) in copy_prefix(tokenizer)
    for case in _cases()[:12]:
        text = copy_prompt(tokenizer, case["path"], case["before"], case["instruction"])
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert ids[:len(head)] == head and len(ids) > len(head)
        assert text.endswith("<|im_start|>assistant\n")
        assert case["instruction"].strip() in text[len(copy_prefix(tokenizer)):]
    assert numbered("a\n\n  b") == "1|a\n\n3|  b\n"


def test_copy_focus_writes_the_program_over_the_named_definition_only(scripted_lm):
    """With copy_focus the program numbers the focused text's lines and is merged back by name."""
    body = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef h():\n    return 3\n"
    # focused text: the import, then `g` (5 lines); a scripted model cannot go on after a copy's lines
    # (it follows its script by position), so this program copies last
    lm = scripted_lm('<gen>import os\n\n\ndef g():\n</gen><copy lines="5-5"/>')
    result = edit_file(lm, SourceFile("m.py", body), "Make `g` return 2.",
                       EditOptions(mode="copy", copy_focus=True))
    assert result.fallback is None and result.focused == ("g",)
    assert result.new_text == body  # line 5 of the focused text is `    return 2`: copied, unchanged
    assert result.stats.copied_lines == 1


def test_copy_focus_gives_back_a_definition_asked_away_unchanged_and_it_goes(scripted_lm):
    """As in rewrite and spec (`focus.echoed_removal`): a program that copies back the one definition the instruction
    asks only to remove has it removed, with the name kept for the note."""
    body = "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef h():\n    return 3\n"
    lm = scripted_lm('<gen>import os\n\n\ndef g():\n</gen><copy lines="5-5"/>')
    result = edit_file(lm, SourceFile("m.py", body), "Remove the g function.",
                       EditOptions(mode="copy", copy_focus=True))
    assert result.fallback is None and result.removed_as_asked == ("g",)
    assert result.new_text == "import os\n\n\ndef f():\n    return 1\n\n\ndef h():\n    return 3\n"
