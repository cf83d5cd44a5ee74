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

from dataclasses import dataclass


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
