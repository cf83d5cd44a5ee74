"""The copy-mode grammar: program AST, parser, oracle, and the token-level matcher."""

from editllm.grammar.program import Copy, Gen, Op, ProgramError, check, oracle, parse, render, resolve

__all__ = ["Copy", "Gen", "Op", "ProgramError", "check", "oracle", "parse", "render", "resolve"]
