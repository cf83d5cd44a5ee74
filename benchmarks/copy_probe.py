"""Decision-point probe for `--copy-kv reuse` (issue 22): does taking copied lines' cache entries from
the prompt change what the model picks, on copy mode's own prompt and programs?

Teacher-forced on each case's ORACLE program (`grammar.oracle`), the way copy mode feeds it: the
program's tokens, each copy followed by its lines. `reread` computes everything in one forward;
`reuse` computes only what copy mode's reuse computes (program tokens, copied tokens the prompt does
not hold, the last TAIL tokens of each copy) and takes the rest from the prompt. At every position
where the model writes a program token, the argmax of both is compared, with the correct token.
Points are grouped: `after copy` (the first token after copied lines: where reuse acts most),
`keeps copying` (the same, where the correct program goes on copying: each copy of at least 2×SPLIT
lines is split in two, so after its first half the right next op is a copy of the rest), and
`other` (tag digits, gen text, the rest).

    python benchmarks/copy_probe.py --cases benchmarks/cases/humaneval_single.jsonl --limit 4 \\
        [--model bundled:1.5b] [--engine torch] [--dtype float32] [--tail 1,4,16]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import torch
from editllm.editor.copykv import PromptCopies
from editllm.editor.copymode import copy_prompt_ids
from editllm.editor.engine import Reuse
from editllm.editor.models import load_model
from editllm.editor.source import split_lines
from editllm.grammar.program import Copy, Op, oracle

SPLIT = 3


def split_copies(ops: list[Op], least: int = SPLIT) -> list[Op]:
    """Each copy of >= 2*least lines as two copies: after the first, the right next op is a copy."""
    out: list[Op] = []
    for op in ops:
        if isinstance(op, Copy) and op.j - op.i + 1 >= 2 * least:
            mid = (op.i + op.j) // 2
            out += [Copy(op.i, mid), Copy(mid + 1, op.j)]
        else:
            out.append(op)
    return out


def teacher_forced(tokenizer, ops: list[Op], lines: list[str], eos: int):
    """The fed sequence: [(token id, is a program token, group of the point that predicts it)], the
    copies as (Copy, ids) items in place; the program's end is EOS."""
    items: list = []
    after_copy = None  # the copy just fed, if the next program token follows it
    for op in ops:
        ids = tokenizer(op.render(), add_special_tokens=False)["input_ids"]
        for n, t in enumerate(ids):
            group = "other"
            if n == 0 and after_copy is not None:
                group = "keeps copying" if isinstance(op, Copy) else "after copy"
            items.append((t, True, group))
        after_copy = None
        if isinstance(op, Copy):
            items.append((op, tokenizer("".join(lines[op.i - 1:op.j]), add_special_tokens=False)["input_ids"]))
            after_copy = op
    items.append((eos, True, "after copy" if after_copy is not None else "other"))
    return items


def predictions(engine, prompt: list[int], items, copies: PromptCopies | None):
    """Argmax predicting each program token (in order), and the tokens computed after the prompt."""
    engine.reset()
    first = engine.forward(prompt, keep=1)[0].argmax().item()
    parts: list[int | Reuse] = []
    program_at: list[int] = []  # index among computed tokens of the row predicting each program token
    computed = 0
    for item in items:
        if isinstance(item[0], Copy):
            copy, ids = item
            fed = copies.parts(copy, ids, prompt) if copies is not None else ids
            parts += fed
            computed += sum(1 for p in fed if not isinstance(p, Reuse))
            continue
        token, _, _ = item
        program_at.append(computed - 1)  # the row of the last computed token before it (-1: the prompt's)
        parts.append(token)
        computed += 1
    parts = parts[:-1]  # the final EOS is predicted, never fed
    computed -= 1
    rows = engine.forward_reuse(parts, keep=computed) if copies is not None else engine.forward(parts, keep=computed)
    best = rows.argmax(-1).tolist()
    return [first if at < 0 else best[at] for at in program_at], computed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=Path("benchmarks/cases/humaneval_single.jsonl"))
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--tail", default="1,4,16")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    lm = load_model(args.model, device="cpu", dtype=args.dtype, engine="torch")
    engine, tok = lm.engine, lm.tokenizer
    eos = sorted(engine.eos)[0]
    cases = [json.loads(line) for line in args.cases.read_text().splitlines() if line.strip()][: args.limit]
    tails = [int(t) for t in args.tail.split(",")]
    totals: dict = defaultdict(lambda: defaultdict(int))
    for case in cases:
        lines = split_lines(case["before"])
        prompt = copy_prompt_ids(lm, case["path"], case["before"], case["instruction"])
        for program, ops in (("oracle", oracle(case["before"], case["after"])),
                             ("split", split_copies(oracle(case["before"], case["after"])))):
            items = teacher_forced(tok, ops, lines, eos)
            truth = [it[0] for it in items if not isinstance(it[0], Copy)]
            groups = [it[2] for it in items if not isinstance(it[0], Copy)]
            start = time.perf_counter()
            ref, n_ref = predictions(engine, prompt, items, None)
            t_ref = time.perf_counter() - start
            for tail in tails:
                copies = PromptCopies(tok, case["path"], case["before"], case["instruction"], lines, prompt, tail)
                start = time.perf_counter()
                got, n_got = predictions(engine, prompt, items, copies)
                t_got = time.perf_counter() - start
                for g, r, w, want in zip(groups, ref, got, truth, strict=True):
                    if program == "split" and g != "keeps copying":
                        continue  # the split program adds only these points
                    d = totals[(tail, g)]
                    d["points"] += 1
                    d["same"] += r == w
                    d["reread correct"] += r == want
                    d["reuse correct"] += w == want
                t = totals[(tail, "tokens")]
                if program == "oracle":
                    t["computed reread"] += n_ref
                    t["computed reuse"] += n_got
                    t["seconds reread"] += t_ref
                    t["seconds reuse"] += t_got
            print(f"{case['id']} {program}: {len(truth)} program tokens; reread computed {n_ref}", flush=True)
    for (tail, group), d in sorted(totals.items()):
        print(f"tail {tail} {group}: " + ", ".join(f"{k} {round(v, 1)}" for k, v in d.items()))


if __name__ == "__main__":
    main()
