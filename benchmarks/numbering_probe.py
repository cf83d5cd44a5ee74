"""Probe: tokens of copy-prompt line-numbering variants, and the share of a copy's fed tokens (the file
tokenized as one chunk) that are the same tokens at the same characters in the prompt: what
`--copy-kv reuse` can take from the prompt instead of computing.

    python benchmarks/numbering_probe.py TOKENIZER_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VARIANTS = {
    "  12| line (before issue 22)": lambda k, width: f"{k:>{width}}| ",
    "12<TAB>line": lambda k, width: f"{k}\t",
    "12|line (now)": lambda k, width: f"{k}|",
    "12:line": lambda k, width: f"{k}:",
    "12 line": lambda k, width: f"{k} ",
}
CASES = ["heldout_bugfix.jsonl", "humaneval_single.jsonl", "humaneval_bugfix.jsonl"]


def measure(tok, texts: list[str], number) -> tuple[int, int, int, int]:
    """(numbered tokens, plain tokens, fed tokens found in the prompt, fed tokens)."""
    shown = plain = found = fed = 0
    for text in texts:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        width = len(str(len(lines)))
        where: dict[int, int] = {}  # file character -> prompt character
        prompt, at = "", 0
        for k, line in enumerate(lines, 1):
            prompt += number(k, width)
            for i in range(len(line) + 1):
                where[at + i] = len(prompt) + i
            prompt += line + "\n"
            at += len(line) + 1
        enc = tok(prompt, add_special_tokens=False, return_offsets_mapping=True)
        tokens = {tuple(o): t for t, o in zip(enc["input_ids"], enc["offset_mapping"], strict=True)}
        body = tok("".join(line + "\n" for line in lines), add_special_tokens=False, return_offsets_mapping=True)
        shown += len(enc["input_ids"])
        plain += len(body["input_ids"])
        for t, (a, b) in zip(body["input_ids"], body["offset_mapping"], strict=True):
            fed += 1
            pa, pb = where.get(a), where.get(b - 1)
            found += pa is not None and pb == pa + b - 1 - a and tokens.get((pa, pb + 1)) == t
    return shown, plain, found, fed


def main() -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(sys.argv[1])
    here = Path(__file__).resolve().parent / "cases"
    texts = [json.loads(line)["before"] for name in CASES for line in (here / name).read_text().splitlines()
             if line.strip()]
    for name, number in VARIANTS.items():
        shown, plain, found, fed = measure(tok, texts, number)
        print(f"{name:30} {shown / plain:.2f}x the file's tokens; fed tokens in the prompt {found / fed:.1%}")


if __name__ == "__main__":
    main()
