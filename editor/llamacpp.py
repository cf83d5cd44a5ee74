"""The llama.cpp engine: the bundled GGUF mapped as it is, through llama-cpp-python's low-level API.

Why: on a CPU without fast bf16, torch reads ~6 GB of float32 weights for every decoded token
(~470 ms a step on 2 AVX2 cores); llama.cpp's Q4_K_M kernels read ~1 GB (~65 ms), load in about a
second from an mmap, and need no conversion. The decoder above it only needs DESIGN §10's engine:
`forward(ids, keep)` appends tokens to the one sequence and returns the logits of the last `keep`
positions, `truncate(n)` drops the last n cache entries (a rejected draft), `reset()` empties it.

Not the high-level `llama_cpp.Llama`: with `logits_all=True` it keeps an n_ctx × vocab float matrix
(5 GB at 8k). Here only the rows asked for are computed, and they are read as a numpy view of
llama.cpp's own logits buffer (no copy) that stays valid until the next call.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np
import torch
from editllm.editor.errors import EditError

_QUIET = None  # the one log callback, alive as long as the process (llama.cpp keeps a raw pointer to it)


def _silence(ll) -> None:
    """llama.cpp logs every load detail to stderr; stderr belongs to editllm's own messages.

    The callback is process-global in llama.cpp, so it is made once and never freed: a callback owned
    by one engine would be freed with it while llama.cpp still calls it (a segfault when a second
    engine frees its context and logs)."""
    global _QUIET
    if _QUIET is None:

        @ll.llama_log_callback
        def quiet(level, text, user_data):  # noqa: ARG001 - ctypes callback signature
            return None

        _QUIET = quiet
        ll.llama_log_set(_QUIET, ctypes.c_void_p(0))


class LlamaCppEngine:
    """One sequence in one llama.cpp context, greedy-decoder friendly."""

    def __init__(self, gguf: str | Path, tokenizer=None, n_ctx: int = 8192, n_batch: int = 512,
                 threads: int | None = None) -> None:
        try:
            import llama_cpp as ll
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EditError("the llama.cpp engine needs llama-cpp-python (pip install llama-cpp-python)") from exc
        self.ll = ll
        _silence(ll)
        ll.llama_backend_init()
        mparams = ll.llama_model_default_params()
        self.model = ll.llama_model_load_from_file(str(gguf).encode(), mparams)
        if not self.model:
            raise EditError(f"{gguf}: llama.cpp could not load this GGUF")
        cparams = ll.llama_context_default_params()
        threads = threads or os.cpu_count() or 1
        cparams.n_ctx = n_ctx
        cparams.n_batch = cparams.n_ubatch = n_batch
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.no_perf = True
        # A second sequence is the scratch space of `forward_reuse`; a unified cache lets its cells be
        # shared into sequence 0 (with separate streams `seq_cp` would copy whole buffers).
        cparams.n_seq_max = 2
        cparams.kv_unified = True
        self.ctx = ll.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            ll.llama_model_free(self.model)
            raise EditError(f"{gguf}: llama.cpp could not create a context of {n_ctx} tokens")
        self.memory = ll.llama_get_memory(self.ctx)
        vocab = ll.llama_model_get_vocab(self.model)
        self.n_vocab = self.vocab_size = ll.llama_vocab_n_tokens(vocab)
        self.tokenizer = tokenizer  # the HF tokenizer of the same model: prompts and drafts are its ids
        candidates = {ll.llama_vocab_eos(vocab), ll.llama_vocab_eot(vocab)}
        if tokenizer is not None:
            candidates |= set(tokenizer.all_special_ids)
        self.eos = frozenset(t for t in candidates if 0 <= t < self.n_vocab and ll.llama_vocab_is_eog(vocab, t))
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.batch = ll.llama_batch_init(n_batch, 0, 1)
        self.length = 0  # tokens in the cache
        self.prompt_length = 0  # the first forward after a reset: what `forward_reuse` may take entries from
        self._state: ctypes.Array | None = None  # sequence 0 serialized once, at the first reuse after a reset

    def forward(self, ids: list[int], keep: int) -> torch.Tensor:
        """Append `ids`; return float32 logits of the last `keep` positions, shape (keep, vocab).

        The rows are a view of llama.cpp's buffer (`torch.from_numpy`, no copy): use them before the
        next call, as the verify loop does. Long inputs go in
        `n_batch` chunks; `keep` rows must fit in the last chunk (they are a draft plus one token).
        """
        rows = self._decode(ids, list(range(self.length, self.length + len(ids))), keep)
        if not self.prompt_length:
            self.prompt_length = self.length
        return rows

    def _decode(self, ids: list[int], positions: list[int], keep: int) -> torch.Tensor:
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
        ptr = ll.llama_get_logits(self.ctx)
        return torch.from_numpy(np.ctypeslib.as_array(ptr, shape=(keep, self.n_vocab)))

    def forward_reuse(self, parts: list, keep: int) -> torch.Tensor:
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

    def truncate(self, n: int) -> None:
        """Drop the last `n` cache entries (the rejected part of a draft)."""
        if n <= 0:
            return
        self.ll.llama_memory_seq_rm(self.memory, 0, self.length - n, -1)
        self.length -= n

    def reset(self) -> None:
        """Empty the cache for the next request."""
        self.ll.llama_memory_clear(self.memory, True)
        self.length = 0
        self.prompt_length = 0
        self._state = None

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
