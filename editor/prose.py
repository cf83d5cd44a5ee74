"""Prompt wording for prose files (Markdown, reST, plain text): issue 19's multi-edit lever.

Why a wording of its own: the code wording ("a precise code editor … apply exactly the change") reads
as one change to a 1.5B model. A prose request such as "fix the spelling mistakes" is many small
changes scattered over the file, and the model stopped after the first one or two (measured on the
prose bench, `benchmarks/prose_probe.py`). The prose wording says that the request may apply in many
places, that every line has to be checked for it, and that every other character stays as it is
(links, badges and code blocks are where a small model "improves" text nobody asked about).

The wording depends only on the file's language class, never on the file or the instruction, so it
can live in the prompt's fixed part. `WORDINGS` holds the variants the probe compared; `WORDING` names
the one the editor uses (None: the code wording, as before).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from editllm.editor.align import line_opcodes
from editllm.editor.languages import is_prose


@dataclass(frozen=True)
class Wording:
    """The system prompt and the request after the instruction, for a prose file."""

    system: str
    tail: str


WORDINGS: dict[str, Wording] = {
    # check every line, keep every other character
    "every-line": Wording(
        "You are a meticulous copy editor. You are given one text file and an instruction. The "
        "instruction may apply in many places: check every line of the file for it and apply it "
        "everywhere it applies. Change nothing else: every other character stays exactly as it is.",
        "Output the complete updated file in one fenced code block: every line, changed or not. Go "
        "through the file line by line and make the requested edit wherever it is needed. Keep links, "
        "URLs, badges, code blocks, punctuation and line breaks exactly as they are.",
    ),
    # the same, with one worked example of a multi-place edit (a few-shot hint of what "every" means)
    "example": Wording(
        "You are a meticulous copy editor. You are given one text file and an instruction. The "
        "instruction may apply in many places: check every line of the file for it and apply it "
        "everywhere it applies. Change nothing else: every other character stays exactly as it is.\n\n"
        "Example. Instruction: Fix the spelling mistakes.\n"
        "Before:\nInstal the pacakge with pip.\nSee the [docs](https://example.org/docs) for more.\n"
        "Run `tool --help` to see teh options.\n"
        "After:\nInstall the package with pip.\nSee the [docs](https://example.org/docs) for more.\n"
        "Run `tool --help` to see the options.",
        "Output the complete updated file in one fenced code block: every line, changed or not. Go "
        "through the file line by line and make the requested edit wherever it is needed. Keep links, "
        "URLs, badges, code blocks, punctuation and line breaks exactly as they are.",
    ),
}

WORDING: str | None = "every-line"  # what rewrite_prompt uses for prose files; None: the code wording


def wording() -> Wording | None:
    """The prose wording in use, or None for the code wording (the probe's baseline)."""
    return None if WORDING is None else WORDINGS[WORDING]
CHUNKS = False  # edit a long prose file in parts (editor.prosefocus); the probe switches it


GUARD = True  # spelling_only on prose files; the probe switches it off to measure without
HINTS = True  # a spelling request names the words a spell checker flags (editor.spelling); the probe switches it
WORDS = True  # spelling focus: a spelling request shows the model only the lines of the flagged words (prosefocus)


def request_hint(file_text: str, instruction: str, words: tuple[str, ...] | None = None) -> str:
    """The per-request prompt line for a prose file: the spell checker's flagged words (`words` when
    spelling focus chose them over the whole file, else those of `file_text`) when the instruction asks
    for spelling fixes, else ""."""
    if not HINTS or not asks_spelling(instruction):
        return ""
    from editllm.editor.spelling import hint

    return hint(file_text, words)


def guard(path: str, shown: str, edited: str, instruction: str, ends: bool = True) -> str:
    """The model's text for a file shown as `shown` (the file, or a section of it); on prose files its leading
    blank lines kept, its trailing ones too (`reflow.keep_end_blanks`: a section's last blank line dropped joined
    the next heading to it, a real-model run in session 34), and `spelling_only` applied. `ends=False` (the whole
    file shown under --allow-deletions, whose output is taken as it is): the trailing blank lines are not put back."""
    from editllm.editor.reflow import keep_end_blanks
    from editllm.editor.source import split_lines

    if not GUARD or not is_prose(path):
        return edited
    kept = keep_leading_blanks(shown, edited)
    if ends:
        kept = "".join(keep_end_blanks(split_lines(shown), split_lines(kept), instruction))
    return spelling_only(shown, kept, instruction)


def keep_leading_blanks(shown: str, edited: str) -> str:
    """The blank lines `shown` starts with, put back where the model dropped them.

    Measured on the prose bench: a text that starts with a blank line (a README chunk, a section) came
    back without it, because right after the prefilled opening fence the model skips to the first
    words. No instruction on such a text asks for that line to go."""
    lead = len(shown) - len(shown.lstrip("\n"))
    have = len(edited) - len(edited.lstrip("\n"))
    return "\n" * (lead - have) + edited if have < lead else edited


SPELLING = re.compile(r"\b(spelling|spell|typos?|misspell\w*)\b", re.I)
# A wording the instruction asks for beside the spelling ("fix the typos, and make every "default true" comment say
# "defaults to true"": a probe, session 37, got spelling focus, which showed the model none of those lines)
ASKED_WORDING = re.compile(r"\b(?:make|change|replace|reword|rephrase|rewrite|rename|say|read)\b[^.;]*?"
                           r"(?:[\"\u201c`]|(?<=\s)')", re.I)  # an opening quote, not "the author's"


def asks_spelling(instruction: str) -> bool:
    """Whether the instruction asks for spelling fixes and no wording of its own: the spelling guard, hints and
    focus are for it."""
    return bool(SPELLING.search(instruction)) and not ASKED_WORDING.search(instruction)


WORD = re.compile(r"\w+|\s+|[^\w\s]")
# a misspelling is a few letters off ("Permision", "evalution"); a word spelt out is not ("admin" → "administrator",
# dpkg's "conffile" → "configuration file": a probe's unasked changes)
SPELLING_LENGTH = 3
SIMILAR = 0.5  # a spelling fix keeps most letters ("pacakge" → "package" 0.86, "teh" → "the" 0.67, "si" → "is" 0.5)


def spelling_only(shown: str, edited: str, instruction: str) -> str:
    """For a spelling request, keep only the changes shaped like spelling fixes; put the rest back.

    Why: asked to "fix the spelling mistakes", the 1.5B model also rewrites a sentence or a link now
    and then, which the user did not ask for and must then find in the diff (precision, issue 19). A
    spelling fix changes words inside a line into similar words; it never adds or removes a line,
    touches punctuation or markup, or replaces a word by an unrelated one. Lines whose change is not
    of that shape are restored from `shown`. Other instructions are left alone. It looks only at the
    finished text, so rewrite and spec (identical outputs) stay identical.
    """
    if not asks_spelling(instruction):
        return edited
    old, new = shown.splitlines(keepends=True), edited.splitlines(keepends=True)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in line_opcodes(old, new):
        if tag == "equal":
            out += new[j1:j2]
        elif tag == "replace" and i2 - i1 == j2 - j1:
            out += [kept_ending(a, b) if spelling_fix(a.rstrip("\n"), b.rstrip("\n")) else a
                    for a, b in zip(old[i1:i2], new[j1:j2], strict=True)]
        else:
            out += old[i1:i2]  # lines added or removed: never a spelling fix
    return "".join(out)


def kept_ending(old: str, new: str) -> str:
    """`new` with `old`'s line ending: the shown text's last line may lack a newline that the model's
    always has (a file or a part that ends without one); a spelling fix changes words, not that."""
    return new.rstrip("\n") + old[len(old.rstrip("\n")):]


def spelling_fix(old: str, new: str) -> bool:
    """Whether `new` differs from `old` only by words replaced with similar words, outside markup: a code
    fence line is never a spelling fix (its info string, ```python3, names a language, not a word)."""
    from editllm.editor.prompt import FENCE_LINE  # prompt imports this module

    if FENCE_LINE.match(old) or FENCE_LINE.match(new):
        return old == new
    a, b = WORD.findall(old), WORD.findall(new)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        was, now = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag != "replace" or not re.fullmatch(r"[\w' -]+", was) or not re.fullmatch(r"[\w' -]+", now):
            return False
        if difflib.SequenceMatcher(None, was.lower(), now.lower()).ratio() < SIMILAR or \
                abs(len(was) - len(now)) > SPELLING_LENGTH:
            return False
    return True
