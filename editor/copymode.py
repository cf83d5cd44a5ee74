"""Copy-as-Decode: the model writes an edit program; each copy is one shared forward pass.

Each step the FSM masks the logits (cheaply: the argmax is checked first). When a token closes a
copy tag, the copied lines' tokens are appended to the KV cache in the same forward as that token,
so the model sees the copied text without spending one step per token. Grammar-forced tokens ride
along the same way. Inside `<gen>` the spec drafter proposes drafts, trimmed to what the FSM accepts
and verified in one forward. The resolver turns the finished program into text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from editllm.editor.decode import Decoder, DecodeStats, eos_ids
from editllm.editor.drafter import DEFAULT_DRAFT, CopyDrafter, DraftSchedule
from editllm.editor.models import LoadedModel
from editllm.editor.prompt import copy_prompt
from editllm.grammar.matcher import ProgramMatcher
from editllm.grammar.program import GEN_CLOSE, GEN_OPEN, Op, ProgramError, parse
from editllm.resolver.resolve import CopySource, resolve_program
from transformers import DynamicCache


class ProgramFailed(Exception):
    """The model's program cannot be used (caps, empty, dead end); the caller falls back to spec."""


@dataclass
class CopyStats(DecodeStats):
    """DecodeStats plus what copy mode spends where."""

    program_tokens: int = 0  # tokens the model wrote (tags and gen text)
    tag_tokens: int = 0
    forced_tokens: int = 0
    spans: int = 0
    copied_lines: int = 0
    prefilled_tokens: int = 0  # copied lines appended to the cache
    program: str = ""


def copy_prompt_ids(lm: LoadedModel, path: str, text: str, instruction: str) -> list[int]:
    return lm.tokenizer(copy_prompt(lm.tokenizer, path, text, instruction), add_special_tokens=False)["input_ids"]


class CopyRun:
    """One copy-mode decode over one file: state shared by the model-driven and the oracle paths."""

    def __init__(self, lm: LoadedModel, path: str, text: str, instruction: str, monotonic: bool = True,
                 draft: str = DEFAULT_DRAFT, mode: str = "copy", prefill_copies: bool = True,
                 prompt_ids: list[int] | None = None) -> None:
        self.lm = lm
        self.prefill_copies = prefill_copies  # False: the ablation where the model sees only the tags
        self.source = CopySource(lm.tokenizer, text)
        self.text = text
        self.eos = sorted(eos_ids(lm.model, lm.tokenizer))
        vocab = int(lm.model.config.vocab_size)
        self.matcher = ProgramMatcher(lm.tokenizer, len(self.source.lines), vocab, self.eos, monotonic)
        self.decoder = Decoder(lm.model, lm.tokenizer)
        self.prompt = prompt_ids if prompt_ids is not None else copy_prompt_ids(lm, path, text, instruction)
        self.stats = CopyStats(mode=mode, prompt_tokens=len(self.prompt))
        self.drafter = CopyDrafter(3, DraftSchedule.parse(draft))
        self.cache = DynamicCache(config=lm.model.config)
        self.program: list[int] = []
        self.tag_ids: dict[str, list[int]] = {}

    def prefill(self):
        start = time.perf_counter()
        logits = self.decoder.forward(self.prompt, self.cache, keep=1)[-1]
        self.stats.forwards = 1
        self.stats.prefill_seconds = time.perf_counter() - start
        # The prompt shows numbered lines, which break every γ-gram at a line start; the drafter also
        # indexes the plain file, so a gen span that rewrites many lines drafts across them.
        self.drafter.reset(self.source.all_tokens() + self.prompt)
        self.started = start
        return logits

    def record(self, token: int) -> None:
        """One token the model wrote (picked or an accepted draft) joins the program."""
        self.matcher.advance(token)
        self.program.append(token)
        self.drafter.append(token)
        self.stats.program_tokens += 1
        if not self.matcher.in_gen():
            self.stats.tag_tokens += 1

    def take(self, token: int, use_forced: bool = True) -> list[int]:
        """Consume one model token; return what else joins it in the next forward (copy or forced)."""
        self.record(token)
        extra: list[int] = []
        if use_forced and self.matcher.closed is None and not self.matcher.in_gen():
            forced = self.matcher.forced()
            for t in forced:
                self.matcher.advance(t)
                self.program.append(t)
                self.drafter.append(t)
            self.stats.forced_tokens += len(forced)
            self.stats.program_tokens += len(forced)
            self.stats.tag_tokens += len(forced)
            extra += forced
        if self.matcher.closed is not None:
            copy = self.matcher.closed
            ids = self.source.tokens(copy)
            if self.prefill_copies:
                for t in ids:
                    self.drafter.append(t)
            self.stats.spans += 1
            self.stats.copied_lines += copy.j - copy.i + 1
            if self.prefill_copies:
                self.stats.prefilled_tokens += len(ids)
                extra += ids
        return extra

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
            ids = self.tag_ids[tag] = self.lm.tokenizer(tag, add_special_tokens=False)["input_ids"]
        return ids[: self.matcher.validate_tag(ids)]

    def finish(self) -> tuple[str, list[Op]]:
        s = self.stats
        s.output_tokens = s.program_tokens + s.prefilled_tokens
        s.copied_tokens += s.prefilled_tokens
        s.decode_seconds = time.perf_counter() - self.started - s.prefill_seconds
        program = self.lm.tokenizer.decode(self.program, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        s.program = program
        try:
            ops = parse(program)
            text = resolve_program(ops, self.text, monotonic=self.matcher.monotonic)
        except ProgramError as exc:
            raise ProgramFailed(f"the program does not resolve: {exc}") from exc
        return text, ops

    def run_model(self, max_tokens: int) -> tuple[str, list[Op]]:
        """Let the model write the program under the FSM."""
        logits = self.prefill()
        while True:
            token = self.matcher.pick(logits)
            if token is None:
                raise ProgramFailed("the grammar left no legal token")
            if token in self.eos:
                self.stats.stop_reason = "eos"
                break
            if self.stats.program_tokens >= max_tokens:
                raise ProgramFailed(f"the program exceeded {max_tokens} tokens")
            feed = [token] + self.take(token)
            draft: list[int] = []
            if self.matcher.in_gen() and len(feed) == 1:
                draft = self.drafter.propose()
                draft = draft[: self.matcher.validate(draft)]
            elif not self.matcher.in_gen():
                draft = self.tag_draft()
            rows = self.decoder.forward(feed + draft, self.cache, keep=len(draft) + 1)
            self.stats.forwards += 1
            accepted = 0
            for k, d in enumerate(draft):
                if self.matcher.pick(rows[k]) != d:
                    break
                self.record(d)
                accepted = k + 1
            if draft:
                self.stats.copy_attempts += 1
                self.stats.accepted_lengths.append(accepted)
                self.stats.copied_tokens += accepted
                self.drafter.feedback(accepted, len(draft))
                if accepted < len(draft):
                    self.cache.crop(-(len(draft) - accepted))
            logits = rows[accepted]
        if not self.program:
            raise ProgramFailed("the model wrote an empty program")
        return self.finish()

    def run_oracle(self, ops: list[Op]) -> tuple[str, list[Op]]:
        """Feed a given program through the same machinery: FSM, copy prefill, one forward per op."""
        self.prefill()
        for op in ops:
            text = op.render()
            ids = self.lm.tokenizer(text, add_special_tokens=False)["input_ids"]
            feed: list[int] = []
            for t in ids:
                if not self.matcher.allowed(t):
                    raise ProgramFailed(f"the FSM rejects the oracle program at {text!r}")
                feed += [t] + self.take(t, use_forced=False)
            self.decoder.forward(feed, self.cache, keep=1)
            self.stats.forwards += 1
        if not self.matcher.accepting():
            raise ProgramFailed("the oracle program does not end in an accepting state")
        self.stats.stop_reason = "eos"
        return self.finish()


def run_copy(lm: LoadedModel, path: str, text: str, instruction: str, max_tokens: int,
             monotonic: bool = True, draft: str = DEFAULT_DRAFT,
             prefill_copies: bool = True, prompt_ids: list[int] | None = None) -> tuple[str, CopyStats]:
    """Copy mode for one file; ProgramFailed when the model's program is unusable."""
    run = CopyRun(lm, path, text, instruction, monotonic, draft, prefill_copies=prefill_copies, prompt_ids=prompt_ids)
    new_text, _ = run.run_model(max_tokens)
    return new_text, run.stats


def run_oracle(lm: LoadedModel, path: str, text: str, instruction: str, ops: list[Op],
               prefill_copies: bool = True) -> tuple[str, CopyStats]:
    """The gold program through the copy-mode runtime (the bench's `oracle` mode: copy mode's ceiling)."""
    run = CopyRun(lm, path, text, instruction, monotonic=True, mode="oracle", prefill_copies=prefill_copies)
    new_text, _ = run.run_oracle(ops)
    return new_text, run.stats

