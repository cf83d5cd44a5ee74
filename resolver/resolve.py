"""program → text, and at run time: the token ids a closed copy tag appends to the cache.

Copied lines are tokenized as one chunk, the way the tokenizer would write that text, and cached
per span, so a copy costs one forward pass and no sampling steps.
"""

from __future__ import annotations

from editllm.grammar.program import Copy, Op, check, parse, resolve, split_lines


def resolve_program(program: str | list[Op], source_text: str, monotonic: bool = False) -> str:
    """Deterministic and lossless: the new text of `source_text` under the program."""
    ops = parse(program) if isinstance(program, str) else program
    lines = split_lines(source_text)
    check(ops, len(lines), monotonic)
    return resolve(ops, lines)


class CopySource:
    """The input file's lines and the token ids for any span of them."""

    def __init__(self, tokenizer, source_text: str) -> None:
        self.tokenizer = tokenizer
        self.lines = split_lines(source_text)
        self._cache: dict[tuple[int, int], list[int]] = {}

    def all_tokens(self) -> list[int]:
        """The whole file, tokenized as one chunk (the drafter's extra source in copy mode)."""
        return self.tokens(Copy(1, len(self.lines))) if self.lines else []

    def text(self, copy: Copy) -> str:
        return "".join(self.lines[copy.i - 1 : copy.j])

    def tokens(self, copy: Copy) -> list[int]:
        key = (copy.i, copy.j)
        if key not in self._cache:
            self._cache[key] = self.tokenizer(self.text(copy), add_special_tokens=False)["input_ids"]
        return self._cache[key]
