"""Where the span selector departs from the gold program, teacher-forced: its greedy choice at every token
the selector is trained on, given the gold program before it.

Why: tests passed and exact match say that a program was wrong, `where_edited` where its edit landed; this
says which decision was wrong first. The tokens of each case's gold program (`sft.encode_example`'s
sequence: the copy prompt, the ops, the copied lines after each copy tag) are sorted into copy tags (the
line numbers among them), gen markup, gen text that repeats the input lines it stands in for, gen text
that changes them, and the final EOS; per kind, how often the model's argmax is the gold token, and per
case, the kind of the first token where it is not. The copy-mode FSM is not applied (nearly every
departure is a legal token: a wrong digit of a line number, a wrong word of a fix).

    python -m editllm.bench.selector_probe --adapter selector/qwen2.5-coder-1.5b \\
        --cases benchmarks/cases/heldout_bugfix.jsonl

On the torch engine, bf16, the CPU: about 8 s a case here.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import time
from collections import Counter
from pathlib import Path

KINDS = ("copy tag", "gen markup", "gen, as the input", "gen, changed", "eos")


def labelled(tokenizer, ex, eos: int) -> tuple[list[int], list[str | None]]:
    """A gold program's training sequence (`sft.encode_example`'s ids) and, per token, its kind (None: prompt
    and copied lines, untrained)."""
    from editllm.grammar.program import Copy, replaced
    from editllm.training.sft import program_tokens

    prompt, pieces = program_tokens(tokenizer, ex)
    lines = ex.shown()[0].splitlines(True)
    ops = [op for op, _, _ in pieces]
    ids, kinds = list(prompt), [None] * len(prompt)
    for k, (op, op_ids, copied) in enumerate(pieces):
        ids += op_ids + copied
        if isinstance(op, Copy):
            kinds += ["copy tag"] * len(op_ids) + [None] * len(copied)
            continue
        start, end = replaced(ops, k, len(lines))
        same = [False] * len(op.text)
        for _, b, size in difflib.SequenceMatcher(None, "".join(lines[start:end]), op.text,
                                                  autojunk=False).get_matching_blocks():
            same[b:b + size] = [True] * size
        text_at = len("<gen>")  # the text's offset in the rendered op, whose character spans come from here
        spans = tokenizer(op.render(), add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        for s, e in spans:
            if e <= text_at or s >= text_at + len(op.text):
                kinds.append("gen markup")
            else:
                kinds.append("gen, as the input" if all(same[max(s, text_at) - text_at:e - text_at])
                             else "gen, changed")
    return ids + [eos], kinds + ["eos"]


def probe(lm, cases: Path) -> dict:
    """Per kind: tokens, argmax right, mean loss; per case: the kind of the first departure."""
    import torch
    from editllm.training.data import Example
    from editllm.training.sft import eos_id

    right, count, loss, first = Counter(), Counter(), Counter(), Counter()
    eos = eos_id(lm.tokenizer)
    for line in cases.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case.get("after") is None:
            continue
        ex = Example(case.get("path", "m.py"), case["instruction"], case["before"], case["after"], "eval").finish()
        if ex is None:
            continue
        ids, kinds = labelled(lm.tokenizer, ex, eos)
        trained = [p for p in range(1, len(ids)) if kinds[p] is not None]  # token p is predicted at p - 1
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([ids]),
                              logits_to_keep=torch.tensor([p - 1 for p in trained])).logits[0].float()
        gold = torch.tensor([ids[p] for p in trained])
        losses = torch.nn.functional.cross_entropy(logits, gold, reduction="none").tolist()
        hits = (logits.argmax(-1) == gold).tolist()
        for p, hit, value in zip(trained, hits, losses, strict=True):
            count[kinds[p]] += 1
            right[kinds[p]] += hit
            loss[kinds[p]] += value
        first[next((kinds[p] for p, hit in zip(trained, hits, strict=True) if not hit), "none")] += 1
    return {"kinds": {k: {"tokens": count[k], "right": round(right[k] / count[k], 3),
                          "mean_loss": round(loss[k] / count[k], 3)} for k in KINDS if count[k]},
            "first_departure": dict(first.most_common()), "cases": sum(first.values())}


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = argparse.ArgumentParser(prog="python -m editllm.bench.selector_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", default=None, help="the selector (default: the base model alone)")
    parser.add_argument("--cases", type=Path, action="append", required=True)
    parser.add_argument("--model", default="bundled:1.5b")
    args = parser.parse_args(argv)
    from editllm import api

    lm = api.load_model(args.model, "cpu", "bfloat16", args.adapter, False, log=lambda m: None, engine="torch")
    for cases in args.cases:
        start = time.time()
        result = probe(lm, cases)
        print(json.dumps({"cases_file": str(cases), "seconds": round(time.time() - start), **result}), flush=True)


if __name__ == "__main__":
    main()
