"""spec mode is lossless: byte-identical to rewrite under greedy decoding in float32."""

from __future__ import annotations

import random

import pytest
from editllm.editor.decode import Decoder, Free, TailStop
from editllm.editor.drafter import ADAPTIVE_DRAFT, DEFAULT_DRAFT, CopyDrafter, DraftSchedule
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.engine import TorchEngine
from editllm.editor.source import SourceFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NEVER = lambda ids: False  # noqa: E731


def run(lm, prompt, n, drafter=None, stop=NEVER):
    return Decoder(lm.model, lm.tokenizer).run(prompt, n, stop, drafter)


class OracleDrafter(CopyDrafter):
    """Drafts the true continuation with injected mistakes, to drive every acceptance path:
    full acceptance, rejection at the first token, partial prefixes and drafts past the stop."""

    def __init__(self, truth: list[int], prompt_len: int, rng: random.Random) -> None:
        super().__init__()
        self.truth, self.prompt_len, self.rng = truth, prompt_len, rng

    def propose(self, limit=None):
        pos = len(self.seq) - self.prompt_len
        k = self.rng.choice([1, 2, 5, 17, 40])
        draft = list(self.truth[pos + 1 : pos + 1 + k]) + [self.rng.randrange(1000)] * self.rng.choice([0, 3])
        if draft and self.rng.random() < 0.3:
            draft[self.rng.randrange(len(draft))] = self.rng.randrange(151000)
        self._last_source = None
        return draft[:limit] if limit is not None else draft


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_spec_equals_rewrite_on_random_prompts(tiny_lm, seed):
    rng = random.Random(seed)
    block = [rng.randrange(151000) for _ in range(rng.randint(3, 20))]
    prompt = [rng.randrange(151000) for _ in range(rng.randint(1, 30))] + block * rng.randint(1, 4)
    reference, _ = run(tiny_lm, prompt, 48)
    fast, stats = run(tiny_lm, prompt, 48, CopyDrafter(3, DraftSchedule.parse("adaptive:4,2,32,2")))
    assert fast == reference


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1))
def test_verification_paths_are_lossless(tiny_lm, seed):
    """Drafts that are right, wrong at the first token, partly right, or run past the stop."""
    rng = random.Random(seed)
    prompt = [rng.randrange(151000) for _ in range(rng.randint(1, 20))]
    reference, _ = run(tiny_lm, prompt, 40)
    stop_at = rng.randint(1, 40)
    stop = lambda ids: len(ids) >= stop_at  # noqa: E731
    ref_stopped, _ = run(tiny_lm, prompt, 40, stop=stop)
    drafter = OracleDrafter(reference, len(prompt), rng)
    fast, stats = run(tiny_lm, prompt, 40, drafter, stop=stop)
    assert fast == ref_stopped == reference[:stop_at]


def test_oracle_drafts_are_accepted_and_cut_forwards(tiny_lm):
    """The verification must actually accept correct drafts (else the tests above prove little)."""
    prompt = list(range(1000, 1010))
    reference, plain = run(tiny_lm, prompt, 40)

    class Perfect(OracleDrafter):
        def propose(self, limit=None):
            pos = len(self.seq) - self.prompt_len
            return list(self.truth[pos + 1 : pos + 9])

    fast, stats = run(tiny_lm, prompt, 40, Perfect(reference, len(prompt), random.Random(0)))
    assert fast == reference
    assert stats.copied_tokens >= 30 and stats.forwards < plain.forwards / 4


def test_first_token_rejection_crops_cache(tiny_lm):
    prompt = [5, 6, 7, 8]
    reference, _ = run(tiny_lm, prompt, 20)

    class Wrong(CopyDrafter):
        def propose(self, limit=None):
            return [(reference[0] + 1) % 151000] * 6

    fast, stats = run(tiny_lm, prompt, 20, Wrong())
    assert fast == reference
    assert stats.copy_attempts == stats.forwards and stats.copied_tokens == 0  # the prompt's forward drafted too


def test_the_prompts_forward_carries_the_first_draft(tiny_lm, monkeypatch):
    """A rewrite starts by copying its input: the first draft rides in the prompt's forward, verified
    there like any other, and the output stays plain decoding's."""
    rng = random.Random(5)
    block = [rng.randrange(151000) for _ in range(20)]
    prompt = [rng.randrange(151000) for _ in range(8)] + block + block[:3]  # ends with a γ-gram seen before
    reference, _ = run(tiny_lm, prompt, 30)
    engine = TorchEngine(tiny_lm.model, tiny_lm.tokenizer)
    calls = []
    real = engine.forward
    monkeypatch.setattr(engine, "forward", lambda ids, keep: calls.append((len(ids), keep)) or real(ids, keep))
    fast, stats = Decoder(engine).run(prompt, 30, NEVER, CopyDrafter(3, DraftSchedule.fixed(6)))
    assert fast == reference
    assert calls[0] == (len(prompt) + 6, 7)  # the prompt, then block[3:9] drafted, its rows kept
    assert stats.copy_attempts >= 1 and len(stats.accepted_lengths) == stats.copy_attempts
    first = len(calls)
    steered, _ = Decoder(engine).run(prompt, 30, NEVER, CopyDrafter(3, DraftSchedule.fixed(6)), steer=Free())
    assert steered == reference and calls[first] == (len(prompt), 1)  # a steered mode drafts after its first pick


def test_repeated_lines_file(tiny_lm):
    """A file of many identical lines: many γ-gram matches, the drafter must never desynchronise."""
    from editllm.editor.edit import prompt_ids
    from editllm.editor.prompt import rewrite_prompt

    text = "x = 1\n" * 40 + "y = 2\n" + "x = 1\n" * 10
    prompt = prompt_ids(tiny_lm, rewrite_prompt(tiny_lm.tokenizer, "r.py", text, "change y"))
    reference, _ = run(tiny_lm, prompt, 60)
    fast, stats = run(tiny_lm, prompt, 60, CopyDrafter())
    assert fast == reference


def test_spec_equals_rewrite_through_the_fence(scripted_lm):
    """A draft copied from the prompt runs past the closing fence; output is cut at the same token."""
    body = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    src = SourceFile("m.py", body)
    lm = scripted_lm(body.replace("return 2", "return 3") + "```\n\nThe fix changes g.\n")
    results = {m: edit_file(lm, src, "make g return 3", EditOptions(mode=m)) for m in ("rewrite", "spec")}
    assert results["rewrite"].new_text == results["spec"].new_text == body.replace("return 2", "return 3")
    assert results["spec"].stats.copied_tokens > 0
    assert results["spec"].stats.forwards < results["rewrite"].stats.forwards


def test_tail_stop_finds_fence_split_across_tokens(tokenizer):
    stop = TailStop(tokenizer, lambda t: "\n```" in t, window=4)
    ids = tokenizer("a\nb\nc\nd\ne\n``", add_special_tokens=False)["input_ids"]
    assert not stop(ids)
    ids += tokenizer("`", add_special_tokens=False)["input_ids"]
    assert stop(ids)


def test_tail_stop_skips_tokens_that_cannot_complete_the_fence_and_stops_at_the_same_one(tokenizer):
    """With the fence's characters given, a token holding none of them is not decoded (each id's text is
    looked at once), and the stop comes at the very token where checking every tail stops."""
    from editllm.editor.prompt import end_of_file

    text = "value = compute(value)  # \u00e9t\u00e9 `x`\n" * 30 + "```\nThe fix is above.\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]

    def matches(t):
        return end_of_file(t, "```") is not None

    def first_stop(stop) -> int | None:
        return next((n for n in range(1, len(ids) + 1) if stop(ids[:n])), None)

    decodes = []

    class Counting:
        def decode(self, *args, **kwargs):
            decodes.append(args[0])
            return tokenizer.decode(*args, **kwargs)

    every = first_stop(TailStop(tokenizer, matches))
    assert every is not None and "\n```" in tokenizer.decode(ids[:every])
    assert not matches(tokenizer.decode(ids[:every - 1]))
    assert first_stop(TailStop(Counting(), matches, chars="\n`")) == every
    assert len(decodes) < every / 3  # a newline or a backtick in a few tokens of each line; each id once
    decodes.clear()
    assert first_stop(TailStop(Counting(), matches, chars="`")) == every  # the fence ends in its character
    assert len(decodes) < every / 3
    # without backticks in its lines, the file's tokens are decoded once each and its tail only at the fence
    plain = tokenizer(text.replace(" `x`", ""), add_special_tokens=False)["input_ids"]
    decodes.clear()
    stop = TailStop(Counting(), matches, chars="`")
    at = next(n for n in range(1, len(plain) + 1) if stop(plain[:n]))
    assert "\n```" in tokenizer.decode(plain[:at]) and not matches(tokenizer.decode(plain[:at - 1]))
    assert len([d for d in decodes if len(d) > 1]) <= 2  # the tail at the fence's own tokens alone


def test_tail_stop_finds_a_fence_inside_several_tokens_added_at_once(tokenizer):
    """A loop that checks once a step (transformers' prompt lookup) may add more tokens than the window:
    the check covers all of them, whether or not the fence's characters are given."""
    from editllm.editor.prompt import end_of_file

    head = tokenizer("".join(f"x{i} = {i}\n" for i in range(10)), add_special_tokens=False)["input_ids"]
    chunk = tokenizer("y = 1\n```\n" + "".join(f"# note {i}\n" for i in range(12)), add_special_tokens=False)
    for chars in (None, "\n`", "`"):
        stop = TailStop(tokenizer, lambda t: end_of_file(t, "```") is not None, chars=chars)
        assert not stop(head)
        assert stop(head + chunk["input_ids"])  # the fence is 30-odd tokens before the end


@pytest.mark.parametrize("fence", ["```", "````"])
def test_tail_stop_waits_for_the_fence_line_to_end(tokenizer, fence):
    """A line that starts with the fence and goes on ("````sh") opens a code block the model writes into the
    file: it used to end the file there, and the rest of the file was lost. The stop now comes at the token
    that ends a bare fence line, the same with and without the skip of tokens that lack the fence's
    character (the token after a fence is looked at whatever it holds)."""
    from editllm.editor.prompt import end_of_file, fence_pending

    text = f"Run it:\n\n{fence}sh\nt run\n{fence}\n\n## License\n\nMIT.\n{fence}\nDone.\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]

    def matches(t):
        return end_of_file(t, fence, final=False) is not None

    def first_stop(stop) -> int | None:
        return next((n for n in range(1, len(ids) + 1) if stop(ids[:n])), None)

    every = first_stop(TailStop(tokenizer, matches))
    skipping = first_stop(TailStop(tokenizer, matches, chars=fence[0], pending=lambda t: fence_pending(t, fence)))
    assert every == skipping
    done = tokenizer.decode(ids[:every])
    # the block's own close ends it (finish_text then refuses the file), never the block's opening line
    assert end_of_file(done, fence) == len(f"Run it:\n\n{fence}sh\nt run\n") and done.rstrip("\n").endswith(fence)
    assert end_of_file(f"x\n{fence}", fence) == 2 and end_of_file(f"x\n{fence}", fence, final=False) is None


def test_sampling_runs_and_is_seeded(tiny_lm):
    prompt = [11, 12, 13, 11, 12, 13]
    a, _ = Decoder(tiny_lm.model, tiny_lm.tokenizer, temperature=1.0, seed=3).run(prompt, 20, NEVER, CopyDrafter())
    b, _ = Decoder(tiny_lm.model, tiny_lm.tokenizer, temperature=1.0, seed=3).run(prompt, 20, NEVER, CopyDrafter())
    assert a == b and len(a) > 0


def test_default_draft_spec_is_the_schedule_defaults():
    """Flags and options name the default by DEFAULT_DRAFT (`cost`, editor.costs); without an engine's
    costs it means DraftSchedule(), whose defaults ADAPTIVE_DRAFT spells out."""
    assert DraftSchedule.parse(DEFAULT_DRAFT) == DraftSchedule() == DraftSchedule.parse(ADAPTIVE_DRAFT)
    assert DraftSchedule.parse("fixed:10") != DraftSchedule()


def test_a_tokens_text_is_decoded_once_for_every_edit_on_a_tokenizer(tokenizer):
    """The stop check of each edit (and copy mode's FSM) looks at token texts through `grammar.tokens`: a
    second edit on the same tokenizer decodes no token alone again, and another tokenizer object has its own."""
    from editllm.editor.prompt import end_of_file
    from editllm.grammar.tokens import token_text

    ids = tokenizer("x = f(`a`)\n" * 20 + "```\n", add_special_tokens=False)["input_ids"]
    alone: list[int] = []

    class Counting:
        def decode(self, ids, **kwargs):
            if len(ids) == 1:
                alone.append(ids[0])
            return tokenizer.decode(ids, **kwargs)

    counting = Counting()
    stops = []
    for _ in range(2):
        stop = TailStop(counting, lambda t: end_of_file(t, "```") is not None, chars="`")
        stops.append(next(n for n in range(1, len(ids) + 1) if stop(ids[:n])))
    assert stops[0] == stops[1] and alone and set(alone) <= set(ids)
    assert len(alone) == len(set(alone))  # each id alone once, over both edits
    assert token_text(Counting(), ids[0]) == tokenizer.decode([ids[0]]) and alone.count(ids[0]) == 2


def test_a_drafters_reset_indexes_the_prompt_as_appending_it_token_by_token():
    """`CopyDrafter.reset` builds the γ-gram index in one pass; it is the index `append` builds, so drafts
    from the prompt are the same."""
    rng = random.Random(5)
    for gamma in (1, 3):
        for n in (0, 2, 3, 50):
            prompt = [rng.randrange(6) for _ in range(n)]
            fast, slow = CopyDrafter(gamma), CopyDrafter(gamma)
            fast.reset(prompt, source_start=1)
            slow.reset([], source_start=1)
            for t in prompt:
                slow.append(t)
            assert fast.seq == slow.seq == prompt and fast.index == slow.index and fast.cursor == slow.cursor
            fast.append(4)
            slow.append(4)
            assert fast.propose() == slow.propose()
