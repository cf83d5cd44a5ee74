"""The copy-program grammar as a CFG (Lark syntax, as llguidance reads it), and as an outlines type.

For a file of N lines the line rules are finite, so a grammar can state them: every copy has
1 <= I <= J <= N and, when monotonic, starts past the previous copy's last line. Stated exactly they
take about N² alternatives (which lines may follow which), so up to `EXACT_LIMIT` alternatives the
grammar states them; past it the grammar allows any line numbers, and the resolver
(`Resolver.text(..., monotonic=True)`) or the matcher refuses the rest.

`after` starts the grammar past line `after`: what a request to a server carries once a program has
copied up to that line (the ranges after the last one used).

The decoder's own matcher (grammar.matcher) uses the loose grammar for any N and states the line
rules itself, exactly and cheaply; it also keeps line numbers out of its grammar-forced tokens.
"""

from __future__ import annotations

EXACT_LIMIT = 10_000  # alternatives: N = 99 lines; compiles in 0.4 s here (N = 50: 0.1 s, N = 140: 0.8 s)

# The gen body is a lazy lexeme so `</gen>` ends it even inside merged tokens such as `></`.
_GEN = ['gen: "<gen>" gen_body', "gen_body[lazy]: /(?s:.*)<\\/gen>/"]
_OPEN = '"<copy lines=\\""'
_CLOSE = '"\\"/>"'


def lark_grammar(n_lines: int | None = None, monotonic: bool = True, after: int = 0) -> str:
    """The program grammar for a file of `n_lines` lines (None: line numbers are not checked)."""
    if n_lines is None or exact_size(n_lines, after) > EXACT_LIMIT:
        return "\n".join(["start: op*", "op: copy | gen", f'copy: {_OPEN} NUM "-" NUM {_CLOSE}', *_GEN,
                          "NUM: /[1-9][0-9]*/"])
    if not monotonic:
        pairs = [f'"{i}-" (' + " | ".join(f'"{j}"' for j in range(i, n_lines + 1)) + ")" for i in range(1, n_lines + 1)]
        copy = f"copy: {_OPEN} ({' | '.join(pairs)}) {_CLOSE}" if pairs else "copy: NEVER"
        return "\n".join(["start: op*", "op: copy | gen", copy, *_GEN, "NEVER: /[^\\s\\S]/"])
    # after_k: the rest of a program that has copied up to line k; from_k: a copy tag after line k,
    # once `<copy lines="` is written; upto_i: its `J"/>` once `I-` is written.
    rules = [f"start: after_{after}", *_GEN]
    for k in range(after, n_lines + 1):
        rules.append(f"after_{k}: gen* ({_OPEN} from_{k})?" if k < n_lines else f"after_{k}: gen*")
        if k < n_lines:
            rules.append(f"from_{k}: " + " | ".join(f'"{i}-" upto_{i}' for i in range(k + 1, n_lines + 1)))
    for i in range(after + 1, n_lines + 1):
        rules.append(f"upto_{i}: " + " | ".join(f'"{j}\\"/>" after_{j}' for j in range(i, n_lines + 1)))
    return "\n".join(rules)


def exact_size(n_lines: int, after: int = 0) -> int:
    """Alternatives the exact grammar needs: one per (I, J) pair, twice over."""
    m = max(0, n_lines - after)
    return m * (m + 1)


def output_type(n_lines: int, monotonic: bool = True, after: int = 0):
    """The copy-program grammar as an outlines output type: `outlines.Generator(model, output_type(n))`
    makes any outlines model (transformers, llama.cpp, vLLM, SGLang) write copy programs for a file of
    `n_lines` lines. outlines' default CFG backend is llguidance, the matcher underneath our decoder."""
    from outlines.types import CFG

    return CFG(lark_grammar(n_lines, monotonic, after))
