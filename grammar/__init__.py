"""The copy-mode grammar, the lowest layer: program AST, parser, oracle, the CFG (and its outlines
output type) and the token-level matcher. It imports nothing from editllm's other packages."""

from editllm.grammar.cfg import lark_grammar, output_type
from editllm.grammar.program import Copy, Gen, Op, ProgramError, check, oracle, parse, render, resolve, split_lines

__all__ = ["Copy", "Gen", "Op", "ProgramError", "check", "lark_grammar", "oracle", "output_type", "parse", "render",
           "resolve", "split_lines"]
