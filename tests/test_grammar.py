"""Programs: parse/render/resolve, the oracle round trip, and the FSM against an independent reference."""

from __future__ import annotations

import random
import re

import pytest
import torch
from editllm.grammar import Copy, Gen, ProgramError, check, oracle, parse, render, resolve
from editllm.grammar.matcher import ProgramMatcher, number_can_reach
from hypothesis import given, settings
from hypothesis import strategies as st

LINE = st.sampled_from(["a", "b", "def f():", "    return 1", "", "é 中", "x </ge y", "<copy>", "\t"])


@st.composite
def texts(draw) -> str:
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(line + ending for line in draw(st.lists(LINE, max_size=15)))
    if text and draw(st.booleans()):
        text = text[: -len(ending)]
    return text


@settings(max_examples=300, deadline=None)
@given(texts(), texts())
def test_oracle_round_trip(before, after):
    from editllm.editor.source import split_lines

    ops = oracle(before, after)
    lines = split_lines(before)
    dropped = before.endswith("\n") and after and not after.endswith("\n")  # a program cannot drop it
    assert resolve(ops, lines) == (after + lines[-1][len(lines[-1].rstrip("\r\n")):] if dropped else after)
    check(ops, len(split_lines(before)), monotonic=True)
    assert parse(render(ops)) == ops


def test_parse_errors_say_where():
    with pytest.raises(ProgramError, match="offset 19"):
        parse('<copy lines="1-2"/>oops')
    with pytest.raises(ProgramError, match="never closed"):
        parse("<gen>abc")
    with pytest.raises(ProgramError, match="out of range"):
        check([Copy(2, 1)], 5)
    with pytest.raises(ProgramError, match="copied already"):
        check([Copy(1, 3), Copy(2, 4)], 5)
    check([Copy(1, 3), Copy(2, 4)], 5, monotonic=False)


def test_oracle_refuses_gen_close_in_text():
    with pytest.raises(ProgramError):
        oracle("a\n", "</gen>\n")


def test_number_can_reach():
    assert number_can_reach("1", 10, 12) and number_can_reach("", 3, 3)
    assert not number_can_reach("2", 10, 12) and not number_can_reach("13", 1, 12)


# --- the FSM ---------------------------------------------------------------------------------------

STRUCT = ["<", "copy", " lines", '="', "-", '"/>', '"/><', "</", "gen", ">", "<gen>", "</gen>", "\n", "x", " =",
          "0", "1", "2", "3", "4", "5", "7", "9"]


@pytest.fixture(scope="module")
def pieces(tokenizer):
    """Every token's text, decoded once (the reference works on text)."""
    return [tokenizer.decode([i], skip_special_tokens=False) for i in range(len(tokenizer))]


def reference_ok(prefix: str, n: int, monotonic: bool = True) -> bool:
    """An independent, slow statement of the language: is `prefix` a prefix of a valid program?"""
    last = 0
    s = prefix
    while s:
        if s.startswith("<gen>"):
            end = s.find("</gen>", 5)
            if end < 0:
                return True
            s = s[end + 6:]
            continue
        lo = last + 1 if monotonic else 1
        m = re.match(r'<copy lines="([1-9]\d*)-([1-9]\d*)"/>', s)
        if m:
            i, j = int(m.group(1)), int(m.group(2))
            if not lo <= i <= j <= n:
                return False
            last = j
            s = s[m.end():]
            continue
        if "<gen>".startswith(s):
            return True
        head = '<copy lines="'
        if head.startswith(s):
            return lo <= n or not s.startswith("<c")
        if not s.startswith(head):
            return False
        rest = s[len(head):]
        m = re.fullmatch(r"([1-9]\d*)?", rest)
        if m:
            return lo <= n and (not rest or any(lo <= v <= n for v in _completions(rest, n)))
        m = re.fullmatch(r"([1-9]\d*)-([1-9]\d*)?(\"/?)?", rest)
        if m:
            i = int(m.group(1))
            if not lo <= i <= n:
                return False
            if m.group(2) is None:
                return m.group(3) is None
            if m.group(3):
                return i <= int(m.group(2)) <= n
            return any(i <= v <= n for v in _completions(m.group(2), n))
        return False
    return True


def _completions(prefix: str, n: int):
    return [v for v in range(1, n + 1) if str(v).startswith(prefix)]


def reference_allowed(matcher_text: str, pieces, n: int, special_from: int) -> set[int]:
    allowed = set()
    for tok, piece in enumerate(pieces):
        if tok >= special_from or not piece or "\ufffd" in piece:
            continue  # partial UTF-8 bytes are judged by bytes, which this text reference cannot do
        full = matcher_text + piece
        if not reference_ok(full, n):
            continue
        # a token that closes a copy tag must end there (copied lines follow the tag at once)
        closes = [m.end() for m in re.finditer(r'<copy lines="\d+-\d+"/>', full) if m.end() > len(matcher_text)]
        if closes and closes[-1] < len(full):
            continue
        allowed.add(tok)
    return allowed


@pytest.mark.parametrize("seed", range(12))
def test_fsm_mask_matches_reference(tokenizer, pieces, seed):
    rng = random.Random(seed)
    n = rng.choice([3, 12, 40])  # states: seeds 0..11 reach gen text, tag digits and forced literals
    eos = [151645, 151643]
    m = ProgramMatcher(tokenizer, n, 151936, eos)
    struct = [tokenizer(s, add_special_tokens=False)["input_ids"][0] for s in STRUCT]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(rng.randint(0, 25)):
        logits = torch.randn(151936, generator=gen)
        for t in struct:
            logits[t] += rng.random() * 8
        tok = m.pick(logits)
        if tok is None or tok in eos:
            break
        m.advance(tok)
    got = {int(t) for t in m.mask().nonzero().flatten() if int(t) < 151643 and "\ufffd" not in pieces[int(t)]}
    forced = m.forced()
    if forced:
        # Where the grammar forces bytes, llguidance allows only their canonical tokenization; the
        # loop appends those tokens itself and never samples here.
        assert got == {forced[0]} and reference_ok(m.text + "".join(pieces[t] for t in forced), n)
        return
    want = reference_allowed(m.text, pieces, n, 151643)
    assert got == want, (m.text, [pieces[t] for t in sorted(got ^ want)[:10]], len(got), len(want))


def test_fsm_mask_in_forced_state(tokenizer, pieces):
    m = ProgramMatcher(tokenizer, 12, 151936, [151645])
    for t in tokenizer("<copy", add_special_tokens=False)["input_ids"]:
        m.advance(t)
    forced = m.forced()
    assert "".join(pieces[t] for t in forced) == ' lines="'
    assert {int(t) for t in m.mask().nonzero().flatten()} == {forced[0]}


@pytest.mark.parametrize("seed", range(40))
def test_fsm_never_allows_an_invalid_program(tokenizer, seed):
    """Adversarial random logits biased toward structure: every completed op stays valid."""
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    eos = [151645, 151643]
    m = ProgramMatcher(tokenizer, n, 151936, eos)
    struct = [tokenizer(s, add_special_tokens=False)["input_ids"][0] for s in STRUCT]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(80):
        logits = torch.randn(151936, generator=gen)
        for t in struct:
            logits[t] += rng.random() * 10
        logits[eos[0]] += rng.random() * 4
        tok = m.pick(logits)
        assert tok is not None, m.text
        if tok in eos:
            break
        m.advance(tok)
    done = m.text[: m.op_start]
    ops = parse(done)
    check(ops, n, monotonic=True)
    assert all(isinstance(op, (Copy, Gen)) for op in ops)


def test_rollback_restores_state(tokenizer):
    m = ProgramMatcher(tokenizer, 10, 151936, [151645])
    seq = tokenizer('<copy lines="2-3"/>', add_special_tokens=False)["input_ids"] + \
        tokenizer("<gen>x\n</gen>", add_special_tokens=False)["input_ids"]
    for t in seq[:9]:
        m.advance(t)
    text, start, last = m.text, m.op_start, m.last_j
    for t in seq[9:]:
        m.advance(t)
    m.rollback(len(seq) - 9)
    assert (m.text, m.op_start, m.last_j) == (text, start, last)
    for t in seq[9:]:
        assert m.allowed(t)
        m.advance(t)
    assert m.accepting()


def test_copy_prompt_example_is_a_true_oracle_program():
    """The worked example the model reads must itself be right, or the model learns a wrong pattern."""
    from editllm.editor.prompt import EXAMPLE_FILE, copy_example

    fixed = EXAMPLE_FILE.replace("return w + h", "return w * h")
    assert f"Program: {render(oracle(EXAMPLE_FILE, fixed))}\n" in copy_example()


def test_validate_tag_stops_before_a_copy_closes_and_leaves_no_trace(tokenizer):
    m = ProgramMatcher(tokenizer, 10, 151936, [151645])
    tag = tokenizer('<copy lines="3-10"/>', add_special_tokens=False)["input_ids"]
    n = m.validate_tag(tag)
    assert n == len(tag) - 1 and m.text == "" and m.closed is None  # all but the closing token
    for t in tag[:n]:
        m.advance(t)
    assert m.closed is None and m.allowed(tag[n])
    m.advance(tag[n])
    assert m.closed is not None and m.closed.i == 3 and m.closed.j == 10
    again = tokenizer('<copy lines="1-', add_special_tokens=False)["input_ids"]
    assert m.validate_tag(again) < len(again)  # monotonic: line 1 cannot be copied after line 10
    assert m.validate_tag(tokenizer("<gen>", add_special_tokens=False)["input_ids"]) > 0


def test_ll_tokenizer_cache_is_keyed_by_the_tokenizer_object(tokenizer):
    """Issue 16 item 6: an `id()` key can be reused by a new tokenizer after the old one is collected.
    The cache holds each tokenizer weakly, so an entry dies with its tokenizer and cannot be handed on."""
    import copy
    import gc

    from editllm.grammar.matcher import _LL_TOKENIZERS, ll_tokenizer

    first = ll_tokenizer(tokenizer, 151936, [151645])
    assert ll_tokenizer(tokenizer, 151936, [151645]) is first
    other = copy.copy(tokenizer)
    before = len(_LL_TOKENIZERS)
    assert ll_tokenizer(other, 151936, [151645]) is not first and len(_LL_TOKENIZERS) == before + 1
    del other
    gc.collect()
    assert len(_LL_TOKENIZERS) == before and ll_tokenizer(tokenizer, 151936, [151645]) is first


def test_idle_copy_finds_the_copy_before_a_gen_that_repeats_its_lines():
    from editllm.grammar.program import idle_copy

    lines = [f"line {k}\n" for k in range(1, 7)]
    idle = [Copy(1, 2), Gen("line 3\n"), Copy(4, 6)]  # a line copied too few: the gen writes line 3 as it was
    assert idle_copy(idle, lines) == Copy(1, 2)
    assert idle_copy([Copy(1, 2), Gen("line 3\nline 4\n"), Copy(5, 6)], lines) == Copy(1, 2)
    assert idle_copy([Copy(1, 3), Gen("line 4\n")], lines[:4]) == Copy(1, 3)  # the gen ends the file
    assert idle_copy([Copy(1, 2), Gen("line 3 fixed\n"), Copy(4, 6)], lines) is None
    assert idle_copy([Copy(1, 2), Gen("line 3\n"), Copy(3, 6)], lines) is None  # an insertion, not a repeat
    assert idle_copy([Gen("line 1\n"), Copy(2, 6)], lines) is None  # no copy before it to ban
    assert idle_copy([Copy(1, 6)], lines) is None  # no gen: the model says nothing needs changing
    assert idle_copy(oracle("".join(lines), "".join(lines).replace("line 3\n", "line 3!\n")), lines) is None


def test_number_can_reach_except_the_banned_values():
    assert number_can_reach("1", 10, 19, frozenset({16}))
    assert not number_can_reach("16", 10, 19, frozenset({16}))
    assert not number_can_reach("1", 10, 11, frozenset({10, 11}))
    assert number_can_reach("1", 1, 120, frozenset({1, 10, 11, 12}))  # 13.. and 100..
    assert not number_can_reach("", 5, 5, frozenset({5})) and number_can_reach("", 5, 6, frozenset({5}))


def test_a_banned_copy_tag_cannot_be_written(tokenizer):
    m = ProgramMatcher(tokenizer, 40, 151936, [151645], banned=frozenset({Copy(1, 16)}))
    for t in tokenizer('<copy lines="1-1', add_special_tokens=False)["input_ids"]:
        m.advance(t)
    six, five = (tokenizer(d, add_special_tokens=False)["input_ids"][0] for d in "65")
    assert not m.allowed(six) and m.allowed(five)  # 16 is banned (160+ is past the 40 lines); 15 is not
    assert not m.mask()[six] and m.mask()[five]
    free = ProgramMatcher(tokenizer, 40, 151936, [151645])
    for t in tokenizer('<copy lines="1-1', add_special_tokens=False)["input_ids"]:
        free.advance(t)
    assert free.allowed(six)
    other = ProgramMatcher(tokenizer, 40, 151936, [151645], banned=frozenset({Copy(2, 16)}))
    for t in tokenizer('<copy lines="1-1', add_special_tokens=False)["input_ids"]:
        other.advance(t)
    assert other.allowed(six)  # the ban is of lines 2-16, not of every copy ending at 16


def test_a_copy_tag_that_only_banned_ranges_could_finish_is_not_begun(tokenizer):
    """With every copy from line 2 of a 2-line file banned, a tag may not begin `2` (it would reach a dead end
    at its second number), and once line 1 is copied no copy tag may open at all: the model writes gen text or
    ends. The server's grammar (`remote.gbnf.copy_body`) leaves out the same tags."""
    ids = {d: tokenizer(d, add_special_tokens=False)["input_ids"][0] for d in "12"}
    banned = frozenset({Copy(1, 2), Copy(2, 2)})
    m = ProgramMatcher(tokenizer, 2, 151936, [151645], banned=banned)
    for t in tokenizer('<copy lines="', add_special_tokens=False)["input_ids"]:
        m.advance(t)
    assert m.allowed(ids["1"]) and not m.allowed(ids["2"]) and not m.mask()[ids["2"]]
    for t in tokenizer('1-1"/>', add_special_tokens=False)["input_ids"]:
        m.advance(t)
    opener = tokenizer("<c", add_special_tokens=False)["input_ids"][0]
    assert m.last_j == 1 and not m.allowed(opener) and m.allowed(tokenizer("<gen>", add_special_tokens=False)[
        "input_ids"][0])
    assert ProgramMatcher(tokenizer, 3, 151936, [151645], banned=banned).closed_starts == frozenset()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 14), after=st.integers(0, 14), monotonic=st.booleans(),
       bans=st.lists(st.tuples(st.integers(1, 14), st.integers(0, 3)), max_size=4))
def test_the_matcher_and_the_servers_grammar_allow_the_same_tags_and_never_a_dead_end(
        tokenizer, n, after, monotonic, bans):
    """Copy mode's line rules live twice: in the matcher (local copy mode, and the replay of a server's answers)
    and in the GBNF each server request carries (`remote.gbnf`). For any file, last line copied and banned
    copies both allow the same finished tags, and every unfinished tag the matcher lets through can still be
    finished (a dead end would fail the program)."""
    from editllm.remote.gbnf import copy_body

    after = min(after, n) if monotonic else 0
    banned = frozenset(Copy(i, min(i + d, n)) for i, d in bans if i <= n)
    m = ProgramMatcher(tokenizer, n, 151936, [151645], monotonic=monotonic, banned=banned)
    tags = {(i, j): f'<copy lines="{i}-{j}"/>' for i in range(1, n + 3) for j in range(1, n + 3)}
    allowed = {ij for ij, tag in tags.items() if m._tail_ok(tag, after)}
    assert allowed == {(i, j) for i in range(after + 1, n + 1) for j in range(i, n + 1) if Copy(i, j) not in banned}
    body = copy_body(n, after, monotonic, banned)
    suffix = ' "\\"/>"'
    as_regex = body[: -len(suffix)].replace('"', "").replace(" ", "") if body else None
    assert {ij for ij in tags if as_regex and re.fullmatch(as_regex, f"{ij[0]}-{ij[1]}")} == allowed
    for tag in tags.values():
        for k in range(len("<c"), len(tag)):
            if m._tail_ok(tag[:k], after):
                assert any(tags[ij].startswith(tag[:k]) for ij in allowed), tag[:k]
