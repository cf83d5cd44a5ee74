"""What does the model write right after the last line of a file, per way of wrapping the file?

    OMP_WAIT_POLICY=PASSIVE python benchmarks/fence_probe.py prose_cfgv_1 prose_fire_1 ...

For each prose case and each wrapper, the prompt is built as the rewrite prompt would be, the
assistant turn is prefilled with the opening wrapper and the case's whole gold text (as if the model
had written the file correctly), and the model greedily writes a few more tokens. Those tokens show
how it closes the file: the wrapper alone (clean), or a line of three backticks first (the issue-19
corruption), or prose. One prefill and a few steps per probe, instead of a whole-file decode.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from editllm.editor.models import load_model
from editllm.editor.prompt import SYSTEM, fence_for
from transformers import DynamicCache

CASES = Path(__file__).resolve().parent / "cases" / "prose.jsonl"
TAIL = "Output the complete updated file {how}: every line, changed or not. Change only what the instruction asks for."


def wrappers(text: str) -> dict[str, tuple[str, str, str]]:
    """name -> (opening line, closing line, how the prompt names the wrapper)."""
    ticks = fence_for(text)
    tildes = "~" * max(3, 1 + max((len(r) for r in text.split() if set(r) == {"~"}), default=0))
    return {
        "backticks": (f"{ticks}markdown", ticks, "in one fenced code block"),
        "tildes": (f"{tildes}markdown", tildes, "in one fenced code block"),
        "tags": ("<file>", "</file>", "between <file> and </file>"),
    }


def prompt(tok, path: str, text: str, instruction: str, opening: str, closing: str, how: str) -> str:
    user = (f"File: {path}\n\n{opening}\n{text}{closing}\n\nInstruction: {instruction}\n\n"
            + TAIL.format(how=how))
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + opening + "\n"


@torch.inference_mode()
def continuation(lm, text: str, steps: int = 10) -> str:
    ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    cache = DynamicCache(config=lm.model.config)
    out = []
    logits = lm.model(input_ids=torch.tensor([ids]), past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    for _ in range(steps):
        token = int(logits[0, -1].argmax())
        if token == lm.tokenizer.convert_tokens_to_ids("<|im_end|>"):
            out.append(token)
            break
        out.append(token)
        logits = lm.model(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True,
                          logits_to_keep=1).logits
    return lm.tokenizer.decode(out, skip_special_tokens=False)


def main(ids: list[str]) -> None:
    cases = {c["id"]: c for c in map(json.loads, CASES.read_text().splitlines())}
    lm = load_model("bundled:1.5b", device="cpu", dtype="auto")
    for case_id in ids:
        case = cases[case_id]
        for name, (opening, closing, how) in wrappers(case["after"]).items():
            start = time.perf_counter()
            text = prompt(lm.tokenizer, case["path"], case["before"], case["instruction"], opening, closing, how)
            cont = continuation(lm, text + case["after"])
            print(json.dumps({"case": case_id, "wrapper": name, "closing": closing, "wrote": cont,
                              "clean": cont.startswith(closing), "seconds": round(time.perf_counter() - start, 1)}),
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
