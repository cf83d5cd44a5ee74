"""The copy-program grammar as GBNF (llama-server's `grammar` field), for one request of the copy loop.

A request writes until the next copy tag closes: any number of `<gen>...</gen>` spans, then at most one
`<copy lines="I-J"/>` whose lines come after the last one used (the client then appends the copied lines'
token ids and sends the continuation). It is `grammar.cfg.lark_grammar(n, monotonic, after)` cut at the
next copy tag: the same rule, in the GBNF llama.cpp reads, so the server needs no llguidance.

The grammar is stated in characters, so the model may split a tag into any tokens; local copy mode's matcher
forces the tokens of a tag's fixed text (`opy lines="` after `<c`). The client replays each answer through that
matcher, cuts it where the model left the forced tokens, appends them itself and starts the next request
inside the op (`partial`), so the server sees the tokens the local engine saw.

Line numbers are stated exactly, as cfg.py does: every (I, J) pair while there are at most `EXACT_PAIRS`
of them; past that I and J are each an exact range of integers ([after+1, N]) and the client refuses J < I
(a program that falls back to spec, as an unusable local program does).
"""

from __future__ import annotations

import re

from editllm.grammar.program import Copy

EXACT_PAIRS = 5_000  # (I, J) alternatives stated one by one (about 100 remaining lines)

# `<gen>`, then any text up to the first `</gen>`: the states of a matcher for `</gen>` (k characters of it
# matched), so no `</gen>` can sit inside a span. '<' occurs only first in `</gen>`, so it always restarts.
GEN_RULES = r'''gen ::= "<gen>" g0
g0 ::= "<" g1 | [^<] g0
g1 ::= "/" g2 | "<" g1 | [^/<] g0
g2 ::= "g" g3 | "<" g1 | [^g<] g0
g3 ::= "e" g4 | "<" g1 | [^e<] g0
g4 ::= "n" g5 | "<" g1 | [^n<] g0
g5 ::= ">" | "<" g1 | [^><] g0'''


def int_range(lo: int, hi: int) -> str:
    """A GBNF expression for the decimal integers lo..hi (no leading zeros), built digit by digit."""
    if lo > hi:
        raise ValueError(f"empty range {lo}..{hi}")
    parts = []
    for width in range(len(str(lo)), len(str(hi)) + 1):
        a = max(lo, 10 ** (width - 1))
        b = min(hi, 10**width - 1)
        if a <= b:
            parts.append(_same_width(str(a), str(b)))
    return "(" + " | ".join(parts) + ")"


def _same_width(a: str, b: str) -> str:
    """Integers from a to b, both written with the same number of digits."""
    if len(a) == 1:
        return f"[{a}-{b}]" if a != b else f'"{a}"'
    if a[0] == b[0]:
        return f'"{a[0]}" {_same_width(a[1:], b[1:])}'
    rest = len(a) - 1
    alts = [f'"{a[0]}" {_same_width(a[1:], "9" * rest)}']
    if int(b[0]) - int(a[0]) > 1:
        alts.append(f"[{int(a[0]) + 1}-{int(b[0]) - 1}]" + " [0-9]" * rest)
    alts.append(f'"{b[0]}" {_same_width("0" * rest, b[1:])}')
    return "(" + " | ".join(alts) + ")"


def int_ranges(lo: int, hi: int, skip: frozenset[int] | set[int] = frozenset()) -> str | None:
    """The integers lo..hi except those in `skip`, as one GBNF expression (None when none is left)."""
    gaps, start = [], lo
    for k in sorted(x for x in skip if lo <= x <= hi) + [hi + 1]:
        if start < k:
            gaps.append(int_range(start, k - 1))
        start = k + 1
    return None if not gaps else gaps[0] if len(gaps) == 1 else "(" + " | ".join(gaps) + ")"


def copy_body(n_lines: int, after: int, monotonic: bool = True, banned: frozenset[Copy] = frozenset()
              ) -> str | None:
    """What follows `<copy lines="` in a tag that may come next: `I-J"/>` (None when no line is left).
    `banned`: copies copy mode's matcher refuses (an ask again: `editor.copymode.ask_again`)."""
    first = after + 1 if monotonic else 1
    if first > n_lines:
        return None
    ends: dict[int, set[int]] = {}  # I -> the J it may not take
    for c in banned:
        ends.setdefault(c.i, set()).add(c.j)
    m = n_lines - first + 1
    exact = range(first, n_lines + 1) if m * (m + 1) // 2 <= EXACT_PAIRS else sorted(i for i in ends if i >= first)
    pairs = []
    for i in exact:
        js = int_ranges(i, n_lines, ends.get(i, set()))
        if js is not None:
            pairs.append(f'"{i}-" {js}')
    if len(exact) < m:  # past EXACT_PAIRS: the other I and J each an exact range
        starts = int_ranges(first, n_lines, set(exact))
        if starts is not None:
            pairs.append(f'{starts} "-" {int_range(first, n_lines)}')
    if not pairs:
        return None
    return "(" + " | ".join(pairs) + ')' + ' "\\"/>"'


def copy_rule(n_lines: int, after: int, monotonic: bool = True, banned: frozenset[Copy] = frozenset()) -> str | None:
    """The `copy` rule for a tag that may come next (None when no line is left to copy)."""
    body = copy_body(n_lines, after, monotonic, banned)
    return None if body is None else f'copy ::= "<copy lines=\\"" {body}'


COPY_OPEN, GEN_OPEN, GEN_CLOSE, CLOSING = '<copy lines="', "<gen>", "</gen>", '"/>'
TAIL_RE = re.compile(r'([1-9][0-9]*)-([1-9][0-9]*)("/?)$')


def literal(text: str) -> str:
    """A GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rest(text: str, begun: str) -> str:
    """The literal for what remains of `text` once `begun` is written, with a trailing space (empty if none)."""
    return literal(text[len(begun):]) + " " if len(begun) < len(text) else ""


def program_grammar(n_lines: int, banned: frozenset[Copy] = frozenset()) -> str:
    """The whole program in one request (`copy_requests="one"`): gen spans and copy tags of any lines of the
    file, in any order. Which ranges may follow which (monotonic) is not stated: that needs a rule per last
    line used, which the copy loop gets by sending the next one with each request; here the resolver refuses
    a program whose ranges go back (it falls back to spec, as an unusable local program does)."""
    copy = copy_rule(n_lines, 0, monotonic=False, banned=banned)
    if copy is None:
        return "\n".join(["root ::= gen+", GEN_RULES])
    return "\n".join(["root ::= (gen | copy)+", copy, GEN_RULES])


def request_grammar(n_lines: int, after: int = 0, monotonic: bool = True, partial: str = "",
                    banned: frozenset[Copy] = frozenset()) -> str:
    """What one request may write for a file of `n_lines` lines once the program has copied up to line
    `after`: gen spans, then at most one copy tag (the request ends there: the grammar is complete).

    `partial`: the unfinished op the client ended with itself (after copy mode's forced tokens: `<gen`,
    `<copy lines="`, `<copy lines="2-3"/`...); the request then starts with the rest of that op.
    `banned`: copies the program may not use (`copy_body`)."""
    copy = copy_rule(n_lines, after, monotonic, banned)
    then = "gen* copy?" if copy is not None else "gen*"
    rules = [copy] if copy is not None else []
    if not partial:
        return "\n".join([f"root ::= {then}", *rules, GEN_RULES])
    if partial.startswith(GEN_OPEN):  # inside a span: the state of the `</gen>` matcher
        content = partial[len(GEN_OPEN):]
        if GEN_CLOSE in content:
            raise ValueError(f"a request cannot start after a closed span: {partial!r}")
        k = max(j for j in range(len(GEN_CLOSE)) if content.endswith(GEN_CLOSE[:j]))
        return "\n".join([f"root ::= g{k} {then}", *rules, GEN_RULES])
    starts = []
    if GEN_OPEN.startswith(partial):
        starts.append(f"{rest(GEN_OPEN, partial)}g0 {then}")
    body = copy_body(n_lines, after, monotonic, banned)
    if COPY_OPEN.startswith(partial) and body is not None:
        starts.append(f"{rest(COPY_OPEN, partial)}{body}")
    tail = TAIL_RE.match(partial[len(COPY_OPEN):]) if partial.startswith(COPY_OPEN) else None
    if tail and tail.group(3):  # the closing `"/>` begun: only its rest
        starts.append(literal(CLOSING[len(tail.group(3)):]))
    if not starts:
        raise ValueError(f"a request cannot start inside {partial!r}")
    return "\n".join(["root ::= " + " | ".join(f"({x})" for x in starts), *rules, GEN_RULES])
