"""The resolver: one input file under copy mode, seen from a program's side.

Two jobs, for the decoder and for any backend that receives a program (a server, training data):
the text a program denotes (program → text, refusing what the grammar the model wrote under could not
state, e.g. monotonic spans past the size where a CFG states them), and the token ids each copy
appends to the KV cache. Copied lines are tokenized as one chunk, the way the tokenizer would write
that text, and cached per span, so a copy costs one forward pass and no sampling steps.
"""

from __future__ import annotations

from editllm.grammar.program import Copy, Op, check, parse, resolve, split_lines
from editllm.grammar.tokens import text_ids


class Resolver:
    """The input file's lines, the text of a program over them, and the token ids for any span."""

    def __init__(self, tokenizer, source_text: str, lines: list[str] | None = None) -> None:
        """`lines`: `split_lines(source_text)`, when the caller has it (`SourceFile.lines`)."""
        self.tokenizer = tokenizer  # None: text only
        self.lines = split_lines(source_text) if lines is None else lines
        self._cache: dict[tuple[int, int], list[int]] = {}

    def text(self, program: str | list[Op], monotonic: bool = False) -> str:
        """Deterministic and lossless: the new text under the program (ProgramError if it is not one
        for this file: it does not parse, a span is out of range, or spans go back when `monotonic`)."""
        ops = parse(program) if isinstance(program, str) else program
        if monotonic:
            check(ops, len(self.lines), monotonic=True)
        return resolve(ops, self.lines)  # checks ranges itself

    def span(self, copy: Copy) -> str:
        return "".join(self.lines[copy.i - 1 : copy.j])

    def tokens(self, copy: Copy) -> list[int]:
        """What a closed copy tag appends to the cache: lines I..J as one chunk."""
        key = (copy.i, copy.j)
        if key not in self._cache:
            self._cache[key] = text_ids(self.tokenizer, self.span(copy))
        return self._cache[key]

    def all_tokens(self) -> list[int]:
        """The whole file, tokenized as one chunk (the drafter's extra source in copy mode)."""
        return self.tokens(Copy(1, len(self.lines))) if self.lines else []


CopySource = Resolver  # the name training/sft.py imports


def resolve_program(program: str | list[Op], source_text: str, monotonic: bool = False) -> str:
    """The new text of `source_text` under the program (see `Resolver.text`)."""
    return Resolver(None, source_text).text(program, monotonic)
