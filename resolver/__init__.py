"""Resolving programs: the text a program denotes, and the token ids a copy appends to the KV cache."""

from editllm.resolver.resolve import CopySource, Resolver, resolve_program

__all__ = ["CopySource", "Resolver", "resolve_program"]
