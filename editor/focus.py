"""Focus: when the instruction names top-level definitions, the model edits only those.

Measured on the bench (bundled 1.5B, spec mode): asked to fix one named function, the model passed
the tests of 3/8 single-function files but only 1/8 multi-function modules: around the function it
must fix, a long module is mostly distraction, and every extra line is a chance to drift. So when
the instruction names definitions (and does not ask for file-wide changes such as a rename), the
model is given a small file: the module's import lines and the named definitions, in file order.
Its output is merged back by definition name (`wholefile.merge_code`), so the rest of the file is
kept byte for byte by construction, not by the model's care.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from editllm.editor.source import split_lines
from editllm.editor.wholefile import REMOVAL, is_blank, mentioned, merge_code, split_blocks

# Instructions whose edit may reach beyond the named definitions: these see the whole file.
FILE_WIDE = re.compile(r"\b(rename|every|everywhere|all|call ?sites?|callers?|usages?|uses|references?|"
                       r"throughout|whole|entire|file|module|imports?)\b", re.I)
IMPORT = re.compile(r"^(?:import|from)\s+\S")
MAX_SHARE = 0.6  # focus only when the named definitions are a minority of the file


@dataclass(frozen=True)
class Focus:
    """The part of a file the model sees, and the definitions it holds."""

    text: str
    names: tuple[str, ...]


def focus_of(text: str, instruction: str) -> Focus | None:
    """The import lines plus the named top-level definitions, or None when focusing would not help
    (nothing named, a file-wide instruction, a name defined twice, or most of the file named)."""
    if FILE_WIDE.search(instruction) or REMOVAL.search(instruction):  # a removal must see what it removes
        return None
    lines = split_lines(text)
    blocks = split_blocks(lines, 0)
    named = [b for b in blocks if b.name and mentioned(b.name, instruction)]
    if not named or len({b.name for b in named}) < len(named):
        return None
    content = sum(1 for line in lines if not is_blank(line))
    if sum(len(b.lines) for b in named) > MAX_SHARE * content:
        return None
    kept = [b for b in blocks if b in named or (b.name is None and all(IMPORT.match(x) for x in b.lines))]
    body = "".join("".join(b.lines + (b.blank if b is not kept[-1] else [])) for b in kept)  # the file's spacing
    return Focus(body if body.endswith("\n") else body + "\n", tuple(b.name for b in named))


def merge_focus(text: str, edited: str, instruction: str) -> str:
    """Put the edited definitions (and any new ones or new imports) back into the whole file."""
    merged = merge_code(split_lines(text), split_lines(edited), instruction)
    if merged is None:  # focus_of only focuses files with named definitions
        raise AssertionError("merge_focus on a file without definitions")
    return "".join(merged)
