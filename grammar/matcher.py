"""The token-level FSM of copy mode, for a file of N lines.

llguidance (the CFG engine outlines uses) checks the grammar: exact masks in microseconds, draft
validation, rollback and forced tokens. Two rules a context-free grammar of fixed size cannot state
cheaply are layered on top, on the few tokens allowed inside a copy tag (Qwen writes one digit per
token): 1 <= I <= J <= N with spans after the previous copy (monotonic, by default), and no token
that closes a copy tag and carries more bytes (`"/><`), so copied lines always follow their tag.

The matcher tracks only model-written program tokens; copied lines never pass through it.
"""

from __future__ import annotations

import re
import weakref

import numpy as np
import torch
from editllm.grammar.cfg import lark_grammar
from editllm.grammar.program import COPY_RE, GEN_CLOSE, GEN_OPEN, Copy, Op, parse
from editllm.grammar.tokens import token_text

# Weakly keyed by the tokenizer object itself: an `id()` can be reused by a new object once the old
# one is collected, which would hand it another tokenizer's vocabulary.
_LL_TOKENIZERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
TAG_RE = re.compile(r'<copy lines="(\d*)(-?)(\d*)(.*)', re.S)
CLOSING = '"/>'


def ll_tokenizer(tokenizer, vocab_size: int, eos: list[int]):
    """llguidance's view of a tokenizer; built once per tokenizer, logits width and EOS set (about 2 s).

    Built from the `tokenizers` pipeline itself (`backend_tokenizer`, which transformers' fast
    tokenizers and editor.tokenizer's light one both have), as `llguidance.hf.from_tokenizer` does,
    but without importing transformers, which that module does at its top."""
    from copy import copy

    import llguidance

    built = _LL_TOKENIZERS.setdefault(tokenizer, {})
    key = (vocab_size, tuple(eos))
    if key not in built:
        backend = copy(tokenizer.backend_tokenizer)
        backend.no_padding()
        backend.no_truncation()
        built[key] = llguidance.LLTokenizer(backend.to_str(), n_vocab=vocab_size, eos_token=eos)
    return built[key]


def number_can_reach(prefix: str, lo: int, hi: int, banned: frozenset[int] = frozenset()) -> bool:
    """Whether some number written as `prefix` + more digits lies in [lo, hi] and not in `banned` (a few values)."""
    spans = [(lo, hi)] if not prefix else \
        [(max(lo, int(prefix) * 10**e), min(hi, (int(prefix) + 1) * 10**e - 1))
         for e in range(max(0, len(str(hi)) - len(prefix)) + 1)]
    return any(b - a + 1 > sum(a <= v <= b for v in banned) for a, b in spans if a <= b)


class ProgramMatcher:
    """mask / allowed / advance / validate / rollback / forced tokens / the copy a token just closed."""

    def __init__(self, tokenizer, n_lines: int, vocab_size: int, eos: list[int], monotonic: bool = True,
                 banned: frozenset[Copy] = frozenset()) -> None:
        """`banned`: copy tags the program may not write (copy mode's second ask, `grammar.program.idle_copy`)."""
        import llguidance

        self.tokenizer = tokenizer
        self.n = n_lines
        self.monotonic = monotonic
        self.banned = banned
        # first lines whose every copy is banned: a tag may not begin with them (it could not be finished)
        self.closed_starts = frozenset(i for i in {c.i for c in banned}
                                       if all(Copy(i, j) in banned for j in range(i, n_lines + 1)))
        self.vocab_size = vocab_size
        self.eos = set(eos)
        # The loose grammar (any line numbers): the line rules are stated below, for any N, and
        # llguidance then never forces digits (forced tokens skip the model's choice).
        self.ll = llguidance.LLMatcher(ll_tokenizer(tokenizer, vocab_size, eos), lark_grammar(), log_level=0)
        if self.ll.is_error():
            raise RuntimeError(f"copy grammar rejected by llguidance: {self.ll.get_error()}")
        self.pieces: list[str] = []  # text of each consumed token
        self.history: list[tuple[int, int, Copy | None]] = []  # (op_start, last_j, closed) before each token
        self.text = ""
        self.op_start = 0  # where the unfinished op begins in `text`
        self.last_j = 0  # last line copied so far
        self.closed: Copy | None = None  # the copy tag closed by the last token

    # --- state -----------------------------------------------------------------------------------
    def piece(self, token: int) -> str:
        return token_text(self.tokenizer, token)

    @property
    def partial(self) -> str:
        return self.text[self.op_start:]

    def ops(self) -> list[Op]:
        """The program's finished ops (a token may also have begun the next one: `partial`)."""
        return parse(self.text[: self.op_start])

    def in_gen(self) -> bool:
        return self.partial.startswith(GEN_OPEN)

    def accepting(self) -> bool:
        return self.ll.is_accepting() and not self.partial

    # --- the extra rules -------------------------------------------------------------------------
    def _tail_ok(self, partial: str, last_j: int) -> bool:
        """Line-range rules for an unfinished op (`partial` may end mid-tag)."""
        lo = last_j + 1 if self.monotonic else 1
        if partial.startswith("<c") and not number_can_reach("", lo, self.n, self.closed_starts):
            return False  # every line is copied already (or banned): no copy tag can be finished
        m = TAG_RE.match(partial)
        if not m:
            return True
        first, dash, second, rest = m.groups()
        if not dash:
            return number_can_reach(first, lo, self.n, self.closed_starts) and not rest
        if not first or not lo <= int(first) <= self.n or int(first) in self.closed_starts:
            return False
        i = int(first)
        banned = frozenset(c.j for c in self.banned if c.i == i)
        if not rest:
            return number_can_reach(second, i, self.n, banned)
        if not second or not i <= int(second) <= self.n or int(second) in banned:
            return False
        return CLOSING.startswith(rest) or rest == CLOSING

    def _extra_ok(self, token: int) -> bool:
        text = self.partial + self.piece(token)
        last_j = self.last_j
        while True:  # a token may finish ops (e.g. `>` of `</gen>`): check what remains
            if text.startswith(GEN_OPEN):
                end = text.find(GEN_CLOSE, len(GEN_OPEN))
                if end < 0:
                    return True
                text = text[end + len(GEN_CLOSE):]
                continue
            m = COPY_RE.match(text)
            if m:
                if not self._tail_ok(text[: m.end()], last_j) or m.end() < len(text):
                    return False  # out of range, or bytes after the closing `/>`
                return True
            return self._tail_ok(text, last_j)

    # --- the matcher interface --------------------------------------------------------------------
    def allowed(self, token: int) -> bool:
        if token in self.eos:
            return self.accepting()
        return self.ll.validate_tokens([token]) == 1 and self._extra_ok(token)

    def mask(self) -> torch.Tensor:
        """Boolean mask over the logits width: True where the token is legal now."""
        bits = np.frombuffer(self.ll.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[: self.vocab_size].astype(bool)
        if not self.in_gen():  # inside tags the legal set is tiny: refine it token by token
            for token in np.flatnonzero(allowed):
                if int(token) not in self.eos and not self._extra_ok(int(token)):
                    allowed[token] = False
        for e in self.eos:
            if e < self.vocab_size:
                allowed[e] = self.accepting()
        return torch.from_numpy(allowed)

    def pick(self, logits: torch.Tensor | np.ndarray, best: int | None = None) -> int | None:
        """Greedy choice under the mask: the argmax (`best`, if the caller has it) when legal, the
        usual case; else the argmax of the masked row, on the row's own device (a numpy row, from an
        engine without torch, is viewed as a tensor: no copy)."""
        logits = torch.as_tensor(logits)
        if best is None:
            best = int(logits.argmax())
        if self.allowed(best):
            return best
        mask = self.mask()
        if not mask.any():
            return None
        allowed = mask[: logits.shape[-1]].to(logits.device)
        return int(logits.masked_fill(~allowed, float("-inf")).argmax())

    def advance(self, token: int) -> None:
        """Consume one legal token (check with `allowed` first: an illegal one poisons llguidance)."""
        if not self.ll.consume_token(token):
            raise RuntimeError(f"token {token} rejected: {self.ll.get_error()}")
        self.history.append((self.op_start, self.last_j, self.closed))
        piece = self.piece(token)
        self.pieces.append(piece)
        self.text += piece
        self.closed = None
        while True:
            partial = self.partial
            if partial.startswith(GEN_OPEN):
                end = partial.find(GEN_CLOSE, len(GEN_OPEN))
                if end < 0:
                    break
                self.op_start += end + len(GEN_CLOSE)
                continue
            m = COPY_RE.match(partial)
            if not m:
                break
            self.closed = Copy(int(m.group(1)), int(m.group(2)))
            self.last_j = self.closed.j
            self.op_start += m.end()

    def validate(self, draft: list[int]) -> int:
        """How many leading draft tokens may be consumed, staying inside gen text (a draft never
        closes a copy tag: copied lines must be appended right after their tag)."""
        n = self.ll.validate_tokens(draft)
        text = self.partial
        for k, token in enumerate(draft[:n]):
            if not text.startswith(GEN_OPEN):
                return k
            text += self.piece(token)
            end = text.find(GEN_CLOSE, len(GEN_OPEN))
            if end >= 0:
                return k + 1 if end + len(GEN_CLOSE) == len(text) else k
        return n

    def validate_tag(self, draft: list[int]) -> int:
        """How many leading tokens of a drafted tag are legal, stopping before the token that would
        close a copy tag (its lines must join that token's forward, which a draft cannot do)."""
        n = 0
        for token in draft:
            if not self.allowed(token):
                break
            self.advance(token)
            n += 1
            if self.closed is not None:
                break
        closes = self.closed is not None
        self.rollback(n)
        return n - 1 if closes else n

    def rollback(self, k: int) -> None:
        if k <= 0:
            return
        self.ll.rollback(k)
        self.op_start, self.last_j, self.closed = self.history[-k]
        del self.history[-k:]
        del self.pieces[-k:]
        self.text = "".join(self.pieces)

    def forced(self) -> list[int]:
        """Tokens the grammar forces next (after `<c`: `opy`, ` lines`, `="`), none inside numbers."""
        if self.in_gen():
            return []
        return [t for t in self.ll.compute_ff_tokens() if t not in self.eos]
