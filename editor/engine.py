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

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # imported by TorchEngine only: the llama.cpp path never pays for torch or transformers
    import numpy as np
    import torch


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


def set_adapter(engine: Engine, on: bool) -> None:
    """Switch the engine's adapter on or off for the next run; engines without one (test doubles, a
    model loaded with no adapter) have nothing to switch."""
    switch = getattr(engine, "use_adapter", None)
    if switch is not None:
        switch(on)


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
        # a peft model (LoRA kept unmerged) has a base_model with adapter-layer switches
        self.has_adapter = hasattr(getattr(model, "base_model", None), "disable_adapter_layers") and hasattr(
            model, "peft_config")
        self.adapter_on = self.has_adapter
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

        with torch.inference_mode():
            out = self.model(
                input_ids=torch.tensor([tokens], device=self.device),
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=keep,
            )
        return out.logits[0]

    def truncate(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)  # transformers 5.x: a negative length drops that many entries
            if self.length < len(self.held):
                self.held = ()

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.held = ()

    def start(self, prefix_ids: list[int]) -> tuple[int, str]:
        """The Engine's `start`: the prefix's cache entries are kept in memory and the cache is
        cropped back to them for the next run; no file on disk (a torch load takes seconds anyway)."""
        ids = tuple(prefix_ids)
        if ids and self.held == ids and self.length >= len(ids):
            self.truncate(self.length - len(ids))
            return len(ids), "memory"
        self.reset()
        if not ids:
            return 0, ""
        self.forward(list(ids), keep=1)
        self.held = ids
        return len(ids), "read"

    @property
    def length(self) -> int:
        return self.cache.get_seq_length()
