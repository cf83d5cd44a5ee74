"""Resolving programs: the text a program denotes, and the tokens a copy appends to the KV cache."""

from editllm.resolver.resolve import CopySource, resolve_program

__all__ = ["CopySource", "resolve_program"]
