"""The engine: what the decoder needs from a model, and the transformers implementation.

An engine owns one KV cache (batch 1) and runs the model over tokens appended to it. The drafter, the
grammar matcher, the resolver and the verify loop (editor.decode) sit above it and never see which
engine runs: a llama.cpp engine or a server backend implements the same members (forward, truncate,
reset, length, and its tokenizer, logits width and EOS ids).

A LoRA adapter (copy mode's span selector) stays unmerged: the engine switches it on or off per run
(`use_adapter`, called through `set_adapter` so engines without one need not implement it). Only copy
mode's program writing runs with it on; rewrite, spec and copy mode's fallback run the base model, so
lossless output is byte-identical with or without an adapter loaded. A switch empties the cache: KV
entries computed under one state are wrong under the other. Anything that caches engine state across
runs (a saved prompt prefix) must key it by `adapter_on` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # imported by TorchEngine only: the llama.cpp path never pays for torch or transformers
    import numpy as np
    import torch


@dataclass(frozen=True)
class Reuse:
    """Cache entries taken from earlier positions instead of computed: the entries of prompt positions
    `src .. src+len(ids)-1` placed at the next positions of the sequence (keys rotated by the shift).

    Copy mode uses it for copied lines the prompt already shows (`--copy-kv reuse`): their keys and
    values were computed in the prompt's context, which is why it is an approximation (issue 22) and
    not lossless. `ids` are the tokens the entries stand for (the drafter and the stats see them)."""

    src: int
    ids: tuple[int, ...]


class Engine(Protocol):
    """A model with one KV cache, as the verify loop drives it."""

    tokenizer: Any  # a Hugging Face tokenizer: prompts, drafts and copied lines are its token ids
    vocab_size: int  # width of a logits row (may exceed len(tokenizer): Qwen pads its LM head)
    eos: frozenset[int]  # every id that ends generation

    def forward(self, tokens: list[int], keep: int) -> torch.Tensor | np.ndarray:
        """Append `tokens` to the cache; return the logits of the last `keep` of them, shape
        (keep, vocab_size), wherever the engine keeps them (pick on that device, copy ints back): a
        torch tensor, or a numpy array on engines that run without torch (`.argmax(-1)` works on both)."""
        ...

    def truncate(self, n: int) -> None:
        """Drop the last `n` cache entries (a rejected draft)."""
        ...

    def reset(self) -> None:
        """Empty the cache for a new sequence."""
        ...

    @property
    def length(self) -> int:
        """Tokens in the cache."""
        ...

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """Begin a new sequence whose first tokens are the fixed `prefix_ids` (the prompt's part that
        is the same for every request, editor.prompt). The cache then holds the first n of them, n
        returned with where they came from ("memory": kept from the last run, "disk": a saved state,
        "read": read now); the decoder feeds the rest of the prompt. Optional: the decoder resets
        engines without it. Lossless: the cache is exactly what reading the prefix would leave."""
        ...


    # Optional (copy mode's `--copy-kv reuse` needs it; `supports_reuse(engine)` says whether it is there):
    # def forward_reuse(self, parts: list[int | Reuse], keep: int) -> torch.Tensor:
    #     Like `forward` over `parts` in order, a `Reuse` standing for its entries taken from the prompt;
    #     rows for the last `keep` computed tokens. Later forwards and `truncate` work as usual.


def supports_reuse(engine: Any) -> bool:
    """Whether an engine can take cache entries from the prompt (`forward_reuse`)."""
    return callable(getattr(engine, "forward_reuse", None))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    import torch

    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def set_adapter(engine: Engine, on: bool) -> None:
    """Switch the engine's adapter on or off for the next run; engines without one (test doubles, a
    model loaded with no adapter) have nothing to switch."""
    switch = getattr(engine, "use_adapter", None)
    if switch is not None:
        switch(on)



def start_in_memory(engine, prefix_ids: list[int]) -> tuple[int, str]:
    """`Engine.start` for an engine that keeps the last prefix's entries at the head of its cache (`held`):
    cropped back to them when the prefix is the same ("memory"), else read now ("read")."""
    ids = tuple(prefix_ids)
    if ids and engine.held == ids and engine.length >= len(ids):
        engine.truncate(engine.length - len(ids))
        return len(ids), "memory"
    engine.reset()
    if not ids:
        return 0, ""
    engine.forward(list(ids), keep=1)
    engine.held = ids
    return len(ids), "read"


def eos_ids(model, tokenizer) -> set[int]:
    """Every id that ends generation: the tokenizer's EOS and the generation config's."""
    ids: set[int] = set()
    for source in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif source:
            ids.update(source)
    return ids


class TorchEngine:
    """A transformers causal LM with a `DynamicCache`.

    Logits stay on the model's device in its dtype: the loop takes the argmax there and copies back
    only token ids (a float32 copy of a 151,936-wide row per drafted token is what this avoids).
    Only the kept positions go through the LM head (`logits_to_keep`).
    """

    def __init__(self, model, tokenizer) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.vocab_size = int(model.config.vocab_size)
        self.eos = frozenset(eos_ids(model, tokenizer))
        self.held: tuple[int, ...] = ()  # the fixed prefix at the head of the cache (start)
        # Logical position of each cache entry, once `forward_reuse` has put entries out of order
        # (computed tokens after the reused entries that follow them); None while entry k is position k.
        self.positions: torch.Tensor | None = None
        # a peft model (LoRA kept unmerged) has a base_model with adapter-layer switches
        self.has_adapter = hasattr(getattr(model, "base_model", None), "disable_adapter_layers") and hasattr(
            model, "peft_config")
        self.adapter_on = self.has_adapter
        self.reset()
        self.use_adapter(False)  # the base model unless a run asks for the adapter (copy mode's program)

    def use_adapter(self, on: bool) -> None:
        """Run the next forwards with the LoRA adapter on or off (a no-op without one). The cache is
        emptied on a switch (and the kept prefix with it): its entries were computed under the other weights."""
        on = on and self.has_adapter
        if on == self.adapter_on:
            return
        layers = self.model.base_model
        layers.enable_adapter_layers() if on else layers.disable_adapter_layers()
        self.adapter_on = on
        self.reset()

    def forward(self, tokens: list[int], keep: int) -> torch.Tensor:
        import torch

        past = self.length
        with torch.inference_mode(), self.emptied_on_failure():
            out = self.model(
                input_ids=torch.tensor([tokens], device=self.device),
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=keep,
            )
        if self.positions is not None:  # later tokens come after every entry: the default mask is right
            self.positions = torch.cat([self.positions, torch.arange(past, past + len(tokens), device=self.device)])
        return out.logits[0]

    def truncate(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)  # transformers 5.x: a negative length drops that many entries
            if self.length < len(self.held):
                self.held = ()
            if self.positions is not None:
                self.positions = self.positions[:-n]

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.held = ()
        self.positions = None

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """The Engine's `start`: the prefix's cache entries are kept in memory and the cache is
        cropped back to them for the next run; no file on disk (a torch load takes seconds anyway)."""
        have, source = start_in_memory(self, prefix_ids)
        if source == "memory":
            self.positions = None  # the prefix's entries are in position order (reused ones came later)
        return have, source

    def shift_keys(self, keys: torch.Tensor, delta: int) -> torch.Tensor:
        """Keys (post-RoPE) as if computed `delta` positions later: RoPE rotations compose, so one more
        rotation by `delta` moves them (the model's own rotary module: its theta and scaling)."""
        import torch

        rotary = self.model.get_decoder().rotary_emb
        cos, sin = rotary(keys, torch.tensor([[delta]], device=keys.device))
        cos, sin = cos[:, None].to(keys.dtype), sin[:, None].to(keys.dtype)
        return keys * cos + rotate_half(keys) * sin

    def forward_reuse(self, parts: list[int | Reuse], keep: int) -> torch.Tensor:
        """`forward` where a `Reuse` part takes its entries from the prompt (see `Reuse`); the rows are
        those of the last `keep` computed tokens (the decoder keeps its draft, computed, at the end).

        The reused entries are appended first, then the computed tokens run in one forward at their
        own positions, with a mask by position: a computed token sees the entries before it, reused
        or not, and none after it. So the cache holds entries out of position order from here on;
        `positions` records each entry's position for the next `forward_reuse`."""
        import torch

        with torch.inference_mode(), self.emptied_on_failure():
            return self._forward_reuse(parts, keep)

    @contextmanager
    def emptied_on_failure(self) -> Iterator[None]:
        """A forward cut short (Ctrl-C between two layers, out of memory) has written some layers' cache
        entries and not the others', and no crop evens them out: empty the cache then, so the next run
        starts from a consistent one (it reads the prefix again) instead of failing on mismatched shapes."""
        try:
            yield
        except BaseException:
            self.reset()
            raise

    def _forward_reuse(self, parts: list[int | Reuse], keep: int) -> torch.Tensor:
        import torch

        past = self.length
        order = self.positions if self.positions is not None else torch.arange(past, device=self.device)
        ids: list[int] = []
        at: list[int] = []
        spans: list[tuple[int, int, int]] = []  # (src, n, dst)
        pos = past
        for part in parts:
            if isinstance(part, Reuse):
                spans.append((part.src, len(part.ids), pos))
                pos += len(part.ids)
            else:
                ids.append(part)
                at.append(pos)
                pos += 1
        if not 1 <= keep <= len(ids):
            raise ValueError(f"keep={keep}: only the {len(ids)} computed tokens have rows")
        for layer in self.cache.layers:
            keys = [layer.keys] + [self.shift_keys(layer.keys[:, :, s:s + n], d - s) for s, n, d in spans]
            values = [layer.values] + [layer.values[:, :, s:s + n] for s, n, _ in spans]
            layer.keys, layer.values = torch.cat(keys, dim=2), torch.cat(values, dim=2)
        reused = [torch.arange(d, d + n, device=self.device) for _, n, d in spans]
        query = torch.tensor(at, device=self.device)
        kv = torch.cat([order, *reused, query])
        dtype = self.model.dtype
        mask = torch.zeros(len(ids), len(kv), dtype=dtype, device=self.device)
        mask.masked_fill_(kv[None, :] > query[:, None], torch.finfo(dtype).min)
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            position_ids=query[None],
            attention_mask=mask[None, None],
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=keep,
        )
        self.positions = kv
        return out.logits[0]

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()
