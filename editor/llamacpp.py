"""The llama.cpp engine: the bundled GGUF mapped as it is, through llama-cpp-python's low-level API.

Why: on a CPU without fast bf16, torch reads ~6 GB of float32 weights for every decoded token
(~470 ms a step on 2 AVX2 cores); llama.cpp's Q4_K_M kernels read ~1 GB (~65 ms), load in about a
second from an mmap, and need no conversion. The decoder above it only needs DESIGN §10's engine:
`forward(ids, keep)` appends tokens to the one sequence and returns the logits of the last `keep`
positions, `truncate(n)` drops the last n cache entries (a rejected draft), `reset()` empties it.

Not the high-level `llama_cpp.Llama`: with `logits_all=True` it keeps an n_ctx × vocab float matrix
(5 GB at 8k). Here only the rows asked for are computed, and they are read as a numpy view of
llama.cpp's own logits buffer (no copy) that stays valid until the next call.

A LoRA adapter (its GGUF form) is loaded once and applied or removed per run (`use_adapter`), like the
torch engine's unmerged peft adapter: copy mode's program writing runs with it, rewrite and spec without.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

import numpy as np
from editllm.editor.errors import EditError
from editllm.editor.prefix import file_identity, load_state, save_state, state_header, state_path
from editllm.editor.signals import uninterrupted

_QUIET = None  # the one log callback, alive as long as the process (llama.cpp keeps a raw pointer to it)


def _silence(ll) -> None:
    """llama.cpp logs every load detail to stderr; stderr belongs to editllm's own messages.

    The callback is process-global in llama.cpp, so it is made once and never freed: a callback owned
    by one engine would be freed with it while llama.cpp still calls it (a segfault when a second
    engine frees its context and logs). It is Python code: a Ctrl-C or SIGTERM handled while it runs
    raises there, and ctypes drops the exception (the run went on and exited 0), so the calls that log
    (load, context, adapter) hold those signals back until they return (`uninterrupted`)."""
    global _QUIET
    if _QUIET is None:

        @ll.llama_log_callback
        def quiet(level, text, user_data):  # noqa: ARG001 - ctypes callback signature
            return None

        _QUIET = quiet
        ll.llama_log_set(_QUIET, ctypes.c_void_p(0))


def load_llama_cpp():
    """llama-cpp-python, loaded without editllm's passive OpenMP default (`editor.waitpolicy`: its threads
    would sleep at every barrier, 1.6× slower decode steps)."""
    from editllm.editor.waitpolicy import llama_defaults

    try:
        with llama_defaults():
            import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EditError("the llama.cpp engine needs llama-cpp-python (pip install llama-cpp-python)") from exc
    return llama_cpp


def end_of_generation_ids(gguf: str | Path) -> frozenset[int]:
    """Every token llama.cpp ends generation on for this GGUF (`llama_vocab_is_eog`), from its vocabulary
    alone (~0.1 s to scan Qwen2.5's 152k tokens). llama.cpp's set is wider than the tokenizer's end tokens:
    for Qwen2.5 it also holds id 128247 (a plain vocabulary token that reads `</s>`) and three FIM tokens.
    LlamaCppEngine ends only on the tokenizer's special ones and writes those as text; llama-server would
    stop on them (remote.modes bans them in its requests)."""
    ll = load_llama_cpp()
    _silence(ll)
    ll.llama_backend_init()
    params = ll.llama_model_default_params()
    params.vocab_only = True
    with uninterrupted():  # its log callback runs Python, where a signal's exception would be lost
        model = ll.llama_model_load_from_file(str(gguf).encode(), params)
    if not model:
        raise EditError(f"{gguf}: llama.cpp could not read this GGUF's vocabulary")
    try:
        vocab = ll.llama_model_get_vocab(model)
        return frozenset(t for t in range(ll.llama_vocab_n_tokens(vocab)) if ll.llama_vocab_is_eog(vocab, t))
    finally:
        ll.llama_model_free(model)


class LlamaCppEngine:
    """One sequence in one llama.cpp context, greedy-decoder friendly."""

    def __init__(self, gguf: str | Path, tokenizer=None, n_ctx: int = 8192, n_batch: int = 512,
                 threads: int | None = None, adapter: str | Path | None = None, sequences: int = 2,
                 batch_invariant: bool = False) -> None:
        """`sequences`: llama.cpp sequences in the context: 0 is the decoder's, 1 the scratch of `forward_reuse`;
        `editor.batched` asks for one per file decoded together plus one holding the fixed prompt prefix.
        `batch_invariant`: kernels whose logits for a token do not depend on its batch (`editor.invariant`;
        slower), chosen once per process."""
        from editllm.editor import invariant

        ll = self.ll = load_llama_cpp()
        _silence(ll)
        ll.llama_backend_init()
        if batch_invariant:
            why = invariant.build_refusal(ll.llama_print_system_info().decode(errors="replace"))
            if why:
                raise EditError(f"--batch-invariant: {why}")
        invariant.choose(batch_invariant)
        self.batch_invariant = batch_invariant
        mparams = ll.llama_model_default_params()
        mparams.use_extra_bufts = not batch_invariant  # repacked weights take another kernel per batch size
        with uninterrupted():  # llama.cpp logs through Python (`_silence`): a signal there would be lost
            self.model = ll.llama_model_load_from_file(str(gguf).encode(), mparams)
        if not self.model:
            raise EditError(f"{gguf}: llama.cpp could not load this GGUF")
        cparams = ll.llama_context_default_params()
        threads = threads or os.cpu_count() or 1
        cparams.n_ctx = n_ctx
        cparams.n_batch = cparams.n_ubatch = n_batch
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.no_perf = True
        if batch_invariant:
            cparams.flash_attn_type = invariant.FLASH_ATTN_DISABLED
        # A second sequence is the scratch space of `forward_reuse`; a unified cache lets its cells be
        # shared into sequence 0 (with separate streams `seq_cp` would copy whole buffers).
        cparams.n_seq_max = max(2, sequences)
        cparams.kv_unified = True
        with uninterrupted():
            self.ctx = ll.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            ll.llama_model_free(self.model)
            raise EditError(f"{gguf}: llama.cpp could not create a context of {n_ctx} tokens")
        self.memory = ll.llama_get_memory(self.ctx)
        vocab = ll.llama_model_get_vocab(self.model)
        self.n_vocab = self.vocab_size = ll.llama_vocab_n_tokens(vocab)
        self.tokenizer = tokenizer  # HF or editor.tokenizer's light one: prompts and drafts are its ids
        candidates = {ll.llama_vocab_eos(vocab), ll.llama_vocab_eot(vocab)}
        if tokenizer is not None:
            candidates |= set(tokenizer.all_special_ids)
        self.eos = frozenset(t for t in candidates if 0 <= t < self.n_vocab and ll.llama_vocab_is_eog(vocab, t))
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.gguf, self.threads = Path(gguf), threads  # what a batched engine over the same model is opened with
        self.batch = ll.llama_batch_init(n_batch, 0, 1)
        self.length = 0  # tokens in the cache
        # what a saved prefix state depends on (editor.prefix); a LoRA sets "adapter" when it is applied
        self.identity = {"engine": "llamacpp", "llama_cpp": getattr(ll, "__version__", ""), "n_ctx": n_ctx,
                         "model": file_identity(gguf), "adapter": None,
                         "n_seq_max": cparams.n_seq_max, "kv_unified": bool(cparams.kv_unified),
                         "batch_invariant": batch_invariant}
        self.held: tuple[int, ...] = ()  # the fixed prefix at the head of the cache (start), kept across runs
        self.adapter_path = adapter
        self.lora = None  # the adapter, owned by the model (llama.cpp frees it with the model)
        self.has_adapter = self.adapter_on = False
        if adapter is not None:
            with uninterrupted():
                self.lora = ll.llama_adapter_lora_init(self.model, str(adapter).encode())
            if not self.lora:
                self.close()
                raise EditError(f"--adapter {adapter}: llama.cpp could not load it as a LoRA of {Path(gguf).name} "
                                "(not a LoRA GGUF, or made for another base model)")
            self.has_adapter = True
        self.prompt_length = 0  # the first forward after a reset: what `forward_reuse` may take entries from
        self._state: ctypes.Array | None = None  # sequence 0 serialized once, at the first reuse after a reset

    def use_adapter(self, on: bool) -> None:
        """Apply or remove the LoRA adapter for the next forwards (a no-op without one). The cache is
        emptied on a switch: its entries were computed under the other weights."""
        on = on and self.has_adapter
        if on == self.adapter_on:
            return
        ll = self.ll
        if on:
            adapters = (ll.llama_adapter_lora_p_ctypes * 1)(self.lora)
            rc = ll.llama_set_adapters_lora(self.ctx, adapters, 1, (ctypes.c_float * 1)(1.0))
        else:
            rc = ll.llama_set_adapters_lora(self.ctx, None, 0, None)
        if rc != 0:
            raise EditError(f"llama.cpp could not {'apply' if on else 'remove'} the adapter (code {rc})")
        self.adapter_on = on
        self.identity["adapter"] = file_identity(self.adapter_path) if on else None  # no state saved with it off
        self.reset()

    def forward(self, ids: list[int], keep: int) -> np.ndarray:
        """Append `ids`; return float32 logits of the last `keep` positions, shape (keep, vocab).

        The rows are a numpy view of llama.cpp's buffer (no copy, and no torch: this path never imports
        it): use them before the next call, as the verify loop does. Long inputs go in
        `n_batch` chunks; `keep` rows must fit in the last chunk (they are a draft plus one token).
        """
        rows = self._decode(ids, list(range(self.length, self.length + len(ids))), keep)
        if not self.prompt_length:
            self.prompt_length = self.length
        return rows

    def _decode(self, ids: list[int], positions: list[int], keep: int) -> np.ndarray:
        """Decode `ids` at `positions` into sequence 0 (llama.cpp masks by position, so tokens may sit
        among cells placed there before); logits of the last `keep`."""
        n = len(ids)
        if not 1 <= keep <= min(n, self.n_batch):
            raise ValueError(f"keep={keep} must be in 1..min({n}, {self.n_batch})")
        if self.length + n > self.n_ctx:
            raise EditError(f"llama.cpp context full ({self.length} + {n} > {self.n_ctx} tokens)")
        ll, batch = self.ll, self.batch
        starts = list(range(0, n, self.n_batch))
        if n - starts[-1] < keep:  # move the last cut so that every kept row is in the last chunk
            starts[-1] = n - keep
        bounds = list(zip(starts, starts[1:] + [n], strict=True))
        try:
            for start, end in bounds:
                batch.n_tokens = end - start
                for k, token in enumerate(ids[start:end]):
                    batch.token[k] = token
                    batch.pos[k] = positions[start + k]
                    batch.n_seq_id[k] = 1
                    batch.seq_id[k][0] = 0
                    batch.logits[k] = start + k >= n - keep
                rc = ll.llama_decode(self.ctx, batch)
                if rc != 0:
                    raise EditError(f"llama.cpp decode failed (code {rc})")
                self.length += end - start
        except BaseException:  # a failed or interrupted call: the cells may not match `length`; start over
            self.reset()
            raise
        ptr = ll.llama_get_logits(self.ctx)
        return np.ctypeslib.as_array(ptr, shape=(keep, self.n_vocab))

    def forward_reuse(self, parts: list, keep: int) -> np.ndarray:
        """`forward` where a `Reuse` part takes its cells from the prompt (`engine.Reuse`); rows of the
        last `keep` parts (computed tokens).

        llama.cpp cannot copy a range of cells within one sequence (`seq_cp` shares cells, and moving
        them with `seq_add` would move the prompt's too). So the prompt's sequence is serialized once
        (`llama_state_seq_get_data`) and, per call, loaded into the scratch sequence 1, cut to the
        reused ranges and shifted there (`seq_add`: the RoPE pass runs at the next decode); each range
        is shared into sequence 0 (`seq_cp`) when its turn comes. llama.cpp wants a batch's positions
        consecutive and right after the sequence's last cell, so the computed tokens between two
        reused ranges decode on their own: a call costs one decode per group of computed tokens."""
        from editllm.editor.engine import Reuse

        ll, mem = self.ll, self.memory
        groups: list[tuple[list[int], tuple[int, int, int] | None]] = [([], None)]  # (computed ids, next reuse)
        spans: list[tuple[int, int, int]] = []  # (src, n, dst)
        pos = self.length
        for part in parts:
            if isinstance(part, Reuse):
                if part.src + len(part.ids) > self.prompt_length:
                    raise ValueError("a Reuse must take its entries from the prompt")
                span = (part.src, len(part.ids), pos)
                spans.append(span)
                groups[-1] = (groups[-1][0], span)
                groups.append(([], None))
                pos += len(part.ids)
            else:
                groups[-1][0].append(part)
                pos += 1
        if not 1 <= keep <= len(groups[-1][0]):
            raise ValueError(f"keep={keep}: the rows must be computed tokens after the last reused range")
        if spans:
            if self._state is None:
                size = ll.llama_state_seq_get_size(self.ctx, 0)
                self._state = (ctypes.c_uint8 * size)()
                ll.llama_state_seq_get_data(self.ctx, self._state, size, 0)
            if ll.llama_state_seq_set_data(self.ctx, self._state, len(self._state), 1) == 0:
                raise EditError("llama.cpp could not load the prompt's cache into the scratch sequence")
            ll.llama_memory_seq_rm(mem, 1, self.prompt_length, -1)
            for src, n, dst in spans:  # dst >= prompt length: a moved range never meets an unmoved one
                ll.llama_memory_seq_add(mem, 1, src, src + n, dst - src)
            ll.llama_memory_seq_rm(mem, 1, 0, self.prompt_length)
        rows = None
        for ids, span in groups:
            if ids:
                rows = self._decode(ids, list(range(self.length, self.length + len(ids))),
                                    keep if span is None else 1)
            if span is not None:
                _, n, dst = span
                ll.llama_memory_seq_cp(mem, 1, 0, dst, dst + n)
                self.length += n
        if spans:
            ll.llama_memory_seq_rm(mem, 1, -1, -1)
        return rows

    def decode_seqs(self, requests: list[tuple[int, list[int], int, int]]) -> list[np.ndarray]:
        """Several sequences' tokens in one batch (`editor.batched`: files decoded together). A request is
        (sequence, ids, position of its first id, keep); the answer is each one's float32 logits of its last
        `keep` ids, copied out of llama.cpp's buffer: another file's thread runs the next decode, which would
        overwrite a view. More than `n_batch` tokens go in consecutive chunks, each sequence's in order."""
        ll, batch = self.ll, self.batch
        flat = []  # (request, sequence, token, position, logits wanted)
        for r, (seq, ids, pos, keep) in enumerate(requests):
            if not 1 <= keep <= len(ids):
                raise ValueError(f"keep={keep} must be in 1..{len(ids)}")
            flat += [(r, seq, t, pos + k, k >= len(ids) - keep) for k, t in enumerate(ids)]
        parts: list[list[np.ndarray]] = [[] for _ in requests]
        for start in range(0, len(flat), self.n_batch):
            chunk = flat[start:start + self.n_batch]
            batch.n_tokens = len(chunk)
            owners = []  # the request of each logits row, in batch order
            for k, (r, seq, token, pos, want) in enumerate(chunk):
                batch.token[k], batch.pos[k], batch.n_seq_id[k] = token, pos, 1
                batch.seq_id[k][0] = seq
                batch.logits[k] = want
                if want:
                    owners.append(r)
            rc = ll.llama_decode(self.ctx, batch)
            if rc == 1:
                raise EditError(f"llama.cpp context full ({self.n_ctx} tokens shared by the files decoded together)")
            if rc != 0:
                raise EditError(f"llama.cpp decode failed (code {rc})")
            if owners:
                rows = np.ctypeslib.as_array(ll.llama_get_logits(self.ctx), shape=(len(owners), self.n_vocab))
                first = 0
                for k in range(1, len(owners) + 1):  # a request's rows are consecutive
                    if k == len(owners) or owners[k] != owners[first]:
                        parts[owners[first]].append(rows[first:k].copy())
                        first = k
        return [p[0] if len(p) == 1 else np.concatenate(p) for p in parts]

    def seq_keep(self, seq: int, n: int) -> None:
        """Keep the first `n` cache entries of sequence `seq` (0: empty it)."""
        self.ll.llama_memory_seq_rm(self.memory, seq, n, -1)

    def seq_share(self, src: int, dst: int, n: int) -> None:
        """Let sequence `dst` see the first `n` entries of `src` (a unified cache shares the cells, no copy)."""
        self.ll.llama_memory_seq_cp(self.memory, src, dst, 0, n)

    def seq_state(self, seq: int) -> bytes:
        """Sequence `seq`'s cache entries, serialized (what `editor.prefix` saves)."""
        size = self.ll.llama_state_seq_get_size(self.ctx, seq)
        buf = (ctypes.c_uint8 * size)()
        written = self.ll.llama_state_seq_get_data(self.ctx, buf, size, seq)  # before the bytes are taken
        return bytes(buf)[:written]

    def load_seq_state(self, seq: int, data: bytes, n: int) -> bool:
        """Load a serialized sequence into `seq`; True when it holds exactly `n` entries after it."""
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if (self.ll.llama_state_seq_set_data(self.ctx, buf, len(data), seq) == len(data)
                and self.ll.llama_memory_seq_pos_max(self.memory, seq) == n - 1):
            return True
        self.seq_keep(seq, 0)
        return False

    def truncate(self, n: int) -> None:
        """Drop the last `n` cache entries (the rejected part of a draft)."""
        if n <= 0:
            return
        self.ll.llama_memory_seq_rm(self.memory, 0, self.length - n, -1)
        self.length -= n
        if self.length < len(self.held):
            self.held = ()

    def reset(self) -> None:
        """Empty the cache for the next request."""
        self.ll.llama_memory_clear(self.memory, True)
        self.length = 0
        self.held = ()
        self.prompt_length = 0
        self._state = None

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """Begin a sequence whose first tokens are the fixed `prefix_ids`: the cache then holds them.

        Kept from the last run ("memory": the cells after them are dropped), else loaded from the
        state saved in the cache dir ("disk"), else read and saved for the next process ("read").
        Returns (tokens of the prefix now in the cache, where they came from). A state that does not
        match or does not load is ignored and rebuilt (editor.prefix)."""
        ids = tuple(prefix_ids)
        if ids and self.held == ids and self.length >= len(ids):
            self.truncate(self.length - len(ids))
            self.prompt_length, self._state = 0, None  # the next forward completes this request's prompt
            return len(ids), "memory"
        self.reset()
        if not ids or len(ids) >= self.n_ctx:
            return 0, ""
        source = self.load_prefix(0, ids)
        self.length, self.held = len(ids), ids  # the next forward reads the rest (forward_reuse's source)
        return len(ids), source

    def load_prefix(self, seq: int, ids: tuple[int, ...]) -> str:
        """Put the fixed prefix `ids` into the empty sequence `seq`: from the state saved in the cache dir
        ("disk"), else decoded and saved for the next process ("read"). A state that does not match or does
        not load is ignored and rebuilt (editor.prefix)."""
        header = state_header(self.identity, ids)
        path = state_path(header)
        data = load_state(path, header)
        if data is not None and self.load_seq_state(seq, data, len(ids)):
            return "disk"
        self.decode_seqs([(seq, list(ids), 0, 1)])
        with contextlib.suppress(OSError):  # a read-only cache dir costs speed, not correctness
            save_state(path, header, self.seq_state(seq))
        return "read"

    def close(self) -> None:
        if getattr(self, "ctx", None):
            self.ll.llama_batch_free(self.batch)
            self.ll.llama_free(self.ctx)
            self.ll.llama_model_free(self.model)
            self.ctx = None

    def __del__(self) -> None:  # the context owns hundreds of MB of cache
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
