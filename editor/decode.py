"""One decoding loop for every mode: a KV cache, one token or one verified draft per forward.

rewrite is this loop with no drafter. spec adds a drafter: its tokens ride along in the same forward
as the pending token, the longest prefix the model agrees with is kept (plus the model's own next
token), and the cache is cropped back to what was kept. Under greedy decoding the kept tokens are
exactly the tokens plain decoding would produce, so the output is byte-identical.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
from editllm.editor.drafter import CopyDrafter
from transformers import DynamicCache


@dataclass
class DecodeStats:
    """What one decoding run cost; `--stats` prints it and the bench aggregates it."""

    mode: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    forwards: int = 0  # prefill included
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    copy_attempts: int = 0
    copied_tokens: int = 0  # drafted tokens the model accepted
    accepted_lengths: list[int] = field(default_factory=list)
    stop_reason: str = ""

    @property
    def tokens_per_forward(self) -> float:
        steps = self.forwards - 1
        return self.output_tokens / steps if steps > 0 else float(self.output_tokens)

    @property
    def copied_share(self) -> float:
        return self.copied_tokens / self.output_tokens if self.output_tokens else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["tokens_per_forward"] = round(self.tokens_per_forward, 3)
        d["copied_share"] = round(self.copied_share, 3)
        return d


class TailStop:
    """Stops when the decoded output gains a marker (the closing fence); checks only a short tail.

    Checking every token keeps the stop point identical across modes: a verified draft is emitted
    token by token and cut exactly where plain decoding would have stopped.
    """

    def __init__(self, tokenizer, matches: Callable[[str], bool], window: int = 16) -> None:
        self.tokenizer = tokenizer
        self.matches = matches
        self.window = window

    def __call__(self, output_ids: list[int]) -> bool:
        tail = output_ids[-self.window :]
        text = self.tokenizer.decode(tail, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if len(output_ids) > self.window:
            text = "\n" + text.split("\n", 1)[-1] if "\n" in text else ""
        return self.matches(text)


def eos_ids(model, tokenizer) -> set[int]:
    """Every id that ends generation: the tokenizer's EOS and the generation config's."""
    ids: set[int] = set()
    for source in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif source:
            ids.update(source)
    return ids


class Decoder:
    """Greedy (or sampled) decoding with optional verified drafts, batch 1."""

    def __init__(self, model, tokenizer, temperature: float = 0.0, seed: int = 0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self.eos = eos_ids(model, tokenizer)
        self.temperature = temperature
        self.generator = torch.Generator(device="cpu").manual_seed(seed)

    @torch.inference_mode()
    def forward(self, ids: list[int], cache: DynamicCache, keep: int) -> torch.Tensor:
        """Append `ids` to the cache; return logits of the last `keep` positions, float32 on CPU."""
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=keep,
        )
        return out.logits[0].float().cpu()

    def choose(self, logits: torch.Tensor) -> list[int]:
        """One token per row: argmax, or a sample at the temperature."""
        if self.temperature <= 0:
            return logits.argmax(-1).tolist()
        probs = torch.softmax(logits / self.temperature, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1).tolist()

    def run(
        self,
        prompt_ids: list[int],
        max_new_tokens: int,
        stop: Callable[[list[int]], bool],
        drafter: CopyDrafter | None = None,
        source_start: int = 0,
        mode: str = "rewrite",
        on_progress: Callable[[int, float], None] | None = None,
    ) -> tuple[list[int], DecodeStats]:
        """Decode until EOS, `stop(output_ids)` or `max_new_tokens`; return output ids and stats.

        With sampling, each drafted token is checked by sampling the model's own distribution at
        its position and comparing: accepted tokens are then distributed exactly as in plain sampling.
        """
        stats = DecodeStats(mode=mode, prompt_tokens=len(prompt_ids))
        cache = DynamicCache(config=self.model.config)
        start = time.perf_counter()
        token = self.choose(self.forward(prompt_ids, cache, keep=1))[0]
        stats.forwards = 1
        stats.prefill_seconds = time.perf_counter() - start
        if drafter is not None:
            drafter.reset(prompt_ids, source_start)
        out: list[int] = []

        def emit(t: int) -> bool:
            """Add one token to the output; True when decoding must stop."""
            if t in self.eos:
                stats.stop_reason = "eos"
                return True
            out.append(t)
            if drafter is not None:
                drafter.append(t)
            if stop(out):
                stats.stop_reason = "stop"
                return True
            if len(out) >= max_new_tokens:
                stats.stop_reason = "max_new_tokens"
                return True
            return False

        while not emit(token):
            draft = drafter.propose(max_new_tokens - len(out)) if drafter is not None else []
            logits = self.forward([token] + draft, cache, keep=len(draft) + 1)
            stats.forwards += 1
            preds = self.choose(logits)
            accepted = 0
            while accepted < len(draft) and preds[accepted] == draft[accepted]:
                accepted += 1
            if draft:
                stats.copy_attempts += 1
                stats.accepted_lengths.append(accepted)
                stats.copied_tokens += accepted
                drafter.feedback(accepted, len(draft))
            if any(emit(t) for t in draft[:accepted]):
                break
            if accepted < len(draft):
                cache.crop(-(len(draft) - accepted))
            token = preds[accepted]
            if on_progress is not None:
                on_progress(len(out), time.perf_counter() - start)
        stats.output_tokens = len(out)
        stats.decode_seconds = time.perf_counter() - start - stats.prefill_seconds
        return out, stats
