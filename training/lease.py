"""The span selector's GPU job: one call on a lent GPU distils rewrite mode in batches, then trains.

A lease is short (about 15 minutes of device time, the model's upload included, and at most 10 minutes a
call), so the work is split by where it can run:

* `pack` runs here, on the CPU machine: it draws distillation tasks from the public files (drawing is
  slow and the GPU machine has other packages) and encodes the synthetic examples into training
  sequences, and writes them, with the tokenizer, into one folder to carry.
* `run` runs on the GPU under one deadline: it loads the bundled GGUF, decodes every task's rewrite
  prompt in length-sorted batches (`generate_batch`: transformers' greedy `generate`, many files at a
  time instead of one), hands the outputs to `distill.distill` through `distill.replay`, so the editor's
  own pipeline (focus, merge, checks, oracle program) keeps or rejects each exactly as it would one by
  one, then trains the LoRA adapter on synthetic + distilled sequences for the time left, and saves it
  in bfloat16 (half of float32's size: the adapter is committed).

Batched bf16 decoding is not bit-identical to rewrite mode's one-file loop (padding and batch shapes
change the rounding); for training data that is immaterial: every output is the model's own greedy
edit and passes the same checks.

    python -m editllm.training.lease pack --synthetic syn.jsonl.gz --tasks 1500 --out pack/
    python -m editllm.training.lease run --gguf model.gguf --pack pack/ --out run/ --minutes 8

`distill` does the distilling here instead, on a CPU (spec mode on the torch engine), and `pack --distilled`
carries what it kept, so that the lease only trains (`gpu_lease.sh`'s header has that plan).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

Encoded = tuple[list[int], list[int]]  # (input ids, labels with sft.IGNORE where no loss)


# --- here: what the GPU call needs -------------------------------------------------------------------

def draw_tasks(n: int, seed: int, per_file: int = 2) -> list[dict]:
    """`n` distillation tasks, at most `per_file` from one file (more files, more kinds of code), none
    sharing a function with the evaluation cases (the same guard `train data` applies)."""
    import random

    from editllm.training.data import Example, eval_fingerprints, overlaps_eval
    from editllm.training.distill import candidates

    prints, rng, out, per = eval_fingerprints(), random.Random(seed), [], {}
    for label, path, task in candidates(seed):
        if len(out) >= n:
            break
        if per.get(label, 0) >= per_file or rng.random() < 0.5:  # skip half: other kinds get their turn
            continue
        if overlaps_eval(Example(path, task.instruction, task.before, task.before, ""), prints):
            continue
        per[label] = per.get(label, 0) + 1
        out.append({"label": label, "path": path, **task.to_json()})
    return out


def save_encoded(seqs: list[Encoded], path: Path) -> None:
    """Sequences as three arrays (ids, a loss mask, offsets): a tenth of their JSON size, compressed."""
    from editllm.training.sft import IGNORE

    ids = np.fromiter((t for s, _ in seqs for t in s), dtype=np.uint32)
    mask = np.fromiter((y != IGNORE for _, labels in seqs for y in labels), dtype=bool)
    offsets = np.cumsum([0] + [len(s) for s, _ in seqs]).astype(np.int64)
    np.savez_compressed(path, ids=ids, mask=np.packbits(mask), offsets=offsets)


def load_encoded(path: Path) -> list[Encoded]:
    from editllm.training.sft import IGNORE

    data = np.load(path)
    ids, offsets = data["ids"].astype(np.int64), data["offsets"]
    mask = np.unpackbits(data["mask"], count=len(ids)).astype(bool)
    labels = np.where(mask, ids, IGNORE)
    return [(ids[a:b].tolist(), labels[a:b].tolist()) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def model_tokenizer_dir(model: str) -> Path:
    """The folder of a GGUF model's tokenizer (made once from the GGUF, as every editllm run does)."""
    from editllm.editor.models import gguf_of, gguf_tokenizer, tokenizer_dir

    gguf = gguf_of(model)
    gguf_tokenizer(gguf)
    return tokenizer_dir(gguf)


def pack(synthetic: Path, tasks: int, seed: int, tokenizer_dir: Path, out: Path,
         distilled: list[Path] | None = None) -> None:
    """Write `out/`: tasks.jsonl.gz, synthetic.npz (encoded), tokenizer/ (the one the prompts assume), and
    distilled.npz: the examples of earlier distillations (`training/data/distill-*.jsonl.gz`, decoded on an
    earlier lease or on a CPU), which `run` weighs like the ones it distils itself, so a lease can spend
    all its time training. Those are guarded again against the evaluation cases, as `train data` does, and
    against outputs that lost code the instruction did not name (`data.lossy`)."""
    from editllm.training.data import eval_fingerprints, lossy, overlaps_eval, read_jsonl
    from editllm.training.sft import encode_example, eos_id
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tokenizer_dir, out / "tokenizer", dirs_exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(out / "tokenizer")
    examples = read_jsonl(synthetic)
    eos = eos_id(tokenizer)
    save_encoded([encode_example(tokenizer, ex, eos) for ex in examples], out / "synthetic.npz")
    earlier = [ex for path in distilled or [] for ex in read_jsonl(path)]
    prints = eval_fingerprints()
    kept = [ex for ex in earlier if not overlaps_eval(ex, prints) and not lossy(ex)]
    save_encoded([encode_example(tokenizer, ex, eos) for ex in kept], out / "distilled.npz")
    drawn = draw_tasks(tasks, seed)
    with gzip.open(out / "tasks.jsonl.gz", "wt", encoding="utf-8") as f:
        for t in drawn:
            f.write(json.dumps(t) + "\n")
    print(f"packed {len(examples)} synthetic examples, {len(kept)} distilled ones ({len(earlier) - len(kept)} "
          f"refused: evaluation overlap or lost code) and {len(drawn)} tasks into {out}",
          file=sys.stderr)


def distill_here(tasks: int, seed: int, exclude: list[Path], out: Path, minutes: float, model: str = "bundled:1.5b",
                 max_prompt: int = 2500, log=print) -> dict:
    """Distil on this machine what a lease would (session 16: 232 examples in 64 minutes on 2 AVX-512 cores
    shared with other jobs), so that a lease can spend all its time training: the tasks `pack` draws, less
    those of earlier distillations (`exclude`), shortest prompt first (as the lease's batches take them),
    decoded by spec mode on the torch engine in bf16, which is rewrite mode's output there (lossless) for a
    fraction of its forwards: a distilled file is mostly the file again, which spec drafts. Resumes like
    `distill.distill`."""
    from editllm import api
    from editllm.editor.edit import EditOptions
    from editllm.training.data import read_jsonl
    from editllm.training.distill import Task, distill, prompt_of

    seen = {(ex.source.split(":", 2)[-1], ex.instruction) for path in exclude for ex in read_jsonl(path)}
    every = draw_tasks(tasks, seed)
    drawn = [d for d in every if (d["label"], d["instruction"]) not in seen]
    lm = api.load_model(model, "cpu", "bfloat16", None, False, log=lambda m: None, engine="torch")
    opts = EditOptions(mode="spec")
    sized = []
    for d in drawn:
        task = Task.from_json(d)
        prompt = prompt_of(lm, d["path"], task, opts)
        if prompt is not None and len(prompt[0]) <= max_prompt:
            sized.append((len(prompt[0]), len(sized), (d["label"], d["path"], task)))
    log(f"{len(sized)} of {len(drawn)} tasks ({len(every)} drawn, less {len(every) - len(drawn)} distilled before) "
        f"have a prompt of at most {max_prompt} tokens")
    ordered = [t for _, _, t in sorted(sized)]
    counts = distill(lm, len(ordered), out, seed, opts=opts, tasks=ordered, deadline=time.time() + 60 * minutes,
                     on_attempt=lambda key, reason: log(f"{key[:100]}: {reason or 'kept'}"))
    log(f"distilled: {dict(counts)}")
    return dict(counts)


# --- there: the GPU call ------------------------------------------------------------------------------

Outputs = dict[tuple[int, ...], tuple[list[int], str]]  # prompt ids -> (output ids, stop reason)


def generate_batch(model, prompts: list[tuple[list[int], int]], eos: list[int], pad: int, deadline: float,
                   batch_tokens: int = 400_000, max_rows: int = 160, log=print) -> Outputs:
    """Greedy outputs of many prompts, (ids, max new tokens) each, decoded a batch at a time: shortest
    first (most files per second), rows padded on the left, a batch sized so rows × (prompt + budget)
    stays under `batch_tokens`. Stops starting batches once the last one's pace says the next would end
    past `deadline` (time.time()). Returns prompt → (output ids cut before the end token, stop reason)."""
    import torch

    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i][0]) + prompts[i][1])
    device = next(model.parameters()).device
    results: Outputs = {}
    start, pace = 0, 0.0  # pace: seconds per output token slot of the last batch
    while start < len(order):
        rows = []
        while start + len(rows) < len(order) and len(rows) < max_rows:
            i = order[start + len(rows)]
            width = max(len(prompts[j][0]) + prompts[j][1] for j in [*rows, i])
            if rows and width * (len(rows) + 1) > batch_tokens:
                break
            rows.append(i)
        new = max(prompts[i][1] for i in rows)
        if pace and time.time() + pace * new * 0.6 > deadline:  # outputs end near the file's length
            log(f"generate: deadline; {len(results)} of {len(prompts)} prompts decoded")
            break
        width = max(len(prompts[i][0]) for i in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            p = prompts[i][0]
            ids[r, width - len(p):] = torch.tensor(p)
            mask[r, width - len(p):] = 1
        t0 = time.time()
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=new,
                                 do_sample=False, temperature=None, top_p=None, top_k=None,
                                 eos_token_id=eos, pad_token_id=pad)
        out = out[:, width:].tolist()
        took = time.time() - t0
        pace = took / max(1, max(len(o) for o in out))
        for r, i in enumerate(rows):
            seq = out[r]
            cut = next((k for k, t in enumerate(seq) if t in eos), None)
            body = seq if cut is None else seq[:cut]
            reason = "eos" if cut is not None else "max_new_tokens"
            results[tuple(prompts[i][0])] = (body[:prompts[i][1]], reason)
        log(f"generate: batch of {len(rows)} rows, prompt ≤ {width}, ≤ {new} new, {took:.1f} s; "
            f"{len(results)}/{len(prompts)} done")
        start += len(rows)
    return results


def load_gguf(gguf: Path, device: str):
    """The GGUF's weights, dequantized to bf16 on `device` (the same loader `editllm model prepare` uses)."""
    from editllm.editor.models import load_gguf_dense

    return load_gguf_dense(gguf).to(device).eval()


def save_bf16(adapter: Path) -> None:
    """Rewrite the peft adapter's weights in bfloat16: half the bytes, what the model computes in."""
    import torch
    from safetensors.torch import load_file, save_file

    path = adapter / "adapter_model.safetensors"
    weights = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(path).items()}
    save_file(weights, path, metadata={"format": "pt"})


def run(args: argparse.Namespace) -> None:
    """Distil (if tasks and time allow), then train for the time left; every phase logs to stderr."""
    import torch
    from editllm.editor.edit import EditOptions
    from editllm.editor.models import LoadedModel
    from editllm.training.data import read_jsonl
    from editllm.training.distill import Task, distill, prompt_of, replay
    from editllm.training.sft import TrainConfig, encode_example, eos_id, train
    from transformers import AutoTokenizer

    t0 = time.time()
    deadline = t0 + 60 * args.minutes

    def log(msg: str) -> None:
        print(f"[{time.time() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(args.pack / "tokenizer")
    model = load_gguf(Path(args.gguf), args.device) if args.gguf else load_hf(args.hf, args.device)
    log(f"model loaded on {args.device}")
    lm = LoadedModel(model, tokenizer, args.gguf or args.hf, args.device, torch.bfloat16, time.time() - t0)
    eos = eos_id(tokenizer)
    distilled = []
    tasks_file = args.pack / "tasks.jsonl.gz"
    if args.distill_minutes > 0 and tasks_file.exists():
        with gzip.open(tasks_file, "rt", encoding="utf-8") as f:
            drawn = [json.loads(line) for line in f][:args.tasks]
        opts = EditOptions(mode="rewrite")
        tasks = [(d["label"], d["path"], Task.from_json(d)) for d in drawn]
        prompts = {i: prompt_of(lm, path, task, opts) for i, (_, path, task) in enumerate(tasks)}
        log(f"prompts built for {len(tasks)} tasks")
        if args.max_new:
            prompts = {i: p and (p[0], min(p[1], args.max_new)) for i, p in prompts.items()}
        usable = [i for i, p in prompts.items() if p is not None]
        log(f"{len(usable)} of {len(tasks)} tasks have a prompt")
        until = min(deadline - 60 * args.train_minutes, time.time() + 60 * args.distill_minutes)
        if args.decoder == "spec":  # editllm's spec mode on the static engine, a task at a time
            fast = LoadedModel(model, tokenizer, lm.name, args.device, torch.bfloat16, 0.0, "static")
            counts = distill(fast, len(usable), out / "distill.jsonl.gz", tasks=[tasks[i] for i in usable],
                             opts=EditOptions(mode="spec", max_new_tokens=args.max_new), deadline=until)
            fast.engine.close()  # its cache's memory goes back to training
        else:
            ends = sorted({eos, tokenizer.eos_token_id} - {None})
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else ends[0]
            outputs = generate_batch(model, [prompts[i] for i in usable], ends, pad, until, args.batch_tokens, log=log)
            decoded = [tasks[i] for i in usable if tuple(prompts[i][0]) in outputs]
            counts = distill(lm, len(decoded), out / "distill.jsonl.gz", tasks=decoded,
                             opts=EditOptions(mode="rewrite", generate=replay(outputs)))
        log(f"distilled: {dict(counts)}")
        distilled = read_jsonl(out / "distill.jsonl.gz")
    seqs = load_encoded(args.pack / "synthetic.npz") if (args.pack / "synthetic.npz").exists() else []
    earlier = load_encoded(args.pack / "distilled.npz") if (args.pack / "distilled.npz").exists() else []
    seqs += (earlier + [encode_example(tokenizer, ex, eos) for ex in distilled]) * args.distill_repeat
    log(f"training on {len(seqs)} sequences ({len(earlier)} distilled earlier and {len(distilled)} now, "
        f"× {args.distill_repeat}); {sum(len(ids) > args.max_len for ids, _ in seqs)} longer than --max-len "
        f"{args.max_len} are left out")
    torch.manual_seed(args.seed)
    seconds = deadline - time.time() - args.save_seconds
    cfg = TrainConfig(steps=args.steps, lr=args.lr, lora_r=args.lora, batch_tokens=args.batch_train_tokens,
                      max_len=args.max_len, seed=args.seed, save_every=10**9, warmup=args.warmup,
                      max_seconds=seconds, padded=not args.per_sequence)
    _, history = train(model, tokenizer, [], cfg, out / "adapter", resume=False, encoded=seqs, init=args.init_adapter,
                       on_step=lambda s, loss: log(f"step {s} loss {loss:.4f}") if s % 10 == 0 else None)
    save_bf16(out / "adapter")
    log(f"saved {out / 'adapter'}: {len(history)} steps, loss {history[0]['loss']} -> {history[-1]['loss']}")


def load_hf(path: str, device: str):
    """An HF model folder in bf16 (tests: a tiny random model in place of the bundled GGUF)."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).to(device).eval()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m editllm.training.lease", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="here: draw tasks, encode the synthetic examples")
    p.add_argument("--synthetic", type=Path, required=True)
    p.add_argument("--distilled", type=Path, action="append", default=[], help="examples distilled before "
                   "(training/data/distill-*.jsonl.gz); repeat the option for several files")
    p.add_argument("--tasks", type=int, default=1500, help="distillation tasks to draw (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="bundled:1.5b")
    p.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("distill", help="here, on a CPU: distil what a lease would (spec mode, torch, bf16)")
    d.add_argument("--tasks", type=int, default=1500)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--exclude", type=Path, action="append", default=[], help="earlier distillations, whose "
                   "tasks are left out (repeatable)")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--minutes", type=float, required=True, help="no task is begun after this long")
    d.add_argument("--model", default="bundled:1.5b")
    d.add_argument("--max-prompt", type=int, default=2500)
    r = sub.add_parser("run", help="on the GPU: distil in batches, then train")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--gguf", help="the bundled model's GGUF")
    src.add_argument("--hf", help="an HF model folder (tests)")
    r.add_argument("--pack", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--device", default="cuda")
    r.add_argument("--minutes", type=float, default=8.0, help="the whole call's budget, loading included")
    r.add_argument("--distill-minutes", type=float, default=2.0)
    r.add_argument("--train-minutes", type=float, default=3.0, help="kept for training whatever distilling takes")
    r.add_argument("--save-seconds", type=float, default=20.0)
    r.add_argument("--tasks", type=int, default=None, help="use the first N packed tasks (dry runs)")
    r.add_argument("--max-new", type=int, default=None, help="cap on each output (dry runs)")
    r.add_argument("--distill-repeat", type=int, default=2, help="each distilled example's weight in training")
    r.add_argument("--batch-tokens", type=int, default=800_000, help="generation: rows × (prompt + budget)")
    r.add_argument("--decoder", choices=["batch", "spec"], default="batch",
                   help="distillation's decoding: transformers' generate over length-sorted batches (session 13), "
                        "or editllm's spec mode on the static engine a task at a time (its drafts copy the file: "
                        "~20+ tokens a forward on these edits; lossless up to bf16 near-ties; untimed on a GPU)")
    r.add_argument("--lora", type=int, default=8)
    r.add_argument("--lr", type=float, default=3e-4)
    r.add_argument("--steps", type=int, default=2000, help="planned; fitted to the time left after warm-up")
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--batch-train-tokens", type=int, default=16384)
    r.add_argument("--max-len", type=int, default=4096)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--init-adapter", type=Path, default=None, help="start from this adapter (same rank): a "
                   "later lease goes on training the shipped selector")
    r.add_argument("--per-sequence", action="store_true", help="one forward per sequence (session 13's run) "
                   "instead of one padded forward per batch")
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.synthetic, args.tasks, args.seed, model_tokenizer_dir(args.model), args.out, args.distilled)
    elif args.command == "distill":
        distill_here(args.tasks, args.seed, args.exclude, args.out, args.minutes, args.model, args.max_prompt,
                     log=lambda msg: print(msg, file=sys.stderr, flush=True))
    else:
        run(args)


if __name__ == "__main__":
    main()
