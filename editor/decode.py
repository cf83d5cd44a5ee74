"""One verify loop for every mode, on any engine: one token or one verified draft per forward.

rewrite is this loop with no drafter. spec adds a drafter: its tokens ride along in the same forward
as the pending token, the longest prefix the model agrees with is kept (plus the model's own next
token), and the cache is truncated back to what was kept. Under greedy decoding the kept tokens are
exactly the tokens plain decoding would produce, so the output is byte-identical.

copy mode (editor.copymode) and its oracle run this same loop through a `Steer`: its `pick` says
which token a row of logits gives (the grammar mask), its `feed` what joins a token in the next
forward (grammar-forced tokens and the copied lines' token ids), and `accept` hears each verified
draft token. Plain decoding uses `Free`, which picks the model's choice and feeds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol

from editllm.editor.engine import Engine, Reuse, TorchEngine, eos_ids
from editllm.grammar.tokens import token_text

if TYPE_CHECKING:  # rows are torch tensors or numpy arrays; torch is imported only to sample
    import numpy as np
    import torch

__all__ = ["DecodeStats", "Decoder", "Drafter", "Free", "Steer", "TailStop", "eos_ids"]


@dataclass
class DecodeStats:
    """What one decoding run cost; `--stats` prints it and the bench aggregates it."""

    mode: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    forwards: int = 0  # prefill included
    prefill_seconds: float = 0.0  # to the first output token, prefix included
    prefix_tokens: int = 0  # fixed prompt prefix already in the cache before the prefill (Engine.start)
    prefix_seconds: float = 0.0  # what getting it there took (part of prefill_seconds)
    prefix_source: str = ""  # "memory", "disk" (a saved state loaded) or "read"; "" without a prefix
    decode_seconds: float = 0.0
    copy_attempts: int = 0
    copied_tokens: int = 0  # drafted tokens the model accepted
    accepted_lengths: list[int] = field(default_factory=list)
    stop_reason: str = ""

    @property
    def tokens_per_forward(self) -> float:
        steps = self.forwards - 1
        return self.output_tokens / steps if steps > 0 else float(self.output_tokens)

    @property
    def copied_share(self) -> float:
        return self.copied_tokens / self.output_tokens if self.output_tokens else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["tokens_per_forward"] = round(self.tokens_per_forward, 3)
        d["copied_share"] = round(self.copied_share, 3)
        return d


class TailStop:
    """Stops when the decoded output gains a marker (the closing fence); checks only a short tail.

    Checking every token keeps the stop point identical across modes: a verified draft is emitted
    token by token and cut exactly where plain decoding would have stopped.
    """

    def __init__(self, tokenizer, matches: Callable[[str], bool], window: int = 16, chars: str | None = None,
                 pending: Callable[[str], bool] | None = None) -> None:
        """`chars`: characters one of which any token that completes the marker holds (the closing fence's
        character: "\n" + fence ends in it). Other tokens then skip the decode: a verified
        draft emits tens of tokens a forward, each checked, and on a GPU those decodes cost as much as a
        good part of the forward. Each token id's text is decoded once (`grammar.tokens`). `pending`: whether
        a checked text ends in a marker not yet complete (a fence line the next token may end with a newline
        or turn into "````sh"): the next token is then checked whatever it holds."""
        self.tokenizer = tokenizer
        self.matches = matches
        self.window = window
        self.chars = chars
        self.pending = pending
        self._may_complete: dict[int, bool] = {}
        self._checked = 0  # the output's length at the last check, which found no marker
        self._pending = False  # the last check's text ended in an unfinished marker

    def __call__(self, output_ids: list[int]) -> bool:
        # the tokens since the last check: one for our decoder, several for a loop that checks once a step
        # (transformers' prompt lookup), all of them for a new output
        n = len(output_ids)
        fresh = n - self._checked if n > self._checked else n
        if n <= self._checked:  # a new output: nothing of the last one is pending
            self._pending = False
        self._checked = n
        if self.chars is not None and not self._pending:  # no marker came before these tokens: only one
            if fresh == 1:  # holding its characters adds it; our decoder checks every token: no generator for one
                if not self.may_complete(output_ids[-1]):
                    return False
            elif not any(self.may_complete(t) for t in output_ids[n - fresh:]):
                return False
        tail = output_ids[-(self.window + fresh - 1):]
        text = self.tokenizer.decode(tail, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if len(tail) < n:  # the tail's first line may be cut: look from its first newline on
            text = "\n" + text.split("\n", 1)[-1] if "\n" in text else ""
        self._pending = self.pending is not None and self.pending(text)
        return self.matches(text)

    def may_complete(self, token: int) -> bool:
        """Whether `token`'s text holds one of the marker's characters (ASCII: a token's bytes that spell one
        show in its text decoded alone, whatever multi-byte pieces they sit beside)."""
        known = self._may_complete.get(token)
        if known is None:
            piece = token_text(self.tokenizer, token)
            known = self._may_complete[token] = any(c in piece for c in self.chars)
        return known


class Drafter(Protocol):
    """Proposes tokens to verify (editor.drafter.CopyDrafter, or copy mode's program drafts)."""

    def reset(self, prompt_ids: list[int], source_start: int = 0) -> None: ...

    def append(self, token: int) -> None:
        """One token joined the sequence the model has seen (output, forced or copied)."""
        ...

    def propose(self, limit: int | None = None) -> list[int]: ...

    def feedback(self, accepted: int, drafted: int) -> None: ...


class Steer(Protocol):
    """What a constrained mode changes in the loop; see `Free` for plain decoding."""

    def pick(self, logits: torch.Tensor | np.ndarray, best: int) -> int | None:
        """The token one row of logits gives; `best` is the loop's own choice for it (argmax or
        sample). None: no token is legal, the loop stops (stop_reason "dead_end")."""
        ...

    def feed(self, token: int) -> list[int | Reuse]:
        """`token` (picked, not EOS) joins the output; return the tokens that join it in the next
        forward, before any draft. They go to the cache and the drafter, not to the output ids.
        A `Reuse` among them stands for tokens whose cache entries the engine takes from the prompt."""
        ...

    def accept(self, token: int) -> None:
        """A drafted token was verified and joins the output (it is in the cache already)."""
        ...


class Free:
    """Plain decoding: the model's choice, nothing fed alongside."""

    def pick(self, logits: torch.Tensor | np.ndarray, best: int) -> int | None:
        return best

    def feed(self, token: int) -> list[int]:
        return []

    def accept(self, token: int) -> None:
        pass


class Decoder:
    """Greedy (or sampled) decoding with optional verified drafts, batch 1, on one engine."""

    def __init__(self, engine: Engine | torch.nn.Module, tokenizer=None, temperature: float = 0.0,
                 seed: int = 0) -> None:
        """`Decoder(engine)`, or `Decoder(model, tokenizer)` for a transformers model (a TorchEngine)."""
        self.engine: Engine = TorchEngine(engine, tokenizer) if tokenizer is not None else engine
        self.tokenizer = self.engine.tokenizer
        self.eos = self.engine.eos
        self.temperature = temperature
        self.seed = seed
        self.generator = None  # made at the first sample: greedy decoding never imports torch

    def choose(self, logits: torch.Tensor | np.ndarray) -> list[int]:
        """One token per row: the argmax where the logits are (only ids come back), or a sample at
        the temperature (on the host in float32, with the seeded generator)."""
        if self.temperature <= 0:
            return logits.argmax(-1).tolist()
        import torch

        if self.generator is None:
            self.generator = torch.Generator(device="cpu").manual_seed(self.seed)
        probs = torch.softmax(torch.as_tensor(logits).float().cpu() / self.temperature, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1).tolist()

    def run(
        self,
        prompt_ids: list[int],
        max_new_tokens: int | None,
        stop: Callable[[list[int]], bool] | None = None,
        drafter: Drafter | None = None,
        source_start: int = 0,
        mode: str = "rewrite",
        on_progress: Callable[[int, float], None] | None = None,
        steer: Steer | None = None,
        stats: DecodeStats | None = None,
        prefix: int = 0,
        cached: bool = False,
    ) -> tuple[list[int], DecodeStats]:
        """Decode until EOS, `stop(output_ids)`, `max_new_tokens` (None: no cap) or a dead end;
        return the output ids (picked and verified tokens, not what `steer.feed` added) and stats
        (filled into `stats` when given, e.g. copy mode's CopyStats).

        With sampling, each drafted token is checked by sampling the model's own distribution at
        its position and comparing: accepted tokens are then distributed exactly as in plain sampling.

        `prefix`: the first that many prompt ids are the fixed part every request shares; an engine
        with `start` brings them into the cache from memory or a saved state instead of reading them.
        `cached`: the engine's cache begins with this prompt already (a run on it just ended): it is cut
        back to the prompt, which is not read again (copy mode's second ask).
        """
        plain = steer is None  # a steered mode's drafts depend on its grammar state, known only after a pick
        steer = steer or Free()
        stats = stats or DecodeStats(mode=mode, prompt_tokens=len(prompt_ids))
        engine = self.engine
        start = time.perf_counter()
        have = self.resume(prompt_ids) if cached else self.begin(prompt_ids, prefix, stats)
        if drafter is not None:
            drafter.reset(prompt_ids, source_start)
        # The prompt's forward carries the first draft: a rewrite starts by copying its input, the drafter
        # already matches the prompt's last tokens (the opening fence) to the file's first ones, and in
        # that long batch a drafted token costs the least it ever will.
        draft = drafter.propose(max_new_tokens) if drafter is not None and plain else []
        rows = engine.forward(prompt_ids[have:] + draft, keep=len(draft) + 1)
        stats.forwards = 1
        out: list[int] = []

        def emit(t: int | None) -> bool:
            """Add one token to the output; True when decoding must stop."""
            if t is None:
                stats.stop_reason = "dead_end"
                return True
            if t in self.eos:
                stats.stop_reason = "eos"
                return True
            out.append(t)
            if drafter is not None:
                drafter.append(t)
            if stop is not None and stop(out):
                stats.stop_reason = "stop"
                return True
            if max_new_tokens is not None and len(out) >= max_new_tokens:
                stats.stop_reason = "max_new_tokens"
                return True
            return False

        def verify(rows, draft: list[int]) -> tuple[int | None, bool]:
            """The forward's verdict on `draft`: its agreed prefix joins the output, the rest leaves the
            cache. Returns (the next pending token, whether decoding must stop)."""
            best = self.choose(rows)
            accepted = 0
            token = steer.pick(rows[0], best[0])
            while accepted < len(draft) and token == draft[accepted]:
                steer.accept(token)
                accepted += 1
                token = steer.pick(rows[accepted], best[accepted])
            if draft:
                stats.copy_attempts += 1
                stats.accepted_lengths.append(accepted)
                stats.copied_tokens += accepted
                drafter.feedback(accepted, len(draft))
            if any(emit(t) for t in draft[:accepted]):
                return token, True
            engine.truncate(len(draft) - accepted)
            return token, False

        token, done = verify(rows, draft)
        stats.prefill_seconds = time.perf_counter() - start
        while not done and not emit(token):
            extra = steer.feed(token)
            if drafter is not None:
                for t in extra:
                    for i in t.ids if isinstance(t, Reuse) else (t,):
                        drafter.append(i)
            limit = None if max_new_tokens is None else max_new_tokens - len(out)
            draft = drafter.propose(limit) if drafter is not None else []
            parts = [token, *extra, *draft]
            if any(isinstance(t, Reuse) for t in extra):  # copy mode's --copy-kv reuse
                rows = engine.forward_reuse(parts, keep=len(draft) + 1)
            else:
                rows = engine.forward(parts, keep=len(draft) + 1)
            stats.forwards += 1
            token, done = verify(rows, draft)
            if on_progress is not None:
                on_progress(len(out), time.perf_counter() - start)
        stats.output_tokens = len(out)
        stats.decode_seconds = time.perf_counter() - start - stats.prefill_seconds
        return out, stats

    def resume(self, prompt_ids: list[int]) -> int:
        """Cut the cache back to the prompt it begins with, all but its last id (read again for its logits)."""
        have = len(prompt_ids) - 1
        if self.engine.length < have:
            raise ValueError(f"the cache holds {self.engine.length} ids, fewer than the prompt's {have}")
        self.engine.truncate(self.engine.length - have)
        return have

    def begin(self, prompt_ids: list[int], prefix: int, stats: DecodeStats) -> int:
        """Start the engine's sequence; return how many prompt ids are in its cache already (the
        fixed prefix, from Engine.start), leaving at least one for the prefill's logits."""
        engine = self.engine
        begin = getattr(engine, "start", None)
        if prefix <= 0 or begin is None:
            engine.reset()
            return 0
        t0 = time.perf_counter()
        have, stats.prefix_source = begin(prompt_ids[:prefix])
        if have >= len(prompt_ids):  # the whole prompt is the prefix: read its last token again
            engine.truncate(have - len(prompt_ids) + 1)
            have = len(prompt_ids) - 1
        stats.prefix_tokens = have
        stats.prefix_seconds = time.perf_counter() - t0
        return have
