"""Copy-as-Decode: the model writes an edit program; each copy is one shared forward pass.

Copy mode runs the decoder's one verify loop (editor.decode) and steers it. Each step the FSM masks
the logits (cheaply: the argmax is checked first). When a token closes a copy tag, the copied lines'
tokens are appended to the KV cache in the same forward as that token, so the model sees the copied
text without spending one step per token. Grammar-forced tokens ride along the same way. Inside
`<gen>` the spec drafter proposes drafts, trimmed to what the FSM accepts; between ops the likely
next tag is drafted. The resolver turns the finished program into text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from editllm.editor.copykv import COPY_KV, DEFAULT_TAIL, PromptCopies
from editllm.editor.decode import Decoder, DecodeStats
from editllm.editor.drafter import DEFAULT_DRAFT, CopyDrafter, DraftSchedule
from editllm.editor.engine import Engine, Reuse, set_adapter, supports_reuse
from editllm.editor.errors import EditError
from editllm.editor.models import LoadedModel
from editllm.editor.prefix import prefix_token_count
from editllm.editor.prompt import copy_prefix, copy_prompt_span
from editllm.grammar.matcher import ProgramMatcher
from editllm.grammar.program import GEN_CLOSE, GEN_OPEN, Copy, Op, ProgramError, idle_copy, parse
from editllm.grammar.tokens import chat_ids, text_ids
from editllm.resolver.resolve import Resolver

RETRIES = 2  # asks again after an idle gen span (`run_copy`)


class ProgramFailed(Exception):
    """The model's program cannot be used (caps, empty, dead end); the caller falls back to spec."""


class IdleStop(Exception):
    """The program just closed the copy after an idle gen span (`grammar.program.idle_copy`): it will be set
    aside, so the rest of it is not written (`CopyRun(stop_idle=True)`)."""


@dataclass
class CopyStats(DecodeStats):
    """DecodeStats plus what copy mode spends where."""

    program_tokens: int = 0  # tokens the model wrote (tags and gen text)
    tag_tokens: int = 0
    forced_tokens: int = 0
    spans: int = 0
    copied_lines: int = 0
    prefilled_tokens: int = 0  # copied lines appended to the cache
    reused_tokens: int = 0  # of those, taken from the prompt's cache entries (--copy-kv reuse)
    program: str = ""
    retries: int = 0  # asks again after an idle gen span (`grammar.program.idle_copy`)
    # the programs those asks replaced, first ask first; one that stopped at its idle span ends with the copy
    # after that span (`CopyRun(stop_idle=True)`)
    set_aside: list[str] = field(default_factory=list)
    # the program's token ids: two programs of the same text may differ in tokens (the bench compares
    # these); left out of `as_dict`, which `--stats` prints
    program_ids: list[int] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d = super().as_dict()
        d.pop("program_ids", None)
        return d

    def follow(self, earlier: CopyStats, again: bool = True) -> None:
        """This run asked again after `earlier`'s idle program: its costs join this run's (the prompt was read
        once, in the first ask). `again` False: this run is `earlier`'s own ask written whole (it had stopped
        at its idle span), so it counts no new ask and sets nothing aside."""
        self.retries = earlier.retries + again
        self.set_aside = [*earlier.set_aside, earlier.program] if again else list(earlier.set_aside)
        self.forwards += earlier.forwards
        self.decode_seconds += self.prefill_seconds + earlier.decode_seconds
        self.prefill_seconds = earlier.prefill_seconds
        self.prefix_tokens, self.prefix_seconds, self.prefix_source = \
            earlier.prefix_tokens, earlier.prefix_seconds, earlier.prefix_source


def copy_prompt_ids(lm: LoadedModel, path: str, text: str, instruction: str) -> list[int]:
    return chat_ids(lm.tokenizer, *copy_prompt_span(lm.tokenizer, path, text, instruction))


def copy_prefix_length(tokenizer, prompt_ids: list[int]) -> int:
    """How many of a copy prompt's ids are its fixed part (rules and worked example, `copy_prefix`),
    which an engine keeps or loads from a saved state instead of reading (`Engine.start`); 0 when
    those ids are not a prefix of the prompt's (a caller's own prompt, a tokenizer that merges across
    the boundary), so a saved state is never used for a prompt it does not begin."""
    return prefix_token_count(tokenizer, copy_prefix(tokenizer), prompt_ids)


class CopyRun:
    """One copy-mode decode over one file: the program's state (matcher, tokens, stats) and the hooks
    by which it steers the decoder's verify loop (`Steer`: pick, feed, accept; `Drafter`: reset,
    append, propose, feedback). The oracle path feeds a given program through the same state."""

    def __init__(self, lm: LoadedModel, path: str, text: str, instruction: str, monotonic: bool = True,
                 draft: str = DEFAULT_DRAFT, mode: str = "copy", prefill_copies: bool = True,
                 prompt_ids: list[int] | None = None, engine: Engine | None = None,
                 lines: list[str] | None = None, copy_kv: str = "reread", tail: int = DEFAULT_TAIL,
                 prefix: bool = True, banned: frozenset[Copy] = frozenset(), stop_idle: bool = False) -> None:
        """`banned`: copies the program may not use; `stop_idle`: stop once an idle gen span is known (the
        copy after it closes) instead of writing the rest of a program that will be asked again."""
        self.engine = engine if engine is not None else lm.engine
        self.tokenizer = self.engine.tokenizer
        self.prefill_copies = prefill_copies  # False: the ablation where the model sees only the tags
        self.source = Resolver(self.tokenizer, text, lines)
        self.eos = sorted(self.engine.eos)
        self.matcher = ProgramMatcher(self.tokenizer, len(self.source.lines), self.engine.vocab_size, self.eos,
                                      monotonic, banned)
        self.stop_idle = stop_idle
        self.decoder = Decoder(self.engine)
        self.prompt = prompt_ids if prompt_ids is not None else copy_prompt_ids(lm, path, text, instruction)
        self.stats = CopyStats(mode=mode, prompt_tokens=len(self.prompt))
        # the fixed part is kept or loaded, not read (False: read every token, as a check of identity)
        self.prefix = copy_prefix_length(self.tokenizer, self.prompt) if prefix else 0
        self.drafter = CopyDrafter(3, DraftSchedule.parse(draft))
        self.program: list[int] = []
        self.tag_ids: dict[str, list[int]] = {}
        self.max_tokens = 0
        self.fed_extra = False  # the last picked token brought forced tokens or copied lines along
        self.copies: PromptCopies | None = None  # --copy-kv reuse: where copied tokens sit in the prompt
        if copy_kv not in COPY_KV:
            raise EditError(f"unknown --copy-kv {copy_kv!r}; choose one of {', '.join(COPY_KV)}")
        if copy_kv == "reuse":
            if not supports_reuse(self.engine):
                raise EditError(f"--copy-kv reuse is not available on the {type(self.engine).__name__}; "
                                "use --copy-kv reread")
            self.copies = PromptCopies(self.tokenizer, path, text, instruction, self.source.lines, self.prompt, tail)

    @property
    def cache(self):
        """The TorchEngine's KV cache (what tests measure)."""
        return self.engine.cache

    def record(self, token: int) -> None:
        """One token the model wrote (picked or an accepted draft) joins the program."""
        self.matcher.advance(token)
        self.program.append(token)
        self.stats.program_tokens += 1
        if not self.matcher.in_gen():
            self.stats.tag_tokens += 1

    def take(self, token: int, use_forced: bool = True) -> list[int | Reuse]:
        """Consume one model token; return what else joins it in the next forward (copy or forced)."""
        self.record(token)
        extra: list[int] = []
        if use_forced and self.matcher.closed is None and not self.matcher.in_gen():
            forced = self.matcher.forced()
            for t in forced:
                self.matcher.advance(t)
                self.program.append(t)
            self.stats.forced_tokens += len(forced)
            self.stats.program_tokens += len(forced)
            self.stats.tag_tokens += len(forced)
            extra += forced
        if self.matcher.closed is not None:
            copy = self.matcher.closed
            if self.stop_idle and idle_copy(self.matcher.ops(), self.source.lines) is not None:
                raise IdleStop  # before the copy's lines are read: they would serve a program set aside
            self.stats.spans += 1
            self.stats.copied_lines += copy.j - copy.i + 1
            if self.prefill_copies:
                ids = self.source.tokens(copy)
                self.stats.prefilled_tokens += len(ids)
                if self.copies is None:
                    extra += ids
                else:
                    parts = self.copies.parts(copy, ids, self.prompt)
                    self.stats.reused_tokens += sum(len(p.ids) for p in parts if isinstance(p, Reuse))
                    extra += parts
        return extra

    # --- Steer: how the program steers the verify loop ------------------------------------------
    def pick(self, logits: torch.Tensor, best: int) -> int | None:
        return self.matcher.pick(logits, best)

    def feed(self, token: int) -> list[int | Reuse]:
        if self.stats.program_tokens >= self.max_tokens:
            raise ProgramFailed(f"the program exceeded {self.max_tokens} tokens")
        extra = self.take(token)
        self.fed_extra = bool(extra)
        return extra

    def accept(self, token: int) -> None:
        self.record(token)

    # --- Drafter: gen text from the spec drafter, tags from tag_draft ----------------------------
    def reset(self, prompt_ids: list[int], source_start: int = 0) -> None:
        # The prompt shows numbered lines, which break every γ-gram at a line start; the drafter also
        # indexes the plain file, so a gen span that rewrites many lines drafts across them.
        self.drafter.reset(self.source.all_tokens() + prompt_ids)

    def append(self, token: int) -> None:
        self.drafter.append(token)

    def propose(self, limit: int | None = None) -> list[int]:
        if not self.matcher.in_gen():
            return self.tag_draft()
        if self.fed_extra:
            return []
        draft = self.drafter.propose(limit)
        return draft[: self.matcher.validate(draft)]

    def feedback(self, accepted: int, drafted: int) -> None:
        self.drafter.feedback(accepted, drafted)

    def tag_draft(self) -> list[int]:
        """Between ops, the tag the model most likely writes next, drafted like copied text and
        verified in the same forward (so the program is the model's own greedy choice either way):
        `<copy lines="1-` to start, `<gen>` after a copy (consecutive copies would be one), and after
        a gen span the copy of the rest of the file, starting past the lines that span replaced.
        The draft stops before the token that closes a copy tag (see `ProgramMatcher.validate_tag`)."""
        if self.matcher.partial:
            return []
        text, n = self.matcher.text, self.matcher.n
        if not text:
            tag = '<copy lines="1-'
        elif text.endswith(GEN_CLOSE):
            replaced = text[text.rfind(GEN_OPEN) + len(GEN_OPEN):-len(GEN_CLOSE)].count("\n")
            start = self.matcher.last_j + 1 + replaced
            if start > n:
                return []
            tag = f'<copy lines="{start}-{n}"/>'
        else:
            tag = GEN_OPEN
        ids = self.tag_ids.get(tag)
        if ids is None:
            ids = self.tag_ids[tag] = self.tokenizer(tag, add_special_tokens=False)["input_ids"]
        return ids[: self.matcher.validate_tag(ids)]

    # --- runs -------------------------------------------------------------------------------------
    def record_program(self) -> str:
        """The program so far into the stats (its text, ids and output counts); returns its text."""
        s = self.stats
        s.output_tokens = s.program_tokens + s.prefilled_tokens
        s.copied_tokens += s.prefilled_tokens
        program = self.tokenizer.decode(self.program, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        s.program, s.program_ids = program, list(self.program)
        return program

    def finish(self) -> tuple[str, list[Op]]:
        program = self.record_program()
        try:
            ops = parse(program)
            text = self.source.text(ops, monotonic=self.matcher.monotonic)
        except ProgramError as exc:
            raise ProgramFailed(f"the program does not resolve: {exc}") from exc
        return text, ops

    def run_model(self, max_tokens: int, cached: bool = False) -> tuple[str | None, list[Op]]:
        """Let the model write the program under the FSM (`cached`: the engine holds the prompt from the
        ask before this one). With `stop_idle`, a program stopped at its idle span gives no text (None) and
        its ops up to the copy after that span."""
        self.max_tokens = max_tokens
        set_adapter(self.engine, True)  # the span selector writes programs (spec, the fallback, switches it off)
        started = time.perf_counter()
        try:
            self.decoder.run(self.prompt, None, drafter=self, steer=self, stats=self.stats, prefix=self.prefix,
                             cached=cached)
        except IdleStop:
            self.stats.stop_reason = "idle"
            self.stats.decode_seconds = time.perf_counter() - started - self.stats.prefill_seconds
            self.record_program()
            return None, self.matcher.ops()
        if self.stats.stop_reason == "dead_end":
            raise ProgramFailed("the grammar left no legal token")
        if not self.program:
            raise ProgramFailed("the model wrote an empty program")
        return self.finish()

    def run_oracle(self, ops: list[Op]) -> tuple[str, list[Op]]:
        """Feed a given program through the same machinery: FSM, copy prefill, one forward per op."""
        set_adapter(self.engine, True)  # copy mode's runtime as copy mode runs it (the logits go unused)
        self.decoder.run(self.prompt, None, steer=OracleSteer(self, ops), stats=self.stats, prefix=self.prefix)
        if not self.matcher.accepting():
            raise ProgramFailed("the oracle program does not end in an accepting state")
        return self.finish()


class OracleSteer:
    """Teacher forcing: each op of a given program is one forward. Its first token is what the
    loop picks, whatever the logits say; the op's other tokens and its copied lines are fed with it."""

    def __init__(self, run: CopyRun, ops: list[Op]) -> None:
        self.run = run
        self.ops = [(op.render(), text_ids(run.tokenizer, op.render())) for op in ops]

    def pick(self, logits: torch.Tensor, best: int) -> int | None:
        return self.ops[0][1][0] if self.ops else self.run.eos[0]

    def feed(self, token: int) -> list[int | Reuse]:
        text, ids = self.ops.pop(0)
        extra: list[int | Reuse] = []
        for k, t in enumerate(ids):
            if not self.run.matcher.allowed(t):
                raise ProgramFailed(f"the FSM rejects the oracle program at {text!r}")
            extra += ([t] if k else []) + self.run.take(t, use_forced=False)
        return extra

    def accept(self, token: int) -> None:
        raise AssertionError("the oracle drafts nothing")


def run_copy(lm: LoadedModel, path: str, text: str, instruction: str, max_tokens: int,
             monotonic: bool = True, draft: str = DEFAULT_DRAFT,
             prefill_copies: bool = True, prompt_ids: list[int] | None = None,
             lines: list[str] | None = None, copy_kv: str = "reread",
             retries: int = RETRIES) -> tuple[str, CopyStats]:
    """Copy mode for one file; ProgramFailed when the model's program is unusable. `lines`:
    `split_lines(text)`, when the caller has it (`SourceFile.lines`). An idle program is asked again
    (`ask_again`) on the prompt still in the cache."""
    prompt = prompt_ids
    source = Resolver(None, text, lines)
    asked = 0

    def ask(banned: frozenset[Copy], last: bool) -> tuple[str | None, list[Op], CopyStats]:
        nonlocal prompt, asked
        run = CopyRun(lm, path, text, instruction, monotonic, draft, prefill_copies=prefill_copies,
                      prompt_ids=prompt, lines=source.lines, copy_kv=copy_kv, banned=banned, stop_idle=not last)
        cached, asked = asked > 0, asked + 1  # a later ask: the prompt is in the cache
        new_text, ops = run.run_model(max_tokens, cached=cached)
        prompt = run.prompt  # built once: the later asks run on the same prompt
        return new_text, ops, run.stats

    return ask_again(ask, source.lines, retries)


Ask = Callable[[frozenset[Copy], bool], tuple[str | None, list[Op], CopyStats]]


def ask_again(ask: Ask, lines: list[str], retries: int = RETRIES) -> tuple[str, CopyStats]:
    """Ask for a program and ask again while it is idle. `ask(banned copies, last)` gives the program's text,
    ops and stats; unless it is the `last` ask, it may stop at its first idle span (text None, ops up to the
    copy after that span), since that program will be set aside.

    A program with an idle gen span (one that writes its lines as they were: `grammar.program.idle_copy`)
    misread a line number, so the model is asked again, up to `retries` times, with the copy before that
    span banned: its next choice of line under the same rules. The last program stands (an idle one too: it
    is valid); a later ask that fails keeps the one before it (written whole if it had stopped at its idle
    span: the same program, as decoding is deterministic). Local copy mode and the server's copy loop both
    ask this way."""
    banned: frozenset[Copy] = frozenset()
    new_text, ops, stats = ask(banned, retries == 0)
    for k in range(retries):
        idle = idle_copy(ops, lines)
        if idle is None:  # (a program that stopped has an idle span)
            break
        try:
            again_text, again_ops, again = ask(banned | {idle}, k + 1 == retries)
        except ProgramFailed:
            if new_text is None:
                new_text, ops, whole = ask(banned, True)
                whole.follow(stats, again=False)
                stats = whole
            break
        banned |= {idle}
        again.follow(stats)
        new_text, ops, stats = again_text, again_ops, again
    assert new_text is not None  # the last ask, or a whole one, wrote the program to its end
    return new_text, stats


def run_oracle(lm: LoadedModel, path: str, text: str, instruction: str, ops: list[Op],
               prefill_copies: bool = True, copy_kv: str = "reread") -> tuple[str, CopyStats]:
    """The gold program through the copy-mode runtime (the bench's `oracle` mode: copy mode's ceiling)."""
    run = CopyRun(lm, path, text, instruction, monotonic=True, mode="oracle", prefill_copies=prefill_copies,
                  copy_kv=copy_kv)
    new_text, _ = run.run_oracle(ops)
    return new_text, run.stats

