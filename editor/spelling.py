"""Spell-checker hints for a spelling request on a prose file (issue 19's recall lever).

Why: asked to "fix the spelling mistakes" in a README, the bundled 1.5B model fixed about one typo in
three (`benchmarks/results/cpu-1.5b-prose-levers`): it reads a long text and overlooks most misspelled
words, though it fixes nearly every one it is pointed at. A dictionary finds them cheaply, so the prompt
names the words a spell checker does not know and the model decides what each should be (some are
names or technical terms that are right as they are); `prose.spelling_only` still keeps only
spelling-shaped changes. No correction is suggested: the dictionary's likeliest word is often wrong
("execuable" → "execrable"), where the model, pointed at the word, writes "executable". The hint
depends on the file, so it goes into the prompt's per-request part.

What is flagged, and why each rule (prose text only: code blocks, inline code, links and tags are not
prose): a lowercase word of at least five letters (capitalised words are mostly names, short ones mostly
abbreviations), written once in the file (a word that recurs is a term of the text, not a slip), not in
the file's inline code (identifiers), and not a British spelling of a known word. The dictionary is
pyspellchecker's English word list (a dependency); without it there is no hint and nothing else changes.
"""

from __future__ import annotations

import re
from functools import lru_cache

from editllm.editor.prompt import FENCE_LINE, underline

INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)[^\n]+?(?<!`)\1(?!`)")  # a code span: `x`, ``x`` (equal backtick runs)
NOT_PROSE = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>\n]+>")  # link targets, bare URLs, HTML tags
CANDIDATE = re.compile(r"(?<![\w.'/-])[a-z]{5,}(?![\w'/-])")
BRITISH = (("our", "or"), ("ise", "ize"), ("isa", "iza"), ("yse", "yze"), ("ence", "ense"))
MAX_HINTS = 40  # a file full of unknown words is not a text with a few typos: say nothing then


@lru_cache(maxsize=1)
def checker():
    """pyspellchecker's English checker (loaded once, ~0.3 s), or None when it is not installed."""
    try:
        from spellchecker import SpellChecker
    except ImportError:
        return None
    return SpellChecker()


def prose_lines(text: str) -> list[str]:
    """The text's prose: lines outside fenced and indented code blocks, with inline code, link targets,
    URLs and tags blanked out."""
    return [line for _, line in numbered_prose(text.split("\n"))]


def numbered_prose(lines: list[str]) -> list[tuple[int, str]]:
    """`prose_lines` with each prose line's index among `lines`. An indented line is code only where an
    indented code block can start (CommonMark: after a blank line or more code); right after a prose
    line it continues that paragraph or list item."""
    out, fenced, code = [], False, False
    for k, line in enumerate(lines):
        if FENCE_LINE.match(line) and (fenced or not underline(lines, k)):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith(("    ", "\t")) and line.strip():
            code = code or k == 0 or not lines[k - 1].strip()
        elif line.strip():
            code = False
        if code or not line.strip():
            continue
        out.append((k, NOT_PROSE.sub(" ", INLINE_CODE.sub(" ", line))))
    return out


def suspects(text: str) -> list[str]:
    """The words the spell checker flags, in text order; [] without the dictionary or when too many
    words are unknown to be typos."""
    return flagged(prose_lines(text), text)


def flagged(prose: list[str], text: str) -> list[str]:
    """`suspects` given the text's prose lines (`prose_lines`), so a caller that also needs where they
    stand scans the text once."""
    spell = checker()
    if spell is None:
        return []
    words = [w for line in prose for w in CANDIDATE.findall(line)]
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    code = set(re.findall(r"[a-z]+", " ".join(m.group(0) for m in INLINE_CODE.finditer(text)).lower()))
    unknown = spell.unknown([w for w, n in counts.items() if n == 1 and w not in code])
    found = [w for w in dict.fromkeys(words)  # text order, once each
             if w in unknown and not spell.known([w.replace(a, b) for a, b in BRITISH if a in w])]
    return found if len(found) <= MAX_HINTS else []


def suspect_lines(lines: list[str]) -> list[tuple[int, tuple[str, ...]]]:
    """(line index, flagged words in it) for each prose line of the file `lines` holding a word that
    `suspects` flags over the whole file, in file order: what spelling focus shows the model."""
    prose = numbered_prose([line.rstrip("\r\n") for line in lines])
    found = set(flagged([line for _, line in prose], "".join(lines)))
    out = []
    for k, line in prose:
        words = tuple(dict.fromkeys(w for w in CANDIDATE.findall(line) if w in found))
        if words:
            out.append((k, words))
    return out


def alternatives(word: str, limit: int = 4) -> list[str]:
    """Known words one edit from `word` (two when none is one away), most frequent first: what it may be a
    misspelling of. The model chooses; the dictionary alone often ranks a rarer word first."""
    spell = checker()
    if spell is None:
        return []
    found = [w for w in (spell.candidates(word) or ()) if w != word and w.isalpha()]
    return sorted(found, key=lambda w: (-spell.word_usage_frequency(w), w))[:limit]


# Name each word's likely corrections in the hint. Off: on the 12 tuning typo cases (spelling focus) it
# lowered recall (the model kept "coolrs" when offered "colors, cools, coolers"); the probe's `+alts`.
ALTERNATIVES = False


def hint(text: str, words: tuple[str, ...] | None = None) -> str:
    """The prompt line naming the flagged words (`words`, else those `suspects` finds in `text`), or ""
    when there are none."""
    found = list(words) if words is not None else suspects(text)
    if not found:
        return ""
    named = []
    for w in found:
        alts = alternatives(w) if ALTERNATIVES else []
        named.append(f"{w} (maybe {' or '.join(alts)})" if alts else w)
    return ("A spell checker does not know these words; fix the ones that are misspelled (some may be names "
            f"or technical terms that are right as they are): {', '.join(named)}.")
