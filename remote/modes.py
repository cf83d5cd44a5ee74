"""rewrite, spec and copy through a server: the same prompts, stop rule, merge and checks as local editing.

rewrite and spec are one greedy completion each, plugged into the local pipeline (`editor.edit.edit_file`)
through its `generate` hook, so focus, the whole-file check and the merge are the local ones. The server
stops at a stop word (the start of a closing fence); the client then cuts the returned tokens exactly where
the local stop rule (`TailStop`) says, token by token, so a server's output is cut where the local engine
stops. spec is the same request: speculation is the server's setting (llama-server `--spec-type ngram-*`,
vLLM `--speculative-config`), so the stats say which ran (llama-server's `/props`, vLLM's `/metrics`).
The server's own API is the client's business (`remote.client`, `remote.vllm`): both answer `complete` in one
shape, so every loop here serves both engines.

copy is a loop driven by the client. Each request writes, under a GBNF grammar (`remote.gbnf`), until the
next copy tag closes; the client appends the copied lines' token ids (exactly those local copy mode feeds)
and continues on the same slot with `cache_prompt` (vLLM: its shared prefix cache, in blocks), so the
server's prefix cache makes each continuation cost its new tokens only. A program sent as one request would
be written without the copied text in its context: a different, weaker program. The finished program is
resolved as local copy mode does, and an unusable one falls back to spec, as local copy mode does.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import get_args

from editllm.editor.config import CopyRequests
from editllm.editor.decode import DecodeStats
from editllm.editor.errors import EditError
from editllm.remote.client import HttpClient, ServerError, ServerInfo
from editllm.remote.gbnf import program_grammar, request_grammar

COPY_REQUESTS = get_args(CopyRequests)  # EditOptions.copy_requests: a request per copy tag, or the program in one
STOP_WORDS = ["\n```", "\n~~~"]  # a closing fence starts so; the client decides where the file really ends


@dataclass
class RemoteStats(DecodeStats):
    """DecodeStats plus what the server ran: its URL, its speculation, how many requests it took."""

    server: str = ""
    speculative: str | None = None  # the server's `speculative.types` (None: plain greedy decoding)
    requests: int = 0
    server_tokens: int = 0  # tokens the server wrote, including any past our stop point


class RemoteEngine:
    """What the local pipeline asks of an engine besides forward passes: tokenizer, vocab width, EOS ids.
    The model runs on the server, so a forward pass here is a bug."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = len(tokenizer)
        names = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>")
        ids = {tokenizer.convert_tokens_to_ids(n) for n in names if n in tokenizer.get_vocab()}
        if tokenizer.eos_token_id is not None:
            ids.add(tokenizer.eos_token_id)
        self.eos = frozenset(ids)
        self.length = 0

    def forward(self, tokens: list[int], keep: int):
        raise AssertionError("a server backend runs no forward pass in this process")

    def truncate(self, n: int) -> None:
        pass

    def reset(self) -> None:
        pass


class RemoteModel:
    """Stands where a `LoadedModel` does (tokenizer, context length, stats fields) for a model served
    elsewhere. `lora`: the server holds the selector's adapter as adapter 0 (`--lora FILE
    --lora-init-without-apply`): copy programs run with it at scale 1, everything else at 0."""

    model = None
    device = "server"
    dtype = "server"
    ready_seconds = None  # the server loaded the model, not this process

    def __init__(self, client: HttpClient, tokenizer, name: str, load_seconds: float = 0.0,
                 lora: bool = False, gguf: str | Path | None = None) -> None:
        """`gguf`: the model file the server runs, where this machine has it (default: the path the server
        reports, when it exists here); it tells which tokens llama.cpp would end on (`banned`)."""
        self.client = client
        self.tokenizer = tokenizer
        self.name = name
        self.load_seconds = load_seconds
        self.lora = lora
        self.adapter = "server lora 0" if lora else None  # the adapter is the server's (--lora FILE)
        self.engine = RemoteEngine(tokenizer)
        self.info: ServerInfo = client.info()
        # only llama-server ends on more tokens than ours; vLLM ends on the model's own EOS ids alone
        ends_more = self.info.kind == "llama-server"
        self.banned = server_only_ends(gguf or self.info.model_path, self.engine.eos) if ends_more else frozenset()
        self._local = threading.local()
        self._slots = itertools.count()
        self._lock = threading.Lock()

    @property
    def context_length(self) -> int:
        return self.info.n_ctx

    @property
    def engine_name(self) -> str:
        """The engine that ran ("llama-server", "vllm"): stats and bench records name it."""
        return self.info.kind

    def slot(self) -> int:
        """This thread's slot: each worker keeps to one, so its continuations find their prefix cached."""
        if not hasattr(self._local, "slot"):
            with self._lock:
                self._local.slot = next(self._slots) % max(1, self.info.slots)
        return self._local.slot

    def scale(self, program: bool) -> float | None:
        """The adapter's scale for a request (None: the server has no adapter; leave the field out)."""
        return (1.0 if program else 0.0) if self.lora else None


def _written(lm: RemoteModel, answer: dict) -> list[int]:
    """The tokens a request wrote, without the end-of-generation token the server stopped on (llama.cpp's
    vocabulary marks more ids as such than the tokenizer names: any special or padding id ends it)."""
    tokens = list(answer.get("tokens", []))
    special = set(lm.tokenizer.all_special_ids) | lm.engine.eos
    if answer.get("stop_type") == "eos" and tokens and (tokens[-1] in special or tokens[-1] >= len(lm.tokenizer)):
        tokens.pop()
    return tokens


def server_only_ends(gguf: str | Path | None, ends: frozenset[int]) -> frozenset[int]:
    """Tokens llama-server ends generation on that our decoders take as text (in Qwen2.5's vocabulary a plain
    token reading `</s>`, and FIM tokens: editor.llamacpp.end_of_generation_ids). Requests ban them, or the
    server could stop where the local engine writes on. Empty where the GGUF is not on this machine."""
    if not gguf or not Path(gguf).is_file():
        return frozenset()
    try:
        from editllm.editor.llamacpp import end_of_generation_ids

        return end_of_generation_ids(gguf) - ends
    except (ImportError, EditError):
        return frozenset()


def _add_timings(stats: RemoteStats, answer: dict) -> None:
    t = answer.get("timings", {})
    stats.prefill_seconds += t.get("prompt_ms", 0.0) / 1000
    stats.decode_seconds += t.get("predicted_ms", 0.0) / 1000
    written, accepted = int(t.get("predicted_n", 0)), int(t.get("draft_n_accepted", 0) or 0)
    stats.forwards += 1 + max(0, written - 1 - accepted)  # the prompt pass, then one step per unverified token
    if t.get("draft_n"):
        stats.copy_attempts += int(t["draft_n"])
        stats.copied_tokens += accepted
    stats.requests += 1
    stats.server_tokens += len(answer.get("tokens", []))


def server_generate(mode: str):
    """The `EditOptions.generate` hook for rewrite and spec: (lm, prompt ids, max new, stop) -> (ids, stats).

    A stop word can end a request early (a fence-like line inside the file): the next request continues
    from what was written, on the same slot, until the local stop rule, EOS or the budget ends it."""

    def generate(lm: RemoteModel, ids: list[int], max_new: int, stop) -> tuple[list[int], RemoteStats]:
        info = lm.info
        stats = RemoteStats(mode=mode, prompt_tokens=len(ids), server=info.url, speculative=info.speculative)
        out: list[int] = []
        while not stats.stop_reason:
            answer = lm.client.complete(ids + out, max_new - len(out), slot=lm.slot(), stop=STOP_WORDS,
                                        lora=lm.scale(False), ban=lm.banned)
            _add_timings(stats, answer)
            tokens = _written(lm, answer)
            for t in tokens:
                if t in lm.engine.eos:
                    stats.stop_reason = "eos"
                    break
                out.append(t)
                if stop is not None and stop(out):
                    stats.stop_reason = "stop"
                    break
                if len(out) >= max_new:
                    stats.stop_reason = "max_new_tokens"
                    break
            if not stats.stop_reason and (answer.get("stop_type") != "word" or not tokens):
                stats.stop_reason = "eos" if answer.get("stop_type") == "eos" else "max_new_tokens"
        stats.output_tokens = len(out)
        return out, stats

    return generate


def remote_options(opts, mode: str):
    """The local EditOptions for a rewrite or spec run through the server."""
    return replace(opts, mode=mode, generate=server_generate(mode))


def edit_remote(lm: RemoteModel, src, instruction: str, opts):
    """One file through the server in `opts.mode`; an `EditResult` as the local pipeline returns it."""
    from editllm.editor.edit import edit_file

    if opts.mode == "copy":
        return edit_copy_remote(lm, src, instruction, opts)
    return edit_file(lm, src, instruction, remote_options(opts, opts.mode))  # stats.speculative: what ran


def edit_copy_remote(lm: RemoteModel, src, instruction: str, opts):
    """Copy mode through the server; an unusable program falls back to spec (the reason kept), as local
    copy mode does. Server errors are not a program's fault: they propagate (the runner retries them)."""
    from editllm.editor.copymode import ask_again
    from editllm.editor.edit import budget, copy_shown, edit_file, finish_copy
    from editllm.grammar.program import Copy, Op, parse
    from editllm.remote.copyloop import ProgramFailed, RemoteCopyStats, copy_parts, fresh_stats

    if opts.copy_requests not in COPY_REQUESTS:
        raise EditError(f"unknown --copy-requests {opts.copy_requests!r}; choose one of {', '.join(COPY_REQUESTS)}")
    if "</gen>" in src.text or "</gen>" in instruction:
        reason = "the file or instruction contains </gen>, which a copy program cannot write"
    else:
        focus, shown, lines = copy_shown(src, instruction, opts)  # focused as local copy mode is
        prompt, resolver, _ = copy_parts(lm, src.path, shown, lines, instruction)
        loop = run_copy_one if opts.copy_requests == "one" else run_copy_loop

        def ask(banned: frozenset[Copy], last: bool) -> tuple[str | None, list[Op], RemoteCopyStats]:
            stats = fresh_stats(lm, prompt)  # each ask's own; ask_again adds them up
            text = loop(lm, prompt, resolver, stats, max_tokens, opts.monotonic, banned, stop_idle=not last)
            return text, parse(stats.program), stats

        try:
            max_tokens = budget(lm, src, len(prompt), opts.max_new_tokens, shown)
            text, stats = ask_again(ask, resolver.lines)  # asks again after an idle gen span, as local copy mode
            return finish_copy(src, text, instruction, stats, focus, opts, lines)
        except ServerError:
            raise
        except (ProgramFailed, EditError) as exc:
            reason = str(exc)
    result = edit_file(lm, src, instruction, remote_options(opts, "spec"))
    result.fallback = reason
    return result


def _count_program_request(stats, answer: dict) -> None:
    """A copy-program request in the stats: its server-side prompt and decode time, and its forwards (the
    prompt pass, then one step per token written)."""
    t = answer.get("timings", {})
    stats.requests += 1
    stats.prefill_seconds += t.get("prompt_ms", 0.0) / 1000
    stats.decode_seconds += t.get("predicted_ms", 0.0) / 1000
    stats.forwards += 1 + max(0, int(t.get("predicted_n", 0)) - 1)


def run_copy_loop(lm: RemoteModel, prompt: list[int], resolver, stats, max_tokens: int,
                  monotonic: bool = True, banned: frozenset = frozenset(), stop_idle: bool = False) -> str | None:
    """Write the program one copy tag per request; return the new text (ProgramFailed when unusable).

    Each answer is replayed through local copy mode's matcher (`grammar.matcher`): where local copy mode
    would have forced a tag's fixed tokens and the model chose others, the answer is cut there, the client
    appends the forced tokens and the next request starts inside the op, so the program's tokens are the
    ones local copy mode writes. `banned`: copies neither the matcher nor the grammar lets the program use (an
    ask again); `stop_idle`: return None once the program has an idle gen span (`CopyRun(stop_idle=True)`)."""
    from editllm.grammar.matcher import ProgramMatcher
    from editllm.grammar.program import ProgramError, idle_copy, parse
    from editllm.remote.copyloop import ProgramFailed

    tok = lm.tokenizer
    n = len(resolver.lines)
    matcher = ProgramMatcher(tok, n, lm.engine.vocab_size, sorted(lm.engine.eos), monotonic, banned)
    seq, program = list(prompt), []
    slot = lm.slot()
    started = time.perf_counter()
    while True:
        room = max_tokens - len(program)
        if room <= 0:
            raise ProgramFailed(f"the program exceeded {max_tokens} tokens")
        after = matcher.last_j if monotonic else 0
        try:
            grammar = request_grammar(n, after, monotonic, matcher.partial, banned)
        except ValueError as exc:  # forced tokens that end elsewhere than at a decision point
            raise ProgramFailed(f"the copy loop cannot continue: {exc}") from exc
        answer = lm.client.complete(seq, room, slot=slot, grammar=grammar, lora=lm.scale(True), ban=lm.banned)
        _count_program_request(stats, answer)
        written, cut, copy = _replay(matcher, _written(lm, answer), stats)
        stats.cuts += cut
        program += written
        seq += written
        stats.program_tokens += len(written)
        if copy is not None:
            if stop_idle and idle_copy(matcher.ops(), resolver.lines) is not None:
                stats.program = matcher.text[: matcher.op_start]  # its finished ops: a request ends at its copy
                stats.program_ids, stats.stop_reason = list(program), "idle"
                return None  # the program will be asked again: its copy's lines need not be sent
            ids = resolver.tokens(copy)
            stats.spans += 1
            stats.copied_lines += copy.j - copy.i + 1
            stats.prefilled_tokens += len(ids)
            seq += ids
        elif not cut:
            if answer.get("stop_type") == "limit" or len(program) >= max_tokens:
                raise ProgramFailed(f"the program exceeded {max_tokens} tokens")
            break  # EOS where the grammar may end: the program is complete
    if not program:
        raise ProgramFailed("the model wrote an empty program")
    stats.output_tokens = stats.program_tokens + stats.prefilled_tokens
    stats.copied_tokens += stats.prefilled_tokens
    stats.program = tok.decode(program, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    stats.program_ids = list(program)
    stats.decode_seconds = max(stats.decode_seconds, time.perf_counter() - started - stats.prefill_seconds)
    try:
        return resolver.text(parse(stats.program), monotonic=monotonic)
    except ProgramError as exc:
        raise ProgramFailed(f"the program does not resolve: {exc}") from exc


def run_copy_one(lm: RemoteModel, prompt: list[int], resolver, stats, max_tokens: int,
                  monotonic: bool = True, banned: frozenset = frozenset(), stop_idle: bool = False) -> str:
    """The whole program in one request (`copy_requests="one"`); return the new text (ProgramFailed when
    unusable). The model writes every tag without the copied lines in its context (the loop's continuations
    carry them), so this is a different, weaker program than the loop's and local copy mode's: one request
    instead of one per copy, for servers where a round trip costs more than the loop saves (`stop_idle` does
    not apply: the program comes whole). The grammar
    (`gbnf.program_grammar`) states the tags and line ranges; the resolver refuses ranges that go back."""
    from editllm.grammar.program import Copy, ProgramError, parse
    from editllm.remote.copyloop import ProgramFailed

    grammar = program_grammar(len(resolver.lines), banned)
    answer = lm.client.complete(prompt, max_tokens, slot=lm.slot(), grammar=grammar, lora=lm.scale(True),
                                ban=lm.banned)
    _count_program_request(stats, answer)
    if answer.get("stop_type") == "limit":
        raise ProgramFailed(f"the program exceeded {max_tokens} tokens")
    program = _written(lm, answer)
    if not program:
        raise ProgramFailed("the model wrote an empty program")
    stats.program_tokens = len(program)
    stats.output_tokens = len(program)
    stats.program = lm.tokenizer.decode(program, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    stats.program_ids = program
    try:
        ops = parse(stats.program)
        text = resolver.text(ops, monotonic=monotonic)
    except ProgramError as exc:
        raise ProgramFailed(f"the program does not resolve: {exc}") from exc
    copies = [op for op in ops if isinstance(op, Copy)]
    stats.spans = len(copies)
    stats.copied_lines = sum(c.j - c.i + 1 for c in copies)
    return text


def _replay(matcher, tokens: list[int], stats):
    """The tokens of one answer as local copy mode would have them, whether the answer was cut, and the copy
    it closed (None if none): each model token is checked and consumed; after it, the tokens the matcher
    forces replace the answer's own where the two part (the rest of the answer is dropped: it followed
    other tokens than local's)."""
    from editllm.remote.copyloop import ProgramFailed

    kept: list[int] = []
    k = 0
    while k < len(tokens):
        token = tokens[k]
        if not matcher.allowed(token):
            raise ProgramFailed(f"the server wrote {matcher.piece(token)!r}, which copy mode's grammar refuses")
        matcher.advance(token)
        kept.append(token)
        k += 1
        forced = matcher.forced() if matcher.closed is None else []
        for f in forced:
            matcher.advance(f)
            kept.append(f)
        stats.forced_tokens += len(forced)
        if matcher.closed is not None:  # the request ends at a copy tag whichever tokens closed it
            return kept, False, matcher.closed
        if forced:
            if tokens[k:k + len(forced)] != forced:
                return kept, True, None
            k += len(forced)
    return kept, False, None
