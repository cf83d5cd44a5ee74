"""Definitions an edit changes that have nothing to do with what the instruction names: a note.

A real-model probe of large files (session 34) asked to "Change lsStreamConcurrency from 5 to 10." in cacache's
entry-index.js; the model did, and also rewrote the body of `find()` (a reduce over the bucket's entries became one
over `lsStream`, a change of behaviour), exit 0 and no word. Focus shows the model only the definitions an instruction
names, but a constant, a key or a plain word gets no focus, so the whole file is rewritten and anything in it may
drift. When the instruction names things of the file, a top-level definition whose changed lines mention none of
them, and which is not named itself, is noted for review. Noted, not put back or refused: the model may have had a
reason (a caller adjusted to a new signature, a helper fixed along the way), and putting back half an edit can break
the other half. Instructions that name nothing of the file ("add type hints", "use f-strings") are not judged.
"""

from __future__ import annotations

import re
from collections import Counter

from editllm.editor.blocks import DEF, split_blocks
from editllm.editor.languages import language
from editllm.editor.prose import is_prose
from editllm.editor.source import split_lines
from editllm.editor.unfinished import DETERMINERS

WORD = re.compile(r"[A-Za-z_$][\w$]*")
DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")  # `Writer.pool`, `self.cache`
CODE_LIKE = re.compile(r"[_\d$]|[a-z][A-Z]|^[A-Z]{3,}$")  # snake_case, camelCase, `$el`, `v2`, LIMIT: not everyday
# A kind of definition next to a word makes it a name ("the pool method"); not "plugin versions" or "the Go section"
KIND = (r"(?:functions?|methods?|class(?:es)?|helpers?|variables?|constants?|fields?|attributes?|propert(?:y|ies)|"
        r"parameters?|arguments?|structs?|enums?|types?|interfaces?|traits?|macros?)")


def named(instruction: str, old_text: str) -> set[str]:
    """The names of `old_text` the instruction speaks of: words that occur in the file as words and are code-shaped,
    quoted, called (`parse()`), dotted (`Writer.pool`), next to a kind word ("the pool method"), or the name of a
    definition of the file."""
    in_file = set(WORD.findall(old_text))
    defs = {m[1].rsplit(".", 1)[-1] for line in old_text.split("\n") if (m := DEF.match(line.strip()))}
    out: set[str] = set()
    for m in WORD.finditer(instruction):
        word, before, after = m[0], instruction[:m.start()], instruction[m.end():]
        if word not in in_file:
            continue
        if any(before.endswith(q) and after.startswith(q) for q in "`'\"") or after.startswith("("):
            out.add(word)  # `A`, parse(): code, whatever the word
        elif word.lower() not in DETERMINERS and (CODE_LIKE.search(word) or word in defs or re.search(
                rf"\b{KIND}\s+$", before, re.I) or re.match(rf"\s+{KIND}\b", after, re.I)):
            out.add(word)
    for m in DOTTED.finditer(instruction):
        out.update(part for part in m[0].split(".") if part in in_file)
    return out


def short(name: str) -> str:
    """A definition's own name (`Writer.pool` → `pool`, `impl Foo for Bar` names stay whole)."""
    return name.rsplit(".", 1)[-1]


def drifted(path: str, old_text: str, new_text: str, instruction: str) -> list[str]:
    """The top-level definitions the edit changes that nothing ties to what the instruction names (see the module's
    docstring). Tied: a definition that mentions a named thing before or after the edit, and every definition such a
    one uses, at any depth (a bug told by its symptom, "day_of_year is off by one", is fixed in the `is_leap_year`
    that `days_in_month` calls for it). [] for prose, data files and instructions that name nothing of the file."""
    if old_text == new_text or is_prose(path) or language(path) in ("", "json", "toml", "yaml"):
        return []
    asked = named(instruction, old_text)
    if not asked:
        return []
    old_blocks, new_blocks = split_blocks(split_lines(old_text), 0), split_blocks(split_lines(new_text), 0)
    blocks = old_blocks + new_blocks
    frontier = [b for b in blocks if asked & set(WORD.findall(b.text))]
    tied = set(asked) | {short(b.name) for b in frontier if b.name}
    while frontier:
        used = set(WORD.findall("\n".join(b.text for b in frontier)))
        frontier = [b for b in blocks if b.name and short(b.name) not in tied and short(b.name) in used]
        tied |= {short(b.name) for b in frontier}
    before, after = Counter(b.name for b in old_blocks), Counter(b.name for b in new_blocks)
    now = {b.name: b for b in new_blocks}
    return [b.name for b in old_blocks if b.name and short(b.name) not in tied and before[b.name] == after[b.name] == 1
            and now[b.name].lines != b.lines]


def drifted_note(path: str, names: list[str]) -> str:
    """The note for definitions changed beyond what the instruction names."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f"{path}: note: the edit also changes {shown}, which the instruction does not speak of; check "
            f"{'it' if len(names) == 1 else 'they'} should change")
