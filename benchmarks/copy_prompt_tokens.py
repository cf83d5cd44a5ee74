"""Copy prompt tokens per call (issue 22): today's prompt against the one before issue 22 (its git
revision), the fixed prefix left out (a saved prompt state holds it), with and without focus, and
the rewrite/spec prompt beside them. Needs only the tokenizer.

    python benchmarks/copy_prompt_tokens.py TOKENIZER_DIR [--before 9c19903] [CASES.jsonl ...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path


def old_prompt_module(rev: str):
    """editor/prompt.py as it was at `rev`, imported on its own."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "-C", str(root), "show", f"{rev}:editor/prompt.py"], capture_output=True,
                            text=True, check=True).stdout
    path = Path("/tmp") / f"editllm_prompt_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"editllm_prompt_{rev}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from editllm.editor import prompt as new
    from editllm.editor.focus import focus_of
    from transformers import AutoTokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tokenizer")
    ap.add_argument("cases", nargs="*", type=Path)
    ap.add_argument("--before", default="9c19903")
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    old = old_prompt_module(args.before)

    def n(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    prefix = n(new.copy_prefix(tok))
    print(f"fixed prefix: {prefix} tokens")
    here = Path(__file__).resolve().parent / "cases"
    for path in args.cases or [here / "humaneval_single.jsonl", here / "heldout_bugfix.jsonl",
                               here / "humaneval_bugfix.jsonl"]:
        cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        before = now = focused = spec = 0
        for c in cases:
            before += n(old.copy_prompt(tok, c["path"], c["before"], c["instruction"]))
            now += n(new.copy_prompt(tok, c["path"], c["before"], c["instruction"])) - prefix
            focus = focus_of(c["before"], c["instruction"])
            text = focus.text if focus else c["before"]
            focused += n(new.copy_prompt(tok, c["path"], text, c["instruction"])) - prefix
            spec += n(new.rewrite_prompt(tok, c["path"], text, c["instruction"]).text)
        print(f"{path.name}: {len(cases)} cases; copy prompt before {before}; now per call {now} "
              f"({now / before:.3f}x); with focus {focused} ({focused / before:.3f}x); spec prompt (focused) {spec}")
    held = [json.loads(line) for line in (here / "heldout_bugfix.jsonl").read_text().splitlines() if line.strip()]
    short = [c for c in held if c["before"].count("\n") <= 39]  # cases 22-33: the issues' short functions
    before = sum(n(old.copy_prompt(tok, c["path"], c["before"], c["instruction"])) for c in short)
    now = sum(n(new.copy_prompt(tok, c["path"], c["before"], c["instruction"])) - prefix for c in short)
    print(f"held-out short functions: {len(short)} cases; copy prompt before {before}; now per call {now} "
          f"({now / before:.3f}x)")
    shown = new.numbered
    for name, number in (("digits only, no separator", lambda k: str(k)), ("no line numbers at all", lambda k: "")):
        new.numbered = lambda text, number=number: "".join(  # noqa: E731 - the floor of any numbering
            f"{number(k) if line else ''}{line}\n" for k, line in enumerate(text.rstrip("\n").split("\n"), 1))
        floor = sum(n(new.copy_prompt(tok, c["path"], c["before"], c["instruction"])) - prefix for c in short)
        print(f"  with {name}: {floor} ({floor / before:.3f}x)")
    new.numbered = shown
    copy = spec = numbering = cases = 0  # issue 22: on modules with focus, <= the focused spec prompt + numbering
    for c in held:
        focus = focus_of(c["before"], c["instruction"])
        if c["before"].count("\n") <= 39 or focus is None:
            continue
        cases += 1
        copy += n(new.copy_prompt(tok, c["path"], focus.text, c["instruction"])) - prefix
        rewrite = new.rewrite_prompt(tok, c["path"], focus.text, c["instruction"])
        spec += n(rewrite.text) - n(rewrite.prefix)
        numbering += n(new.numbered(focus.text)) - n(focus.text)
    print(f"held-out modules with focus: {cases} cases; copy prompt per call {copy}; focused spec prompt per call "
          f"{spec} + its numbering {numbering} = {spec + numbering}")


if __name__ == "__main__":
    main()
