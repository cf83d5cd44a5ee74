"""Several files decoded together: one cache of many sequences, a sequence per file, their forwards in one batch.

Why: on a CPU a decode step reads every weight once however many tokens ride in it, so the steps of four
files in one batch cost far less than four steps (llama-batched-bench, 1.5B Q4_K_M, 2 cores: 1.48× the
tokens/s at 4 sequences over 1); on a GPU a forward of one token leaves nearly all of the chip idle, so the
gain is far larger there. `--jobs N` with the local llama.cpp engine, or the static engine (`editor.static`,
CUDA's default), edits N files at once this way.

How: each file runs the ordinary pipeline (`editor.edit.edit_file`: prompt, the one verify loop, stop rule,
checks) in a thread of its own, on a `RowEngine`, the engine interface over one sequence. Its `forward`
hands its tokens to `Rows` and waits; when every file in flight is waiting, the last one to arrive decodes
them all in one batch (`LlamaCppEngine.decode_seqs`, `StaticEngine.decode_seqs`) and wakes the others. So nothing of the
modes, the drafts or the stop rules changes for batching; a file that finishes or fails leaves the batch and
the others go on without it. The fixed prompt prefix is read once into a sequence of its own and shared
into each file's (a unified cache shares the cells, nothing is copied).

What comes out: a file's tokens are the ones it gets alone on a model without near-ties (the tests' tiny
model). On the bundled model the other files in a batch change the kernels' rounding, as a draft does in
spec mode, so a near-tie can flip: `benchmarks/throughput.py --local` counts the files that came out the
same as one at a time (34 of 40 rewrites here). What it gains depends on the machine: on 2 compute-bound
cores little or nothing (1.04× rewrite, 0.93× spec, `benchmarks/results/cpu-1.5b-local-jobs40/`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from editllm.editor.errors import EditError

PREFIXES = 2  # fixed prompt prefixes kept at once (copy mode's and its spec fallback's)
PREFIX_ROOM = 1024  # the most tokens a kept prefix may have (the fixed parts are ~70-300); longer ones are read


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass
class _Request:
    """One file's forward, waiting for the batch it will ride in."""

    seq: int
    ids: list[int]
    pos: int
    keep: int
    rows: object = None
    error: BaseException | None = None
    # held until the answer is in: each file waits on its own lock, so a batch wakes each file once, and no file
    # wakes to find its answer missing or queues behind the others for a shared lock to check
    ready: threading.Lock = field(default_factory=_held_lock)


@dataclass
class BatchStats:
    """How full the batches were: requests ÷ batches is the mean number of files per decode."""

    batches: int = 0
    requests: int = 0
    tokens: int = 0
    files: int = 0
    per_batch: dict[int, int] = field(default_factory=dict)  # files in a batch -> how many batches


class Rows:
    """`size` sequences of one engine's cache (`engine`, opened with `size + PREFIXES` sequences), each
    lent to one file at a time (`row`), plus the sequences holding the fixed prompt prefixes."""

    def __init__(self, engine, size: int, row_ctx: int, one=None) -> None:
        """`one`: the one-file engine of the same model, whose measured costs the draft schedule uses."""
        self.engine = engine
        self.size = size
        self.row_ctx = row_ctx  # the most one file may hold: its budget (`LoadedModel.context_length`)
        self.one = one
        self._costs = None
        self._costs_lock = threading.Lock()
        self.lock = threading.Lock()  # the rows, the pending requests and the engine: one thread at a time
        self.free = list(range(size - 1, -1, -1))
        self.active = 0
        self.pending: list[_Request] = []
        # (prefix ids, adapter on) -> the sequence holding them (LRU): entries differ with the adapter's state
        self.prefixes: OrderedDict[tuple[tuple[int, ...], bool], int] = OrderedDict()
        self.stats = BatchStats()

    @contextlib.contextmanager
    def row(self) -> Iterator[RowEngine]:
        """A sequence for one file, emptied and given back when the file is done (or failed)."""
        with self.lock:
            if not self.free:
                raise RuntimeError(f"more than {self.size} files in flight on {self.size} rows")
            seq = self.free.pop()
            self.active += 1
            self.stats.files += 1
        try:
            yield RowEngine(self, seq)
        finally:
            with self.lock:
                self.engine.seq_keep(seq, 0)
                self.adapter(seq, False)
                self.free.append(seq)
                self.active -= 1
                self._run_if_ready()  # the others may all be waiting for this one

    def forward(self, seq: int, ids: list[int], pos: int, keep: int):
        """Decode `ids` into sequence `seq` from position `pos` with the other files' waiting forwards; the
        logits of the last `keep` (copied: the next batch overwrites llama.cpp's buffer)."""
        req = _Request(seq, ids, pos, keep)
        with self.lock:
            self.pending.append(req)
            self._run_if_ready()
        req.ready.acquire()  # at once when this file's forward completed the batch
        if isinstance(req.error, EditError):
            raise EditError(str(req.error)) from req.error  # each file's own error object: threads raise it
        if req.error is not None:
            raise RuntimeError(f"batched decode failed: {req.error}") from req.error
        return req.rows

    def _run_if_ready(self) -> None:
        """With the lock held: when every file in flight waits on a forward, decode them all at once."""
        if not self.pending or len(self.pending) < self.active:
            return
        reqs, self.pending = self.pending, []
        try:
            answers = self.engine.decode_seqs([(r.seq, r.ids, r.pos, r.keep) for r in reqs])
        except Exception as exc:  # noqa: BLE001 - handed to every file of the batch, raised in its thread
            for r in reqs:
                r.error = exc
        else:
            for r, rows in zip(reqs, answers, strict=True):
                r.rows = rows
        s = self.stats
        s.batches += 1
        s.requests += len(reqs)
        s.tokens += sum(len(r.ids) for r in reqs)
        s.per_batch[len(reqs)] = s.per_batch.get(len(reqs), 0) + 1
        for r in reqs:
            r.ready.release()

    def costs(self):
        """The draft schedule's costs (`editor.costs`), of the one-file engine: measured there once (or loaded),
        not on a row, whose forwards wait for the other files."""
        with self._costs_lock:
            if self._costs is None:
                from editllm.editor.costs import engine_costs

                self._costs = engine_costs(self.one if self.one is not None else self.engine)
            return self._costs

    def adapter(self, seq: int, on: bool) -> bool:
        """Run sequence `seq` with the adapter on or off, where the engine switches it per sequence (the static
        engine; `refuse_rows` keeps an adapter off the others); whether that switched it."""
        switch = getattr(self.engine, "seq_adapter", None)
        return bool(switch(seq, on)) if switch is not None else False

    def adapter_of(self, seq: int) -> bool:
        """Whether sequence `seq` runs with the adapter (never, on an engine that switches it for all)."""
        flags = getattr(self.engine, "adapter_seqs", None)
        return bool(flags[seq]) if flags is not None else False

    def keep(self, seq: int, n: int) -> None:
        """Keep the first `n` cache entries of sequence `seq` (a row's truncate and reset)."""
        with self.lock:
            self.engine.seq_keep(seq, n)

    def share_prefix(self, seq: int, ids: tuple[int, ...]) -> str:
        """Put the fixed prefix `ids` at the head of sequence `seq` (emptied first); where it came from:
        "memory" (another file read it), "disk" (a saved state) or "read" (decoded now, and saved). The
        lock is held throughout, so no batch runs while a prefix is read."""
        with self.lock:
            source = "memory"
            key = (ids, self.adapter_of(seq))
            if key in self.prefixes:
                self.prefixes.move_to_end(key)
            else:
                source = self._load_prefix(key)
            self.engine.seq_keep(seq, 0)
            self.engine.seq_share(self.prefixes[key], seq, len(ids))
            return source

    def _load_prefix(self, key: tuple[tuple[int, ...], bool]) -> str:
        """Bring a new prefix into a holding sequence (the least recently used one when all are taken), read
        with the adapter as the row that asks for it runs."""
        if len(self.prefixes) < PREFIXES:
            holder = self.size + len(self.prefixes)
        else:
            _, holder = self.prefixes.popitem(last=False)
        ids, adapter = key
        self.adapter(holder, adapter)
        self.engine.seq_keep(holder, 0)
        source = self.engine.load_prefix(holder, ids)
        self.prefixes[key] = holder
        return source

    def close(self) -> None:
        self.engine.close()


class RowEngine:
    """The engine interface (DESIGN §10: forward, truncate, reset, start) over one sequence of `Rows`."""

    def __init__(self, rows: Rows, seq: int) -> None:
        base = rows.engine
        self.rows, self.seq = rows, seq
        self.tokenizer, self.eos = base.tokenizer, base.eos
        self.vocab_size = self.n_vocab = base.n_vocab
        self.n_ctx = rows.row_ctx
        self.length = 0

    @property
    def _costs(self):
        """What `editor.costs.engine_costs` reads before it would time this engine: the one-file engine's."""
        return self.rows.costs()

    def forward(self, ids: list[int], keep: int):
        if self.length + len(ids) > self.n_ctx:
            raise EditError(f"context full ({self.length} + {len(ids)} > {self.n_ctx} tokens)")
        rows = self.rows.forward(self.seq, list(ids), self.length, keep)
        self.length += len(ids)
        return rows

    def truncate(self, n: int) -> None:
        if n > 0:
            self.length -= n
            self.rows.keep(self.seq, self.length)

    def use_adapter(self, on: bool) -> None:
        """The adapter on or off for this row (the static engine switches it per sequence); a switch empties it."""
        if self.rows.adapter(self.seq, on):
            self.reset()

    def reset(self) -> None:
        self.length = 0
        self.rows.keep(self.seq, 0)

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """Begin with the fixed `prefix_ids` in the cache (`LlamaCppEngine.start`'s contract)."""
        ids = tuple(prefix_ids)
        if not ids or len(ids) > PREFIX_ROOM or len(ids) >= self.n_ctx:
            self.reset()
            return 0, ""
        source = self.rows.share_prefix(self.seq, ids)
        self.length = len(ids)
        return len(ids), source


def open_rows(lm, size: int) -> Rows:
    """`size` rows over the model `lm` runs. On the llama.cpp engine: a second context on the same GGUF
    (mapped once by the OS), each row with the one-file engine's context length, and room for the kept
    prefixes (a row's own cells begin after its shared prefix, so `size` rows never fill more). On the
    static engine (a GPU): a second static cache over the same weights, a sequence per row and prefix."""
    one = lm.engine
    if lm.engine_name == "static":
        room = room_for_rows(lm)
        if room is not None and size > room:
            raise EditError(f"{size} files at once need {size + PREFIXES} cache sequences of {one.n_ctx} tokens; "
                            f"the GPU's free memory holds {room + PREFIXES}: lower --jobs")
        return Rows(one.with_seqs(size + PREFIXES), size, one.n_ctx, one)
    from editllm.editor.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(one.gguf, one.tokenizer, n_ctx=one.n_ctx * size + PREFIX_ROOM * PREFIXES,
                            n_batch=one.n_batch, threads=one.threads, sequences=size + PREFIXES,
                            batch_invariant=one.batch_invariant)
    return Rows(engine, size, one.n_ctx, one)


def room_for_rows(lm) -> int | None:
    """How many rows the static engine's cache can have in the GPU's free memory beside the kept prefixes (None:
    no limit known, on a CPU)."""
    from editllm.editor.static import fitting_seqs

    room = fitting_seqs(lm.model, lm.engine.n_ctx)
    return None if room is None else room - PREFIXES


def row_model(lm, engine: RowEngine):
    """`lm` as one file of a batch sees it: the same model, this row for its engine."""
    return replace(lm, _engine=engine)


def refuse_rows(lm, opts) -> str | None:
    """Why these files cannot be decoded together here (None: they can)."""
    if lm.engine_name not in ("llamacpp", "static"):
        return f"the {lm.engine_name} engine decodes one file at a time (batching is llama.cpp's and static's)"
    if lm.adapter is not None and lm.engine_name != "static":
        return "an adapter is switched per file, and on llama.cpp it applies to the whole batch"
    if opts.copy_kv != "reread":
        return "--copy-kv reuse needs a sequence of its own"
    return None
