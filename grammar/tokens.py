"""Token ids and text: the text of one token id, decoded once per tokenizer; and text encoded as text.

Why: the decode loop looks at each output token's text alone (the stop check's "can it complete the fence?",
copy mode's FSM text), tens of thousands of times an edit, and one `decode` through transformers' tokenizer
costs ~12 µs of Python. The texts are kept per tokenizer object for the process, so each id is decoded once
for every file edited. Here, in the lowest layer, because both `grammar.matcher` and `editor.decode` use it.

A file or an instruction may hold a special token's text (`<|im_end|>` in a chat library's source): tokenized
as a prompt is, that text became the control token, so the model's input ended its turn mid-file, and the model,
copying it, ended its output there (a file cut short, written with exit 0). `text_ids` and `chat_ids` read it
as ordinary characters; every tokenization of a file's or a request's text goes through them.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

# Weakly keyed by the tokenizer object itself (an `id()` may be reused by another tokenizer once one is collected).
_TEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SPECIALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLAIN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> its pipeline reading specials as text
_PLAIN_LOCK = threading.Lock()


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


def special_texts(tokenizer: Any) -> tuple[str, ...]:
    """The texts a tokenizer reads as one control token (`<|im_end|>`, `<|endoftext|>`, `<|fim_prefix|>`...),
    longest first; found once per tokenizer."""
    found = _SPECIALS.get(tokenizer)
    if found is None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        texts = {t.content for t in backend.get_added_tokens_decoder().values() if t.special} if backend \
            else set(getattr(tokenizer, "all_special_tokens", ()))
        found = tuple(sorted(texts, key=len, reverse=True))
        _SPECIALS[tokenizer] = found
    return found


def has_special_text(tokenizer: Any, text: str) -> bool:
    return any(s in text for s in special_texts(tokenizer))


def plain_encoding(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and character offsets of `text` with every special token's text read as ordinary characters.

    Through a copy of the tokenizer's pipeline with `encode_special_tokens` on, made once per tokenizer:
    transformers' `split_special_tokens=True` switches that flag on the one shared pipeline for each call, so
    threads tokenizing at once (files sent to a server in parallel) would read each other's setting."""
    plain = _PLAIN.get(tokenizer)
    if plain is None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:  # a slow (Python) tokenizer: no shared flag to race on
            enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True)
            return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
        from tokenizers import Tokenizer

        with _PLAIN_LOCK:
            plain = _PLAIN.get(tokenizer)
            if plain is None:
                plain = Tokenizer.from_str(backend.to_str())
                plain.encode_special_tokens = True
                _PLAIN[tokenizer] = plain
    enc = plain.encode(text, add_special_tokens=False)
    return list(enc.ids), [tuple(o) for o in enc.offsets]


def text_encoding(tokenizer: Any, text: str) -> dict[str, list]:
    """Ids and character offsets of `text` read as text: a file or instruction that holds `<|im_end|>` gives
    the model those characters, never the control token (which would end its turn, or its output, there)."""
    if not has_special_text(tokenizer, text):
        return tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = plain_encoding(tokenizer, text)
    return {"input_ids": ids, "offset_mapping": offsets}


def text_ids(tokenizer: Any, text: str) -> list[int]:
    """`text_encoding`'s ids."""
    if not has_special_text(tokenizer, text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return plain_encoding(tokenizer, text)[0]


def chat_encoding(tokenizer: Any, text: str, user: tuple[int, int]) -> tuple[list[int], list[tuple[int, int]]]:
    """Ids and offsets of a rendered prompt whose characters `user` (start, end) are the request's (path, file,
    instruction): special tokens are read as control tokens only outside them, where the chat template put
    them. A request without such text is tokenized in one piece, as before; one with it in three (the
    request starts after the template's newline and ends before its end-of-turn token, so no token spans a
    cut)."""
    a, b = max(0, min(user[0], len(text))), max(0, min(user[1], len(text)))
    if a >= b or not has_special_text(tokenizer, text[a:b]):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    ids: list[int] = []
    offsets: list[tuple[int, int]] = []
    for start, end, plain in ((0, a, False), (a, b, True), (b, len(text), False)):
        if start == end:
            continue
        if plain:
            part_ids, part_offsets = plain_encoding(tokenizer, text[start:end])
        else:
            enc = tokenizer(text[start:end], add_special_tokens=False, return_offsets_mapping=True)
            part_ids, part_offsets = enc["input_ids"], enc["offset_mapping"]
        ids.extend(part_ids)
        offsets.extend((x + start, y + start) for x, y in part_offsets)
    return ids, offsets


def chat_ids(tokenizer: Any, text: str, user: tuple[int, int]) -> list[int]:
    """`chat_encoding`'s ids."""
    a, b = user
    if a >= b or not has_special_text(tokenizer, text[a:b]):
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return chat_encoding(tokenizer, text, user)[0]
