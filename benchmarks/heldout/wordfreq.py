"""Word frequencies for a text: what the search index and the tag cloud use."""

import re
import string
from collections import Counter

STOP_WORDS = frozenset("a an and are as at be by for from in is it of on or that the to was with".split())
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def words(text):
    """The words of `text`, lower-cased, with surrounding punctuation and possessive 's removed."""
    out = []
    for match in WORD.finditer(text):
        word = match.group().lower().strip(string.punctuation)
        if word.endswith("'s"):
            word = word[:-2]
        if word:
            out.append(word)
    return out


def word_counts(text, skip_stop_words=True):
    """Counter of the words of `text`, optionally without the stop words."""
    counts = Counter(words(text))
    if skip_stop_words:
        for stop in STOP_WORDS & counts.keys():
            del counts[stop]
    return counts


def top_words(text, n=3):
    """The `n` most frequent words; ties broken alphabetically so the result is stable."""
    counts = word_counts(text)
    return [w for w, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]]


def sentences(text):
    """Split on ., ! and ? followed by whitespace; drop empty pieces."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
