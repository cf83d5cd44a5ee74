"""CopySpec drafting: propose the tokens that followed the last γ tokens somewhere earlier.

An edited file is mostly a copy of its input, so the continuation of the current γ-gram in the
prompt is an excellent guess. The index maps every γ-gram of prompt + output to the positions right
after it, kept in increasing order; each new token adds one entry (O(γ)). Among several earlier
occurrences the drafter prefers the one at or after its cursor, the source position just past the
last accepted copy, because an edit walks through its input from top to bottom.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_DRAFT = "cost"  # CostSchedule from the engine's measured costs (editor.costs); DraftSchedule() without them
ADAPTIVE_DRAFT = "adaptive:32,2,256,16"  # DraftSchedule's defaults as a spec string


@dataclass
class DraftSchedule:
    """How many tokens to draft: grow while drafts are fully accepted, drop after a rejection.

    `fixed(10)` is CopySpec's setting. The default was chosen on the bench (bundled 1.5B, CPU, 4 bug-fix
    modules, spec seconds in total): fixed:10 198 s, adaptive:16,2,64,10 121 s, adaptive:16,2,128,10
    111-128 s, adaptive:32,2,256,16 108 s. Long drafts pay off because an edit copies long runs and a
    rejected CPU forward of k tokens costs far less than k steps.
    """

    start: int = 32
    grow: float = 2.0
    maximum: int = 256
    after_miss: int = 16
    current: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.current = self.start

    @classmethod
    def fixed(cls, k: int) -> DraftSchedule:
        return cls(start=k, grow=1.0, maximum=k, after_miss=k)

    def restart(self) -> None:
        """A new sequence: back to the first length."""
        self.current = self.start

    @classmethod
    def parse(cls, spec: str) -> DraftSchedule:
        """`fixed:10` or `adaptive:START,GROW,MAX,AFTER_MISS` (e.g. ADAPTIVE_DRAFT). `cost[:MAX]` needs
        the engine's costs (editor.costs.draft_schedule); without them it means the adaptive default."""
        kind, _, args = spec.partition(":")
        try:
            if kind == "cost":
                cost_maximum(spec)
                return cls()
            if kind == "fixed":
                k = int(args or 10)
                if k >= 1:
                    return cls.fixed(k)
            if kind == "adaptive":
                if not args:
                    return cls()
                start, grow, maximum, after = args.split(",")
                schedule = cls(int(start), float(grow), int(maximum), int(after))
                if min(schedule.start, schedule.maximum, schedule.after_miss) >= 1 and 1.0 <= schedule.grow < 1e6:
                    return schedule
        except ValueError:
            pass
        raise ValueError(f"bad draft schedule {spec!r}: use cost, cost:MAX, fixed:K or "
                         "adaptive:START,GROW,MAX,AFTER_MISS")

    def length(self, available: int) -> int:
        """The draft length when the match offers `available` tokens."""
        return min(self.current, available)

    def update(self, accepted: int, drafted: int) -> None:
        if drafted and accepted == drafted:
            self.current = min(self.maximum, max(self.current + 1, int(self.current * self.grow)))
        else:
            self.current = self.after_miss


def cost_maximum(spec: str) -> int:
    """The longest draft `cost` or `cost:MAX` allows (default 256)."""
    _, _, args = spec.partition(":")
    maximum = int(args) if args else 256
    if maximum < 1:
        raise ValueError(spec)
    return maximum


@dataclass
class CostSchedule:
    """Each draft's length by expected accepted tokens per second, from the engine's measured costs.

    `cost(k)` is a forward of k tokens in seconds (editor.costs.Costs.of: the measured table). Under a
    geometric acceptance model (each drafted token accepted with probability p, until the first
    rejection) a draft of d tokens yields 1 + p(1 - p^d)/(1 - p) tokens, the model's own next token
    included; the chosen d maximises that over cost(d + 1). p is estimated from the drafter's
    feedback (accepted tokens over accepted tokens plus rejections, recent drafts weighted more),
    starting from a prior. Why: on llama.cpp a 256-token draft rejected early costs several seconds
    (issue 21), a draft of 8 costs more per token than one of 64, and on torch float32 or a GPU, where
    a batched token costs a twentieth of a step, long drafts pay. The length is still capped by what the
    γ-gram match offers (CopyDrafter.propose), and any length is lossless: verification decides what is
    kept.

    The prior, p = 0.995 (an edit every ~200 copied tokens), was chosen on replayed spec runs (the
    drafts and verdicts of real runs, seconds from this machine's measured curve; held-out modules 1-10
    and HumanEval bug fixes 1-10, bundled 1.5B on llama.cpp, 2 AVX2 cores): priors from 0.95 to 0.995
    were within 3 % of each other; the table in place of a line through it took decode from 218 s to
    171-177 s (benchmarks/results/cpu-1.5b-short12-spec-cost-table/replay).
    """

    cost: Callable[[int], float]
    maximum: int = 256
    sizes: list[int] = field(default_factory=list)  # forward sizes a draft may take (+1 token); [] = any
    prior_accepted: float = 199.0  # prior p = 0.995
    prior_rejected: float = 1.0
    decay: float = 0.8  # weight of the past per feedback: acceptance changes between copied and edited regions
    accepted: float = field(init=False, default=0.0)
    rejected: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.accepted, self.rejected = self.prior_accepted, self.prior_rejected

    @property
    def p(self) -> float:
        return self.accepted / (self.accepted + self.rejected)

    @property
    def current(self) -> int:
        """The draft length with the most expected tokens per second."""
        return self.length(self.maximum)

    def length(self, available: int) -> int:
        """The best draft length when the match offers `available` tokens (at least 1, so that
        feedback keeps coming): a length whose forward size was measured (`sizes`), or all of
        `available`. Why only those: between measured sizes the cost is a guess, and on llama.cpp the
        true cost is far from smooth (a forward of 12 tokens cost more than one of 16)."""
        top = max(1, min(self.maximum, available))
        p = min(self.p, 1 - 1e-9)
        allowed = ({k - 1 for k in self.sizes if 2 <= k <= top + 1} | {top}) if self.sizes else set(range(1, top + 1))
        best, best_rate = 1, 0.0
        for d in sorted(allowed):
            gain = (1 - p ** (d + 1)) / (1 - p)  # 1 + p + ... + p^d expected tokens from a forward of 1 + d
            rate = gain / self.cost(d + 1)
            if rate > best_rate:
                best, best_rate = d, rate
        return best

    def update(self, accepted: int, drafted: int) -> None:
        self.accepted = self.decay * self.accepted + accepted
        self.rejected = self.decay * self.rejected + (1.0 if accepted < drafted else 0.0)


class CopyDrafter:
    """γ-gram index over prompt + output with a positional prior for the next copy."""

    def __init__(self, gamma: int = 3, schedule: DraftSchedule | CostSchedule | None = None) -> None:
        self.gamma = gamma
        self.schedule = schedule or DraftSchedule()
        self.seq: list[int] = []
        self.index: dict[tuple[int, ...], list[int]] = {}
        self.cursor = 0
        self._last_source: int | None = None

    def reset(self, prompt_ids: list[int], source_start: int = 0) -> None:
        """Index the prompt; `source_start` is where the input file begins (the first cursor)."""
        self.seq = seq = list(prompt_ids)
        self.index = index = {}
        self.cursor = source_start
        self.schedule.restart()
        g = self.gamma
        for n in range(g, len(seq) + 1):  # as `append` token by token, without a call a token (prompts are long)
            index.setdefault(tuple(seq[n - g:n]), []).append(n)

    def append(self, token: int) -> None:
        """Add one token of the sequence and the γ-gram it completes."""
        self.seq.append(token)
        n = len(self.seq)
        if n >= self.gamma:
            self.index.setdefault(tuple(self.seq[n - self.gamma :]), []).append(n)

    def propose(self, limit: int | None = None) -> list[int]:
        """Draft up to the schedule's length (and `limit`) of tokens, or [] when nothing matches."""
        n = len(self.seq)
        self._last_source = None
        if n < self.gamma:
            return []
        positions = self.index.get(tuple(self.seq[n - self.gamma :]))
        if not positions:
            return []
        end = len(positions) - 1 if positions[-1] == n else len(positions)  # never the suffix itself
        if end == 0:
            return []
        k = bisect.bisect_left(positions, self.cursor, 0, end)
        start = positions[k] if k < end else positions[end - 1]
        available = n - start if limit is None else min(n - start, limit)
        if available <= 0:
            return []
        draft = self.seq[start : start + self.schedule.length(available)]
        if draft:
            self._last_source = start
        return draft

    def feedback(self, accepted: int, drafted: int) -> None:
        """Move the cursor past an accepted copy and adapt the draft length."""
        if self._last_source is not None and accepted:
            self.cursor = self._last_source + accepted
        self.schedule.update(accepted, drafted)
