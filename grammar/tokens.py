"""The text of one token id, decoded once per tokenizer.

Why: the decode loop looks at each output token's text alone (the stop check's "can it complete the fence?",
copy mode's FSM text), tens of thousands of times an edit, and one `decode` through transformers' tokenizer
costs ~12 µs of Python. The texts are kept per tokenizer object for the process, so each id is decoded once
for every file edited. Here, in the lowest layer, because both `grammar.matcher` and `editor.decode` use it.
"""

from __future__ import annotations

import weakref

# Weakly keyed by the tokenizer object itself (an `id()` may be reused by another tokenizer once one is collected).
_TEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def token_text(tokenizer, token: int) -> str:
    """`token` decoded alone, special tokens kept and spaces as they are (a byte of a multi-byte character
    decodes to U+FFFD, as it does alone)."""
    texts = _TEXTS.get(tokenizer)
    if texts is None:
        texts = _TEXTS.setdefault(tokenizer, {})
    text = texts.get(token)
    if text is None:
        text = texts[token] = tokenizer.decode([token], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return text
