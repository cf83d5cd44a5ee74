"""Supervised fine-tuning of the span selector: the model learns to write edit programs.

Each sequence is exactly what the copy-mode decoder feeds the model: the copy prompt, then the
program ops in order, and after each copy tag the copied lines' tokens (the resolver prefills them
at inference, so the model sees them) — masked out of the loss with the prompt, because the model
never writes them. The loss is on tags, gen text and the final EOS.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from editllm.editor.prompt import copy_prompt_span
from editllm.grammar.program import Copy, Op, parse
from editllm.grammar.tokens import chat_ids, text_ids
from editllm.resolver.resolve import CopySource
from editllm.training.data import Example

IGNORE = -100


def program_tokens(tokenizer, ex: Example) -> tuple[list[int], list[tuple[Op, list[int], list[int]]]]:
    """The copy prompt's ids, then per op of the program: the op, its own ids, and the ids of the lines a
    copy appends after it (none after a gen)."""
    shown, _ = ex.shown()  # the focused definitions when copy mode focuses (its program is over them)
    prompt = chat_ids(tokenizer, *copy_prompt_span(tokenizer, ex.path, shown, ex.instruction))
    source = CopySource(tokenizer, shown)
    return prompt, [(op, text_ids(tokenizer, op.render()),
                     source.tokens(op) if isinstance(op, Copy) else []) for op in parse(ex.program)]


def encode_example(tokenizer, ex: Example, eos_id: int) -> tuple[list[int], list[int]]:
    """(input_ids, labels) for one example; labels are IGNORE on the prompt and on copied text."""
    prompt, ops = program_tokens(tokenizer, ex)
    ids, labels = list(prompt), [IGNORE] * len(prompt)
    for _, op_ids, copied in ops:
        ids += op_ids + copied
        labels += op_ids + [IGNORE] * len(copied)
    ids.append(eos_id)
    labels.append(eos_id)
    return ids, labels


@dataclass
class TrainConfig:
    steps: int = 100
    lr: float = 2e-4
    lora_r: int = 16  # 0: full fine-tuning
    batch_tokens: int = 4096  # examples are packed per step up to this many tokens
    max_len: int = 4096  # longer examples are skipped
    seed: int = 0
    save_every: int = 50
    warmup: int = 10
    max_seconds: float | None = None  # stop early (and save) once a step ends past this wall-clock budget
    padded: bool = False  # one padded forward per batch (a GPU's way; `padded_loss`) instead of one per sequence


def add_lora(model, r: int):
    """Wrap the attention and MLP projections with LoRA adapters (peft)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=0.0, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    return get_peft_model(model, config)


def batch_loss(model, batch: list[tuple[list[int], list[int]]], device) -> torch.Tensor:
    """Mean token loss over the unmasked labels of a batch, one sequence at a time (no padding)."""
    total, count = None, 0
    for ids, labels in batch:
        y = torch.tensor(labels[1:], device=device)
        keep = (y != IGNORE).nonzero().squeeze(1)  # the positions whose next token is trained
        n = int(keep.numel())
        if n == 0:
            continue
        # Only those positions go through the LM head: the prompt is most of the sequence, and
        # 151k-wide logits for every prompt token would dominate memory and time.
        x = torch.tensor([ids], device=device)
        logits = model(input_ids=x, logits_to_keep=keep).logits[0].float()
        loss = torch.nn.functional.cross_entropy(logits, y[keep], reduction="sum")
        total = loss if total is None else total + loss
        count += n
    if total is None:
        raise ValueError("batch has no trainable tokens")
    return total / count


def padded_loss(model, batch: list[tuple[list[int], list[int]]], device) -> torch.Tensor:
    """`batch_loss` in one forward: the sequences right-padded into one [rows, longest] batch. A GPU runs
    it at its width instead of a short sequence at a time (one sequence left an H200 idle most of each
    step); the causal mask keeps the padding after every real token, so the loss is the same. Only the
    trained positions' final hidden states go through the LM head."""
    width = max(len(ids) for ids, _ in batch)
    x = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    y = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    for r, (ids, labels) in enumerate(batch):
        x[r, :len(ids)] = torch.tensor(ids)
        mask[r, :len(ids)] = 1
        y[r, :len(ids) - 1] = torch.tensor(labels[1:])  # position t predicts the label of t + 1
    x, mask, y = x.to(device), mask.to(device), y.to(device)
    keep = y != IGNORE
    if not bool(keep.any()):
        raise ValueError("batch has no trainable tokens")
    out = model(input_ids=x, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
    logits = model.get_output_embeddings()(out.hidden_states[-1][keep]).float()
    return torch.nn.functional.cross_entropy(logits, y[keep], reduction="mean")


def trained_tokens(batch: list[tuple[list[int], list[int]]]) -> int:
    """The positions a batch's loss is the mean over: each whose next token is trained."""
    return sum(sum(y != IGNORE for y in labels[1:]) for _, labels in batch)


class Backward:
    """One optimizer step's forward and backward over a batch, in parts when the whole runs out of GPU memory.

    A lease's single training call loses everything to one out-of-memory error at its first step (the
    padded batch's activations are ~3 MB a token on the 1.5B; an H100 has half an H200's memory). So a batch
    that does not fit is done again as 2, 4, ... consecutive parts, each part's mean loss weighted by its
    share of the trained tokens: the summed gradients are the whole batch's. The part size that fitted (its
    padded tokens) then splits later batches before they are tried."""

    def __init__(self, padded: bool) -> None:
        self.loss = padded_loss if padded else batch_loss
        self.padded = padded
        self.limit: int | None = None  # the most padded tokens a part has been run with after an OOM

    def __call__(self, model, params, batch, device) -> float:
        """Fill the parameters' gradients for `batch`; return its mean token loss."""
        parts = self.parts_for(batch)
        while True:
            try:
                return self.run(model, batch, parts, device)
            except torch.OutOfMemoryError:
                if parts >= len(batch):
                    raise
            for p in params:  # outside the handler, so that the failed pass's activations are freed
                p.grad = None
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            parts = min(len(batch), parts * 2)

    def parts_for(self, batch) -> int:
        parts = 1
        while self.limit is not None and parts < len(batch) and \
                max(self.cost(b) for b in self.split(batch, parts)) > self.limit:
            parts += 1
        return parts

    def run(self, model, batch, parts: int, device) -> float:
        total, value = trained_tokens(batch), 0.0
        if total == 0:
            raise ValueError("batch has no trainable tokens")
        for part in self.split(batch, parts):
            n = trained_tokens(part)
            if n == 0:
                continue
            loss = self.loss(model, part, device) * (n / total)
            loss.backward()
            value += float(loss.detach())
        if parts > 1:
            self.limit = max(self.cost(b) for b in self.split(batch, parts))
        return value

    def cost(self, part) -> int:
        """What a part's activations grow with: rows × the longest row padded; one sequence at a time, the
        sum of their lengths (their graphs are all held until the backward)."""
        return len(part) * max(len(ids) for ids, _ in part) if self.padded else sum(len(ids) for ids, _ in part)

    @staticmethod
    def split(batch, parts: int) -> list:
        size = -(-len(batch) // parts)
        return [batch[i:i + size] for i in range(0, len(batch), size)]


def make_batches(encoded: list[tuple[list[int], list[int]]], cfg: TrainConfig, rng: random.Random):
    """An endless stream of batches, packed by token count, reshuffled every epoch."""
    usable = [e for e in encoded if len(e[0]) <= cfg.max_len]
    if not usable:
        raise ValueError(f"no example fits max_len={cfg.max_len}")
    while True:
        order = usable[:]
        rng.shuffle(order)
        if cfg.padded:  # padding costs rows × longest: sort each stretch of 256 by length, then shuffle batches
            chunks = [sorted(order[i:i + 256], key=lambda e: len(e[0])) for i in range(0, len(order), 256)]
            batches = [b for chunk in chunks for b in _pack(chunk, cfg.batch_tokens, padded=True)]
            rng.shuffle(batches)
            yield from batches
        else:
            yield from _pack(order, cfg.batch_tokens, padded=False)


def _pack(seqs, budget: int, padded: bool):
    """Consecutive batches of `seqs` within `budget` tokens (padded: rows × the longest row)."""
    batch, longest, size = [], 0, 0
    for e in seqs:
        cost = (len(batch) + 1) * max(longest, len(e[0])) if padded else size + len(e[0])
        if batch and cost > budget:
            yield batch
            batch, longest, size = [], 0, 0
        batch.append(e)
        longest, size = max(longest, len(e[0])), size + len(e[0])
    if batch:
        yield batch


def eos_id(tokenizer) -> int:
    """The token that ends the model's turn, which ends every trained program."""
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if eos is None or eos == tokenizer.unk_token_id:
        eos = tokenizer.eos_token_id
    return eos


def train(model, tokenizer, examples: list[Example], cfg: TrainConfig, out: Path,
          on_step: Callable[[int, float], None] | None = None, resume: bool = True,
          encoded: list[tuple[list[int], list[int]]] | None = None, init: Path | None = None):
    """Fine-tune and save to `out` (a peft adapter, or full weights when lora_r == 0).

    Checkpoints (`out/checkpoint`: weights, optimizer, step, RNG) every `save_every` steps; a later run
    with the same `out` resumes from the last one. `encoded`: sequences encoded ahead (`encode_example`
    on another machine), trained beside `examples`. With `max_seconds`, the planned steps are cut, once
    the warm-up has shown the pace, to what fits: the learning rate then decays to zero by the deadline
    instead of being cut off high. `init`: a LoRA adapter folder of the same rank to start from (the
    shipped selector, trained on in a later lease) instead of peft's zero-initialised B.
    """
    device = next(model.parameters()).device
    eos = eos_id(tokenizer)
    encoded = [encode_example(tokenizer, ex, eos) for ex in examples] + list(encoded or [])
    if cfg.lora_r > 0:
        model = add_lora(model, cfg.lora_r)
        if init is not None:
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            try:
                result = set_peft_model_state_dict(model, load_file(Path(init) / "adapter_model.safetensors"))
            except RuntimeError as exc:  # a shape differs: another rank or model
                raise ValueError(f"{init}: not an adapter of this model and rank ({str(exc).strip()[:200]})") from exc
            missing = [k for k in result.missing_keys if "lora_" in k]
            if missing:
                raise ValueError(f"{init}: not an adapter of this model and rank (no {missing[0]})")
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)

    def schedule(s: int) -> float:  # linear warm-up, then cosine decay to 0
        return min(1.0, (s + 1) / max(1, cfg.warmup)) * 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    rng = random.Random(cfg.seed)
    step = 0
    ckpt = out / "checkpoint"
    if resume and (ckpt / "state.pt").exists():
        state = torch.load(ckpt / "state.pt", weights_only=False)
        model.load_state_dict(state["model"], strict=False)
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        step = state["step"]
        rng.setstate(state["rng"])
    batches = make_batches(encoded, cfg, rng)
    history = []
    start = time.time()
    backward = Backward(cfg.padded)
    while step < cfg.steps:
        opt.zero_grad()
        value = backward(model, params, next(batches), device)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        history.append({"step": step, "loss": round(value, 4), "time": time.time()})
        if on_step:
            on_step(step, value)
        if cfg.max_seconds is not None and step == cfg.warmup:
            pace = (time.time() - start) / max(1, len(history))
            cfg.steps = min(cfg.steps, step + max(1, int((cfg.max_seconds - (time.time() - start)) / pace)))
        if step % cfg.save_every == 0 or step == cfg.steps:
            ckpt.mkdir(parents=True, exist_ok=True)
            weights = model.state_dict()
            trainable = {k: v for k, v in weights.items() if "lora_" in k} if cfg.lora_r else weights
            torch.save({"model": trainable, "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "step": step, "rng": rng.getstate()}, ckpt / "state.pt.tmp")
            os.replace(ckpt / "state.pt.tmp", ckpt / "state.pt")  # a kill mid-save keeps the last checkpoint whole
        if cfg.max_seconds is not None and time.time() - start > cfg.max_seconds:
            break  # a lent GPU has a fixed lease: keep what was learned rather than lose it all
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    if cfg.lora_r == 0:
        tokenizer.save_pretrained(out)
    with open(out / "train_log.jsonl", "a") as f:
        for h in history:
            f.write(json.dumps(h) + "\n")
    return model, history
