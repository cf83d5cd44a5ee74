"""The GPU engine: gpt-fast-style decoding over a transformers model's weights, with a preallocated KV cache.

Why: `TorchEngine` runs transformers' forward with a `DynamicCache`. On a GPU that forward is hundreds of
small kernels launched from Python (a few ms a step for the 1.5B, more than the step's arithmetic), and its
cache grows by concatenation. Here, as in gpt-fast:
- the cache is allocated once: `seqs` sequences of `n_ctx` entries per layer, so a sequence's length is an
  integer, a truncate costs nothing and several files' sequences live side by side;
- one forward takes several sequences at once (`decode_seqs`: each its own tokens at its own positions,
  padded to the longest), which is how `editor.batched` decodes many files in one batch;
- on CUDA each padded shape's forward is captured once as a CUDA graph (on its second use: a shape used
  once runs eagerly and costs no capture) and replayed: the padded shapes are
  powers of two (sequences, tokens) and a context window of 256·2^k entries, so a handful of
  graphs serve a whole run. Forwards longer than `GRAPH_TOKENS` (a long prompt) run eagerly: their kernels
  are big enough that launching them is not what costs.
The logits stay on the device in the model's dtype (the decoder takes the argmax there and copies back only
token ids; copy mode's grammar mask is applied there too). The LM head runs outside the graph, on the kept
rows only, so a graph holds hidden states, not vocabulary-wide rows.

The model's own modules do the per-token work (norms, projections, MLP, rotary tables): the engine owns the
cache, the attention over it and the batching. A peft LoRA adapter stays unmerged, as in `TorchEngine`, but is
switched per sequence: peft's own switch is left off (the modules compute the base model) and the engine adds
each projection's LoRA term on the rows whose sequence has it on. So in one batch a file writing its copy
program (adapter on) and another in rewrite or spec mode, or in copy mode's fallback (off), ride together,
and the lossless modes still run the base model exactly.

On a CPU it runs eagerly (`graphs=False`), which the tests use; `graphs="emulate"` runs the padded-shape
path without capturing, so the tests check its buffers and padding too. Qwen2 and Llama-shaped models only
(no sliding window, no per-head norms); others use `--engine torch`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from editllm.editor.engine import eos_ids, rotate_half, start_in_memory
from editllm.editor.errors import EditError

if TYPE_CHECKING:
    import torch

ARCHITECTURES = ("qwen2", "llama")  # the layer shape this forward reproduces
ROPE_TYPES = ("default", "linear", "llama3", "yarn")  # position tables fixed at load: a graph may hold them
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GRAPH_TOKENS = 512  # forwards of more tokens than this per sequence run eagerly
# Padded tokens in one forward: a batch of long prompts is split (rows are independent, so exactly),
# since the attention's mask and scores grow with tokens × window (32 prompts of 3,000 tokens: gigabytes).
BATCH_TOKENS = 8192
GRAPH_BATCH = 4096  # padded tokens (sequences × tokens) of the largest captured forward; larger run eagerly
MIN_WINDOW = 256  # the smallest context window a graph attends over (then 512, 1024, ...)
# Padding tokens that holes in a batch (sequences without a request) may add to read the cache in place rather
# than gather it: a decode step's holes cost next to nothing, a long draft's would cost more compute than the
# gather saves (unmeasured on a GPU: a guess to revisit with the lease's throughput run).
HOLE_TOKENS = 64
STATIC_CONTEXT = 8192  # cache entries per sequence by default: the llama.cpp engine's context


def supported(model) -> str | None:
    """Why this model cannot run on the static engine (None: it can)."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    if kind not in ARCHITECTURES:
        return f"the static engine runs {', '.join(ARCHITECTURES)} models, not {kind}"
    if getattr(config, "use_sliding_window", False):
        return "the static engine has no sliding-window attention"
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    rope = getattr(getattr(decoder, "rotary_emb", None), "rope_type", "default")
    if rope not in ROPE_TYPES:  # "dynamic" rescales from the host as positions grow: no fixed graph
        return f"the static engine runs RoPE of types {', '.join(ROPE_TYPES)}, not {rope}"
    return None


def unsupported_adapter(model) -> str | None:
    """Why the static engine cannot apply this model's peft adapter per sequence (None: it can): it adds plain
    LoRA terms to the attention and MLP projections, and nothing else (no DoRA, no LoRA bias, embeddings or
    head)."""
    for name, module in model.named_modules():
        if not hasattr(module, "lora_A") or not module.lora_A:
            continue
        if name.rsplit(".", 1)[-1] not in PROJECTIONS:
            return f"its adapter adapts {name.rsplit('.', 1)[-1]}"
        if any(getattr(module, "use_dora", {}).values()) or any(getattr(module, "lora_bias", {}).values()):
            return "its adapter is DoRA or has a LoRA bias"
    return None


def head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def cache_bytes(model, seqs: int, n_ctx: int = STATIC_CONTEXT) -> int:
    """The static cache's size for `seqs` sequences: what `editor.batched` checks before opening rows."""
    config = model.config
    per_entry = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim(config)
    return seqs * (n_ctx + 1) * per_entry * next(model.parameters()).element_size()


def fitting_seqs(model, n_ctx: int = STATIC_CONTEXT, share: float = 0.8) -> int | None:
    """How many sequences of cache fit in `share` of the GPU's free memory now (None on a CPU: no limit)."""
    import torch

    device = next(model.parameters()).device
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(share * free) // cache_bytes(model, 1, n_ctx)


def bucket(n: int, least: int = 1) -> int:
    """The power of two at or above `n` (at least `least`): a padded shape."""
    size = least
    while size < n:
        size *= 2
    return size


class _Graph:
    """One padded shape's forward, captured as a CUDA graph with its static input buffers (or, emulated on
    a CPU, run on those buffers directly). Inputs are copied in, `replay` runs it, `hidden` is its output."""

    def __init__(self, fn, inputs: dict[str, torch.Tensor], capture: bool, pool=None) -> None:
        import torch

        self.fn, self.inputs = fn, inputs
        self.graph = None
        if not capture:
            return
        stream = torch.cuda.Stream()  # warm-up off the default stream, as capture requires
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn(**inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: a CPU-side torch call in another thread (none touch the GPU while a batch runs:
        # `editor.batched` runs one when every file waits) does not void the capture
        with torch.cuda.graph(self.graph, pool=pool, capture_error_mode="thread_local"):
            self.hidden = fn(**inputs)

    def replay(self, values: dict[str, torch.Tensor]) -> torch.Tensor:
        for name, value in values.items():
            self.inputs[name].copy_(value)
        if self.graph is None:
            return self.fn(**self.inputs)
        self.graph.replay()
        return self.hidden


class StaticEngine:
    """A transformers Qwen2/Llama model with a static KV cache of `seqs` sequences (the Engine interface on
    sequence 0, and `editor.batched`'s sequence interface over all of them)."""

    def __init__(self, model, tokenizer, seqs: int = 1, n_ctx: int = STATIC_CONTEXT,
                 graphs: bool | str | None = None) -> None:
        """`graphs`: True captures CUDA graphs, "emulate" runs their padded path without capture (tests),
        False runs every forward eagerly; None: True on CUDA, False elsewhere."""
        import torch

        why = supported(model)
        if why is None and hasattr(model, "peft_config"):
            why = unsupported_adapter(model)
        if why is not None:
            raise EditError(f"{why}; use --engine torch")
        self.model, self.tokenizer = model, tokenizer
        self.decoder = model.get_decoder()
        self.head = model.get_output_embeddings()
        config = model.config
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.vocab_size = self.n_vocab = int(config.vocab_size)
        self.eos = frozenset(eos_ids(model, tokenizer))
        self.seqs, self.n_ctx = seqs, min(n_ctx, int(getattr(config, "max_position_embeddings", n_ctx)))
        self.head_dim = head_dim(config)
        shape = (seqs, config.num_key_value_heads, self.n_ctx + 1, self.head_dim)  # +1: padding's scratch entry
        layers = len(self.decoder.layers)
        self.keys = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in range(layers)]
        if graphs is None:
            graphs = self.device.type == "cuda"
        if graphs is True and self.device.type != "cuda":
            raise EditError("CUDA graphs need a CUDA device")
        self.graphs = graphs
        self._graphs: dict[tuple, _Graph | None] = {}  # None: a shape seen once, run eagerly, not captured yet
        self.graph_error: str | None = None  # why capture failed, when it did (forwards then run eagerly)
        self._pool = torch.cuda.graph_pool_handle() if graphs is True else None
        self.lock = threading.Lock()  # one forward at a time: the graphs' buffers are shared
        self.has_adapter = hasattr(getattr(model, "base_model", None), "disable_adapter_layers") and hasattr(
            model, "peft_config")
        if self.has_adapter:  # the modules compute the base model; `_proj` adds the adapter where it is on
            model.base_model.disable_adapter_layers()
        self.adapter_seqs = [False] * seqs  # whether each sequence runs with the adapter
        self.held: tuple[int, ...] = ()
        self._length = 0

    # --- the Engine interface, on sequence 0 -------------------------------------------------------------

    @property
    def identity(self) -> dict:
        """What the measured forward costs depend on besides the machine (`editor.costs`)."""
        gpu = ""
        if self.device.type == "cuda":
            import torch

            gpu = torch.cuda.get_device_name(self.device)
        return {"engine": "static", "model": getattr(self.model.config, "_name_or_path", ""),
                "dtype": str(self.dtype), "device": str(self.device), "gpu": gpu, "graphs": str(self.graphs)}

    @property
    def calls_to_warm(self) -> int:
        """Forwards of a padded shape before it replays a graph (`editor.costs` times a later one): the first
        runs eagerly, the second captures it."""
        return 0 if self.graphs is False else 2

    @property
    def length(self) -> int:
        return self._length

    @property
    def adapter_on(self) -> bool:
        return self.adapter_seqs[0]

    def use_adapter(self, on: bool) -> None:
        """As `TorchEngine.use_adapter`, for sequence 0: the adapter on or off from now on; a switch empties it."""
        if self.seq_adapter(0, on):
            self.reset()

    def forward(self, tokens: list[int], keep: int) -> torch.Tensor:
        if self._length + len(tokens) > self.n_ctx:
            raise EditError(f"context full ({self._length} + {len(tokens)} > {self.n_ctx} tokens)")
        rows = self.decode_seqs([(0, list(tokens), self._length, keep)])[0]
        self._length += len(tokens)
        return rows

    def truncate(self, n: int) -> None:
        if n > 0:
            self._length -= n
            if self._length < len(self.held):
                self.held = ()

    def reset(self) -> None:
        self._length = 0
        self.held = ()

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """As `TorchEngine.start`: the prefix's entries stay at the head of sequence 0 between runs."""
        return start_in_memory(self, prefix_ids)

    # --- sequences (editor.batched.Rows) -----------------------------------------------------------------

    def decode_seqs(self, requests: list[tuple[int, list[int], int, int]]) -> list[torch.Tensor]:
        """One forward over several sequences: each request (seq, ids, pos, keep) appends `ids` to sequence
        `seq` from position `pos`; returns each one's logits for its last `keep` tokens, (keep, vocab)."""
        import torch

        for seq, ids, pos, keep in requests:
            if not ids or not 1 <= keep <= len(ids) or not 0 <= seq < self.seqs or pos + len(ids) > self.n_ctx:
                raise ValueError(f"bad request: sequence {seq}, {len(ids)} tokens at {pos}, keep {keep}")
        out: list[torch.Tensor] = []
        with self.lock, self._on_device(), torch.inference_mode():
            for group in split(requests, BATCH_TOKENS):
                hidden = self._hidden(group)  # (group, tokens, hidden): every position's
                pick = torch.zeros(len(group), max(keep for *_, keep in group), dtype=torch.long)
                for b, (_, ids, _, keep) in enumerate(group):
                    pick[b, :keep] = torch.arange(len(ids) - keep, len(ids))
                pick = pick.to(self.device, non_blocking=True)[:, :, None].expand(-1, -1, hidden.shape[-1])
                logits = self.head(torch.gather(hidden, 1, pick))  # the LM head on the kept rows only
                out += [logits[b, :keep] for b, (*_, keep) in enumerate(group)]
        return out

    def _on_device(self):
        """The engine's GPU as the current one (streams, graphs and pools follow it), or nothing on a CPU."""
        import torch

        return torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()

    def with_seqs(self, seqs: int) -> StaticEngine:
        """A second cache, of `seqs` sequences, over the same weights, context length and graph setting: the rows
        `editor.batched` decodes files on."""
        return StaticEngine(self.model, self.tokenizer, seqs=seqs, n_ctx=self.n_ctx, graphs=self.graphs)

    def seq_adapter(self, seq: int, on: bool) -> bool:
        """Run sequence `seq` with the adapter on or off (a no-op without one); whether that switched it, in
        which case its entries are stale (computed under the other weights) and its owner empties it."""
        on = on and self.has_adapter
        switched = self.adapter_seqs[seq] != on
        self.adapter_seqs[seq] = on
        return switched

    def seq_keep(self, seq: int, n: int) -> None:
        """Nothing to free: a sequence's entries past its length are never attended (positions say so)."""

    def seq_share(self, src: int, dst: int, n: int) -> None:
        """Copy the first `n` entries of sequence `src` into `dst` (a prefix kept once, given to each file)."""
        import torch

        with self.lock, self._on_device(), torch.inference_mode():
            for cache in (*self.keys, *self.values):
                cache[dst, :, :n].copy_(cache[src, :, :n])

    def load_prefix(self, seq: int, ids: tuple[int, ...]) -> str:
        """Read the fixed prefix `ids` into sequence `seq`; where it came from (always read: no disk state)."""
        step = GRAPH_TOKENS
        for at in range(0, len(ids), step):
            self.decode_seqs([(seq, list(ids[at:at + step]), at, 1)])
        return "read"

    def close(self) -> None:
        """Free the cache and the graphs (a second engine's memory on the GPU), and hand that memory back to the
        driver: `fitting_seqs` reads the driver's free memory when the next rows are sized."""
        self.keys, self.values, self._graphs = [], [], {}
        if self.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()

    # --- the forward ---------------------------------------------------------------------------------------

    def _hidden(self, requests: list[tuple[int, list[int], int, int]]) -> torch.Tensor:
        """The final-norm hidden states of every token of each request, (requests, longest, hidden): through a
        graph of the padded shape where one applies, else eagerly at the exact shape.

        Attention reads each row's cache in place (a view of sequences 0..batch-1) when the requests' own
        sequences, holes padded, make at most twice the rows a gather would and the holes add at most
        `HOLE_TOKENS` tokens of compute: a gathered row's keys and values are read, copied and read again
        each layer, an in-place one read once, but a hole's padding runs through every layer. So one file's
        sequence 0, a full batch of rows, and a batch of decode steps that files leaving it have holed read
        in place; a few scattered rows, or holes beside long drafts or prompts, are gathered."""
        import torch

        order = sorted(range(len(requests)), key=lambda b: requests[b][0])
        seqs = [requests[b][0] for b in order]
        longest = max(len(ids) for _, ids, _, _ in requests)
        end = max(pos + len(ids) for _, ids, pos, _ in requests)
        graph = self.graphs is not False and longest <= GRAPH_TOKENS and bucket(len(requests)) * bucket(longest) <= (
            GRAPH_BATCH)
        if graph:
            batch, width, window = bucket(len(requests)), bucket(longest), min(bucket(end, MIN_WINDOW), self.n_ctx)
        else:
            batch, width, window = len(requests), longest, end
        top = bucket(seqs[-1] + 1) if graph else seqs[-1] + 1  # the rows of sequences 0..the last one's
        view = (len(set(seqs)) == len(seqs) and top <= min(self.seqs, 2 * batch)
                and (top - batch) * width <= HOLE_TOKENS and (not graph or top * width <= GRAPH_BATCH))
        if view:
            batch = top  # each request at its sequence's row; the holes and the rest are padding
        # the adapter's terms only where a row has it on: ~400 small matmuls a forward that the base model's
        # rows (rewrite, spec, the fallback) must not pay for; graphs are kept per case
        adapted = any(self.adapter_seqs[seq] for seq in seqs)
        scratch = self.n_ctx  # padding writes here: past every window, so never attended
        ids = torch.zeros(batch, width, dtype=torch.long)
        slots = torch.full((batch, width), scratch, dtype=torch.long)
        rows = torch.arange(batch) if view else torch.zeros(batch, dtype=torch.long)
        lora = torch.zeros(batch, 1, 1, dtype=self.dtype)
        place = [0] * len(requests)  # each request's row in the batch
        for k, b in enumerate(order):
            seq, tokens, pos, _ = requests[b]
            row = seq if view else k
            n = len(tokens)
            ids[row, :n] = torch.tensor(tokens)
            slots[row, :n] = torch.arange(pos, pos + n)
            rows[row] = seq
            lora[row] = float(self.adapter_seqs[seq])
            place[b] = row
        inputs = {"ids": ids, "slots": slots, "rows": rows} | ({"lora": lora} if adapted else {})
        inputs = {k: v.to(self.device, non_blocking=True) for k, v in inputs.items()}
        hidden = self._graphed(inputs, (batch, width, window, adapted, view)) if graph else None
        if hidden is None:
            hidden = self._run(window=window, view=view, **inputs)
        # the real rows, in request order, and the real tokens: a copy (a graph's next replay overwrites its own)
        return hidden.index_select(0, torch.tensor(place, device=self.device))[:, :longest]

    def _graphed(self, inputs: dict[str, torch.Tensor], key: tuple) -> torch.Tensor | None:
        """The forward through the graph of its padded shape `key`; None when it is to run eagerly: on the
        shape's first use (it is captured on its second, so a shape that one edit uses once, as a copy of some
        length may be, costs no capture) and after a capture failed on this GPU or driver."""
        if key not in self._graphs:
            self._graphs[key] = None
            return None
        captured = self._graphs[key]
        if captured is None:
            *_, window, _, view = key

            def run(ids, slots, rows, lora=None):
                return self._run(ids, slots, rows, window=window, view=view, lora=lora)

            try:
                captured = _Graph(run, inputs, capture=self.graphs is True, pool=self._pool)
            except RuntimeError as exc:
                self.graphs, self.graph_error = False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                return None
            self._graphs[key] = captured
        return captured.replay(inputs)

    def _run(self, ids: torch.Tensor, slots: torch.Tensor, rows: torch.Tensor, window: int, view: bool,
             lora: torch.Tensor | None = None) -> torch.Tensor:
        """The model over `ids` (batch, tokens), token (b, t) at position `slots[b, t]` of sequence `rows[b]`,
        the adapter's terms weighted by `lora[b]` (1 on, 0 off; None: the base model alone); attention over
        each sequence's first `window` entries, causal by position (`view`: `rows` is 0..batch-1, read the cache
        in place). Fixed shapes, no host sync. Returns every token's final-norm hidden state."""
        import torch

        decoder = self.decoder
        h = decoder.embed_tokens(ids)
        cos, sin = decoder.rotary_emb(h, slots)
        cos, sin = cos[:, None].to(h.dtype), sin[:, None].to(h.dtype)
        # a query at position p sees the entries at positions <= p: its own and earlier, written or just now;
        # the query heads that share a KV head are stacked along the tokens (see `_attend`), so is the mask
        visible = torch.arange(window, device=ids.device)[None, None, :] <= slots[:, :, None]
        batch, width = ids.shape
        groups = self.model.config.num_attention_heads // self.model.config.num_key_value_heads
        visible = visible[:, None, None].expand(-1, -1, groups, -1, -1).reshape(batch, 1, groups * width, window)
        # additive, made once: SDPA would turn a boolean mask into this in every layer
        mask = torch.zeros(visible.shape, dtype=h.dtype, device=ids.device).masked_fill_(~visible, float("-inf"))
        for layer, kc, vc in zip(decoder.layers, self.keys, self.values, strict=True):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q = self._proj(attn.q_proj, x, lora).view(batch, width, -1, self.head_dim).transpose(1, 2)
            k = self._proj(attn.k_proj, x, lora).view(batch, width, -1, self.head_dim).transpose(1, 2)
            v = self._proj(attn.v_proj, x, lora).view(batch, width, -1, self.head_dim)
            q = q * cos + rotate_half(q) * sin
            k = (k * cos + rotate_half(k) * sin).transpose(1, 2)
            kc[rows[:, None], :, slots] = k  # (batch, tokens, kv heads, dim) into each row's positions
            vc[rows[:, None], :, slots] = v
            if view:
                keys, values = kc[:batch, :, :window], vc[:batch, :, :window]
            else:
                keys, values = kc[:, :, :window].index_select(0, rows), vc[:, :, :window].index_select(0, rows)
            out = self._attend(q, keys, values, mask, attn.scaling)
            h = h + self._proj(attn.o_proj, out.transpose(1, 2).reshape(batch, width, -1), lora)
            h = h + self._mlp(layer.mlp, layer.post_attention_layernorm(h), lora)
        return decoder.norm(h)

    @staticmethod
    def _attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
                scale: float) -> torch.Tensor:
        """Grouped-query attention without copying keys and values per query head: the query heads that share
        a KV head (heads k·g .. k·g+g-1 use KV head k, as transformers' `repeat_kv`) are stacked along the
        token axis, so SDPA sees as many heads as the cache has and a mask it can take on any backend.
        q: (batch, heads, tokens, dim); keys, values: (batch, kv heads, window, dim)."""
        import torch.nn.functional as F

        batch, heads, width, dim = q.shape
        kv = keys.shape[1]
        stacked = q.reshape(batch, kv, (heads // kv) * width, dim)
        out = F.scaled_dot_product_attention(stacked, keys, values, attn_mask=mask, scale=scale)
        return out.reshape(batch, heads, width, dim)

    def _proj(self, module, x: torch.Tensor, lora: torch.Tensor | None) -> torch.Tensor:
        """A projection of the base model, plus, on a peft LoRA layer, its adapters' terms on the rows whose
        `lora` weight is 1 (peft's own switch is off, so `module(x)` is the base layer alone)."""
        y = module(x)
        if lora is None or not hasattr(module, "lora_A"):
            return y
        for name in module.active_adapters:
            if name in module.lora_A:
                down = module.lora_A[name]
                delta = module.lora_B[name](down(x.to(down.weight.dtype))).to(y.dtype)
                y = y + delta * (module.scaling[name] * lora)
        return y

    def _mlp(self, mlp, x: torch.Tensor, lora: torch.Tensor | None) -> torch.Tensor:
        """The gated MLP (Qwen2's and Llama's), through `_proj` so its adapter terms apply per row."""
        if lora is None:
            return mlp(x)
        gate = self._proj(mlp.gate_proj, x, lora)
        return self._proj(mlp.down_proj, mlp.act_fn(gate) * self._proj(mlp.up_proj, x, lora), lora)


def split(requests: list, budget: int) -> list[list]:
    """Requests in order, grouped so that a group's padded size (members × longest, each rounded up to a power
    of two as a graph pads them) stays within `budget` tokens (a request longer than that goes alone)."""
    groups: list[list] = []
    longest = 0
    for req in requests:
        n = len(req[1])
        if groups and bucket(max(longest, n)) * bucket(len(groups[-1]) + 1) <= budget:
            groups[-1].append(req)
            longest = max(longest, n)
        else:
            groups.append([req])
            longest = n
    return groups
