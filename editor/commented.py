"""A removal the model wrote as commented-out code: the lines go, as asked.

A probe (session 35) asked a Dockerfile to "remove the HEALTHCHECK"; the 1.5B model wrote the two lines back with
`# ` in front of each, exit 0. Whoever asks for lines to go wants them gone, not kept as dead text to be deleted by
hand. So when the instruction asks for something to go (and says nothing of comments: "comment out X" is another
ask), lines the output writes as exactly the file's lines with a comment marker in front, one of which holds a
word of what is to go (`drift.removal_lines`), are taken out, and the session says so.
"""

from __future__ import annotations

import re

from editllm.editor.align import line_opcodes
from editllm.editor.blocks import is_blank
from editllm.editor.drift import REMOVES, removal_lines

MARKERS = ("#", "//", "--", ";", "%")  # shell/Python/YAML, C-like, SQL/Lua/Haskell, INI/Lisp, TeX/Erlang
COMMENTS = re.compile(r"\bcomment", re.I)  # "comment out the HEALTHCHECK", "keep it as a comment": asked for
# A comment the model writes to say what it did, beside the lines it commented out (a probe, session 36)
NARRATION = re.compile(r"^\s*(?:#|//|--|;|%)\s*(?:remov|delet|drop|no longer|not needed|unused)\w*\b", re.I)


def commented(old_line: str, new_line: str) -> bool:
    """Whether `new_line` is `old_line` (not blank) behind a comment marker."""
    text, body = new_line.strip(), old_line.strip()
    return bool(body) and any(text.startswith(m) and text[len(m):].strip() == body for m in MARKERS)


def uncomment_removals(old: list[str], new: list[str], instruction: str) -> tuple[list[str], list[int]]:
    """`new` with the commented-out lines of a removal taken out (and a comment of the model's own among them that
    says so: "// Remove the badStatus case"), and the indices in `old` of the lines they were; `new` itself and []
    when there are none."""
    if not REMOVES.search(instruction) or COMMENTS.search(instruction):
        return new, []
    asked = None
    drop: set[int] = set()
    gone: list[int] = []
    for op, i1, i2, j1, j2 in line_opcodes(old, new):
        if op != "replace":
            continue
        pairs, i = [], i1  # each written line the next old line of the stretch, commented out (in order)
        for j in range(j1, j2):
            if is_blank(new[j]):
                continue
            if NARRATION.match(new[j]):  # "// Remove the badStatus case" above what it comments out
                pairs.append((None, j))
                continue
            while i < i2 and not commented(old[i], new[j]):
                i += 1
            if i == i2:
                break
            pairs.append((i, j))
            i += 1
        else:
            if not any(i is not None for i, _ in pairs):
                continue
            # a commented line itself names what goes: not a line of the same function commented out for another ask
            asked = removal_lines(old, instruction, whole_blocks=False) if asked is None else asked
            if not any(i in asked for i, _ in pairs):
                continue
            drop.update(j for _, j in pairs)
            gone += [i for i, _ in pairs if i is not None]
            if (j1 == 0 or is_blank(new[j1 - 1])) and j2 < len(new) and is_blank(new[j2]) \
                    and all(is_blank(new[j]) or j in drop for j in range(j1, j2)):
                drop.add(j2)  # the blank line after them, where one is already before: no double gap
    if not drop:
        return new, []
    return [line for j, line in enumerate(new) if j not in drop], gone
