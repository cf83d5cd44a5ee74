"""Definitions an edit changes that have nothing to do with what the instruction names: a note.

A real-model probe of large files (session 34) asked to "Change lsStreamConcurrency from 5 to 10." in cacache's
entry-index.js; the model did, and also rewrote the body of `find()` (a reduce over the bucket's entries became one
over `lsStream`, a change of behaviour), exit 0 and no word. Focus shows the model only the definitions an instruction
names, but a constant, a key or a plain word gets no focus, so the whole file is rewritten and anything in it may
drift. When the instruction names things of the file, a top-level definition the edit changes that nothing ties to
them (it mentions none of them, before or after the edit, and no definition that does uses it) is noted for review.
Noted, not put back or refused: the model may have had a reason (a caller adjusted to a new signature, a helper
fixed along the way), and putting back half an edit can break the other half. Instructions that name nothing of the
file ("add type hints", "use f-strings") are not judged.

Data files (YAML, TOML, JSON) the same way, by key: the same probe asked to add `timeout-minutes: 10` to a workflow's
rustfmt job, and the model changed a build target of another job's matrix (`armv7-unknown-linux-musleabihf` →
`-musleabi`, a broken build), exit 0. A changed stretch none of whose lines' keys (their own and those above them)
nor words the instruction speaks of is noted by its key paths, when the instruction names a key of the file at all.
"""

from __future__ import annotations

import re
from collections import Counter

from editllm.editor.align import line_opcodes
from editllm.editor.asks import ADDING, AWAY, CONSTRUCTORS, GOES, RESHAPES, REWORKS, plain
from editllm.editor.blocks import (
    CLOSER,
    CONTAINER,
    DEF,
    IMPORT_LINE,
    Block,
    class_members,
    closing,
    header_size,
    indent_of,
    split_blocks,
)
from editllm.editor.errors import few
from editllm.editor.languages import is_config, language
from editllm.editor.prose import is_prose
from editllm.editor.source import split_lines
from editllm.editor.wholefile import (
    COMMENT_LINE,
    COMMON,
    GO_IMPORT,
    NAME_TOKEN,
    NOT_NEEDED,
    asks_shrinking,
    lost_lines,
)

WORD = re.compile(r"[A-Za-z_$][\w$]*")
DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+")  # `Writer.pool`, `self.cache`, `Registry::Find`
CODE_LIKE = re.compile(r"[_\d$]|[a-z][A-Z]|^[A-Z]{3,}$")  # snake_case, camelCase, `$el`, `v2`, LIMIT: not everyday
TARGET = re.compile(r"(?m)^\s*(?:(?:const|let|var|local|my|export)\s+)?([A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=(?!=)")
# A kind of definition next to a word makes it a name ("the pool method"); not "plugin versions" or "the Go section"
KIND = (r"(?:functions?|methods?|class(?:es)?|helpers?|variables?|constants?|fields?|attributes?|propert(?:y|ies)|"
        r"parameters?|arguments?|structs?|enums?|types?|interfaces?|traits?|macros?)")

# Where a clause starts: a plain word there is its verb ("add type hints" does not name a `def add`)
CLAUSE_START = re.compile(r"(?:^|[;:.!?]\s*|\b(?:then|also|please)\s+)$", re.I)


def named(instruction: str, old_text: str, units_of: frozenset[str] = frozenset()) -> set[str]:
    """The names of `old_text` the instruction speaks of: words that occur in the file as words and are code-shaped,
    quoted, called (`parse()`), dotted (`Writer.pool`), next to a kind word ("the pool method"), or the name of a
    definition of the file where it is not a clause's verb (a review, session 34: "add type hints" took `def add`
    for named, and every other definition the edit typed was noted). `units_of`: the own names of the file's
    definitions (`units`); a dotted name that ends in one names that one, not its owner (`Pool.Close`)."""
    in_file = set(WORD.findall(old_text))
    defs = {m[1].rsplit(".", 1)[-1] for line in old_text.split("\n") if (m := DEF.match(line.strip()))}
    targets = set(TARGET.findall(old_text))
    dotted = [(m, re.split(r"\.|::", m[0])) for m in DOTTED.finditer(instruction)]
    owners = {k for m, parts in dotted if parts[-1] in units_of | defs
              for k in range(m.start(), m.end() - len(parts[-1]))}  # `Pool` of `Pool.Close`
    out: set[str] = set()
    for m in WORD.finditer(instruction):
        word, before, after = m[0], instruction[:m.start()], instruction[m.end():]
        if word not in in_file or m.start() in owners:
            continue
        if any(before.endswith(q) and after.startswith(q) for q in "`'\"") or after.startswith("("):
            out.add(word)  # `A`, parse(): code, whatever the word
        elif CODE_LIKE.search(word) or (word in defs and not CLAUSE_START.search(before)):
            out.add(word)  # a definition named by a plain word, unless as the verb of a clause ("add type hints")
        elif word in targets and (re.search(rf"\b{KIND}\s+$", before, re.I) or re.match(rf"\s+{KIND}\b", after, re.I)):
            out.add(word)  # "the timeout variable"; not "every function must ...", where `must` is a word
    for _, parts in dotted:  # `Pool.Close` names Close: Pool's other methods, which mention `Pool`, are not tied by
        # it (a probe, session 40); `self.cache` names cache
        out.update([parts[-1]] if parts[-1] in units_of | defs else (part for part in parts if part in in_file))
    return out


def units(lines: list[str]) -> list[Block]:
    """The file's top-level definitions, with a class (or `impl`, or namespace) that holds two named members or more
    (or one that is itself such) given as its members, each named `Class.member`: a Java or C# file is one class, so
    an edit that changed a method the instruction does not speak of went unnoted beside the one it asked for (the
    class as a whole mentions it). A class's name stands for each of its members (`drifted`), so an instruction
    that names the class, or code that uses it, ties every member."""
    return [unit for b in split_blocks(lines, 0) for unit in _unit(b, "")]


def _unit(block: Block, owner: str) -> list[Block]:
    name = f"{owner}{block.name}" if block.name else None
    parts = class_members(block)
    if parts is not None:
        named = [m for m in parts if m.name]
        if len(named) >= 2 or len(named) == 1 and CONTAINER.match(named[0].lines[header_size(named[0]) - 1]):
            # the class's closing brace is no part of its last member: a method added after it (the commonest way
            # to add one) left that member "changed", and a probe (session 37) was told an untouched countAll changed
            end = closing(block.lines, header_size(block))
            if end and len(parts[-1].lines) > end:
                parts[-1] = Block(parts[-1].name, parts[-1].lines[:-end], parts[-1].blank)
            return [unit for m in parts for unit in _unit(m, f"{name}.")]
    return [block if name == block.name else Block(name, block.lines, block.blank)]


def short(name: str) -> str:
    """A definition's own name (`Writer.pool` → `pool`, `impl Foo for Bar` names stay whole)."""
    return name.rsplit(".", 1)[-1]


DATA = ("json", "toml", "yaml")
KEY = re.compile(r"""^\s*(?:-\s+)?["']?([\w.$@/-]+?)["']?\s*[:=](?:\s|$)""")  # `key:`, `- k: v`, `"k": v`, `k = v`
TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")  # TOML's `[tool.ruff]`, `[[bin]]`
COMMENT = re.compile(r"^\s*(?:#|//)")
TOKEN = re.compile(r"[A-Za-z0-9]+")
# Words of an instruction that name nothing in a data file
STOP = {"a", "an", "the", "to", "in", "on", "of", "for", "and", "or", "add", "set", "change", "make", "under", "after",
        "before", "with", "from", "into", "it", "its", "is", "be", "as", "at", "by", "this", "that", "new", "key",
        "value", "field", "entry", "section", "table", "file", "remove", "delete", "update", "use", "so", "then"}


QUOTED = re.compile(r""""(?:\\.|[^"\\])*"|'[^']*'""")


def _depth(text: str) -> int:
    """How many brackets and braces a TOML line opens (less those it closes), strings and comments aside."""
    bare = QUOTED.sub("", text).split("#", 1)[0]
    return bare.count("[") + bare.count("{") - bare.count("]") - bare.count("}")


def key_paths(lines: list[str], tag: str) -> list[tuple[str, ...]]:
    """Each line's keys: those of the lines that hold it (by indentation in YAML and JSON, by the table header in
    TOML) and its own, outermost first; () for a blank or comment line. A TOML value over several lines (an array,
    an inline table, a `\"\"\"` string) holds its lines under its key: a review (session 34) had the lines of
    `dependencies = [...]` read as the table's own, so "sort the dependencies" was noted as changing `project`."""
    out: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []  # (indent of the key, key) of the keys open above
    table: tuple[str, ...] = ()
    held: tuple[tuple[str, ...], str, int] | None = None  # TOML: the open value's key path, its quotes or its depth
    for line in lines:
        if held is not None:
            keys, quotes, depth = held
            out.append(keys)
            depth = depth if quotes else depth + _depth(line)
            held = None if (quotes and quotes in line) or (not quotes and depth <= 0) else (keys, quotes, depth)
            continue
        if not line.strip() or COMMENT.match(line):
            out.append(())
            continue
        if tag == "toml":
            if m := TABLE.match(line):
                table = tuple(part.strip().strip("\"'") for part in m[1].split("."))
                out.append(table)
                continue
            m = KEY.match(line)
            out.append(table + ((m[1],) if m else ()))
            if m:
                value = line[m.end():].strip()
                quotes = next((q for q in ('"""', "'''") if value.startswith(q) and value.count(q) == 1), "")
                depth = 0 if quotes else _depth(value)
                if quotes or depth > 0:
                    held = (out[-1], quotes, depth)
            continue
        m = KEY.match(line)
        indent = len(line) - len(line.lstrip(" -")) if m else len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        keys = tuple(key for _, key in stack)
        if m:
            stack.append((indent, m[1]))
            keys += (m[1],)
        out.append(keys)
    return out


def item_heads(lines: list[str]) -> list[str]:
    """Each YAML line's list item's first line (`- name: Build` for the `run:` under it), "" outside one: an item is
    named by its first line, and a review (session 34) had "change the Build step's command" note the `run:` line."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent of the dash, the item's first line) of the items open above
    for line in lines:
        if line.strip() and not COMMENT.match(line):
            indent = len(line) - len(line.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if line.lstrip().startswith("- ") or line.strip() == "-":
                stack.append((indent, line))
        out.append(stack[-1][1] if stack else "")
    return out


def drifted_keys(path: str, old_text: str, new_text: str, instruction: str,
                 old_lines: list[str] | None = None) -> list[str]:
    """The key paths of a data file the edit changes lines under that the instruction does not speak of (see the
    module's docstring): no key of the line's path and no word of the line is a word of the instruction."""
    tag = language(path)
    if tag not in DATA or old_text == new_text:
        return []
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9_][\w.-]*", instruction)}
    words |= {part for w in list(words) for part in re.split(r"[.]", w)}
    tokens = {t.lower() for t in TOKEN.findall(instruction)} - STOP
    old, new = split_lines(old_text) if old_lines is None else old_lines, split_lines(new_text)
    old_paths, new_paths = key_paths(old, tag), key_paths(new, tag)
    if not any(key.lower() in words for keys in old_paths for key in keys):
        return []  # "bump every action to v4": no key named, not judged

    def tied(line: str, keys: tuple[str, ...], head: str) -> bool:
        return not keys or any(k.lower() in words for k in keys) or bool(
            tokens & set(TOKEN.findall(line.lower() + " " + head.lower())))

    old_heads, new_heads = (item_heads(old), item_heads(new)) if tag == "yaml" else ([""] * len(old), [""] * len(new))
    out: list[str] = []
    for tag_, i1, i2, j1, j2 in line_opcodes(old, new):
        stretch = [*zip(old[i1:i2], old_paths[i1:i2], old_heads[i1:i2], strict=True),
                   *zip(new[j1:j2], new_paths[j1:j2], new_heads[j1:j2], strict=True)]
        if tag_ == "equal" or any(tied(*line) for line in stretch):
            continue  # a stretch the instruction speaks of goes whole (a step dropped with its `with:` lines)
        out += [".".join(keys) for _, keys, _ in stretch if keys and ".".join(keys) not in out]
    return list(dict.fromkeys(out))


DOCKERFILE = re.compile(r"^(?:Dockerfile|Containerfile)(?:\.[\w-]+)?$|\.dockerfile$", re.I)
FROM_LINE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+([\w.-]+))?", re.I)
LAST_STAGE = re.compile(r"\b(?:final|last|runtime|production|release)\s+(?:build\s+)?stage\b", re.I)


def drifted_stages(path: str, old_text: str, new_text: str, instruction: str) -> list[str]:
    """The stages of a multi-stage Dockerfile the edit changes when the instruction names another one ("the build
    stage", by its `AS` name; "the final stage"): a probe (session 37) asked to "remove curl from the build stage
    packages", and the model took it out of the runtime stage too, where the HEALTHCHECK still runs it, exit 0."""
    if not DOCKERFILE.search(path.rsplit("/", 1)[-1]) or old_text == new_text:
        return []
    old, new = split_lines(old_text), split_lines(new_text)

    def stages(lines: list[str]) -> list[tuple[int, str, str | None]]:
        return [(k, m[1], m[2]) for k, line in enumerate(lines) if (m := FROM_LINE.match(line))]

    before, after = stages(old), stages(new)
    if len(before) < 2 or [(image, name) for _, image, name in before] != [(i, n) for _, i, n in after]:
        return []  # one stage, or stages added, dropped or renamed: the edit is about them
    words = {w.lower() for w in re.findall(r"[\w.-]+", instruction)}
    asked = {k for k, (_, _, name) in enumerate(before) if name and name.lower() in words}
    asked |= {len(before) - 1} if LAST_STAGE.search(instruction) else set()
    if not asked:
        return []
    ends = [k for k, _, _ in before[1:]] + [len(old)]
    new_ends = [k for k, _, _ in after[1:]] + [len(new)]
    out = []
    for k, ((start, image, name), (new_start, _, _)) in enumerate(zip(before, after, strict=True)):
        if k not in asked and old[start:ends[k]] != new[new_start:new_ends[k]]:
            out.append(f"the {name} stage" if name else f"stage {k + 1} (FROM {image}, line {start + 1})")
    return out


def drifted(path: str, old_text: str, new_text: str, instruction: str, old_lines: list[str] | None = None) -> list[str]:
    """The top-level definitions the edit changes that nothing ties to what the instruction names (see the module's
    docstring). Tied: a definition that mentions a named thing before or after the edit, and every definition such a
    one uses, at any depth (a bug told by its symptom, "day_of_year is off by one", is fixed in the `is_leap_year`
    that `days_in_month` calls for it). Data files by key (`drifted_keys`); [] for prose and instructions that name
    nothing of the file. `old_lines`: `old_text` split, where the caller has it (the original is split once)."""
    if language(path) in DATA:
        return drifted_keys(path, old_text, new_text, instruction, old_lines)
    if DOCKERFILE.search(path.rsplit("/", 1)[-1]):
        return drifted_stages(path, old_text, new_text, instruction)
    if old_text == new_text or is_prose(path) or not language(path):
        return []
    old_blocks = units(split_lines(old_text) if old_lines is None else old_lines)
    asked = named(instruction, old_text, frozenset(short(b.name) for b in old_blocks if b.name))
    if not asked:
        return []
    new_blocks = units(split_lines(new_text))
    blocks = old_blocks + new_blocks
    words = [set(WORD.findall(b.text)) for b in blocks]
    owners = [set(b.name.split(".")[:-1]) if b.name else set() for b in blocks]  # a member's classes
    by_name: dict[str, list[int]] = {}  # each definition's own name → its blocks (before and after the edit)
    for k, b in enumerate(blocks):
        for name in {short(b.name)} | owners[k] if b.name else ():  # a class's name: each of its members
            by_name.setdefault(name, []).append(k)
    queue = [k for k in range(len(blocks)) if asked & (words[k] | owners[k])]  # "in Cart, ...": every member
    seen = set(queue)
    tied = set(asked) | {short(blocks[k].name) for k in queue if blocks[k].name}
    while queue:  # each block read once (a review, session 34: 5.7 s on a 5,000-deep call chain, level by level)
        for w in words[queue.pop()] & by_name.keys():
            fresh = [n for n in by_name[w] if n not in seen]
            seen.update(fresh)
            queue += fresh
            tied.add(w)
    # a class whose member is tied ties its constructor, where the state every member reads is set up (a heldout
    # case: "two carts share their items", told by `add`, is fixed in `Cart.__init__`'s mutable default)
    tied |= {c for k in seen for c in owners[k]} | (CONSTRUCTORS if any(owners[k] for k in seen) else set())
    before, after = Counter(b.name for b in old_blocks), Counter(b.name for b in new_blocks)
    now = {b.name: b for b in new_blocks}
    said = {w.lower() for w in WORD.findall(instruction) if len(w) >= 4} - {w.lower() for w in COMMON}
    return [".".join(b.name.split(".")[-2:]) for b in old_blocks if b.name and short(b.name) not in tied
            and before[b.name] == after[b.name] == 1 and now[b.name].lines != b.lines  # `Class.method` at most
            and not speaks_to(b.lines, now[b.name].lines, said)]


def speaks_to(old: list[str], new: list[str], said: set[str]) -> bool:
    """Whether the lines an edit takes out of (or rewrites in) a definition hold a word of the instruction (four
    letters or more, or one with up to three more): "Remove the AuditLog dependency entirely: ... every audit call"
    took `$this->audit->record(...)` out of `store` (a probe, session 36), which names no `AuditLog`. Not the lines
    it adds: logging added to a second function, asked for the first, holds the instruction's "log" too."""
    changed = set(old) - set(new)
    words = {w.lower() for line in changed for w in WORD.findall(line) if len(w) >= 4}
    return any(_same_word(w, s) for w in words for s in said)


# An instruction that asks for something added and for nothing else: no line of the file need go
ADDS = re.compile(rf"\b(?:{ADDING})\b", re.I)
CHANGES = re.compile(rf"\b(?:{GOES}|{REWORKS})\b", re.I)
REMOVES = re.compile(rf"\b(?:{AWAY})\b", re.I)
REWORKING = re.compile(rf"\b(?:{RESHAPES}|{REWORKS})\b", re.I)
# Words of a removal that name no part of the file
FILLER = {"the", "a", "an", "and", "or", "of", "in", "on", "at", "to", "from", "for", "with", "its", "this", "that",
          "these", "those", "all", "any", "every", "each", "line", "lines", "file", "code", "statement", "instruction",
          "block", "section", "entry", "step", "part", "one", "two", "three", "it", "them", "there", "here", "too",
          "also", "please", "now", "just", "only", "out", "rid", "get", "whole", "entire", "which", "is", "are", "be",
          "not", "no", "we", "our", "us", "you", "your", "function", "method", "class", "variable", "constant", "dead",
          "obsolete", "needed", "anymore", "longer", "used", "since", "because", "nothing", "calls", "never"}


def dropped_lines(path: str, old_text: str, new_text: str, instruction: str) -> list[int]:
    """Indices of code lines an edit takes out that the instruction does not ask to go: gone from the output (no
    copy of them left), and no line of the output is an edit of them. Comments aside (the model rewords them).

    Asked only for something added, any such line counts: a fuzz (session 35) had a whole-file output put a new
    statement in the place of `exports.parsePatch = parsePatch;`; the deletion checks judge runs of lines (five or
    more), so one line lost this way passed without a word. Asked to remove something, a line counts when it lies
    outside every top-level block holding a word of what is to go and not between two lines of such blocks taken out
    in one stretch (a Dockerfile's build stage, whose `COPY` lines name no "build"), and it is not what that removal
    leaves unused (an import only the removed code used): a probe (session 35) asked a Dockerfile to "remove the
    HEALTHCHECK", and the model also took out `EXPOSE 8000`, exit 0 (any removal word turns the deletion checks
    off). When no line of the file holds such a word ("delete the last query"), nothing is judged. Asked: a line
    that holds such a word, the deeper or closing lines of its statement, a definition (or a class's member) that
    went whole with such a line, and what lies between two of them taken out in one stretch: a second probe
    (session 36) removed a class's `console.log` calls and two lines of another method's logic, unnoted while the
    whole class counted as asked.
    A note, not a refusal: an addition may well replace a line (a call wrapped in the new logging)."""
    if NOT_NEEDED.search(instruction) or is_prose(path) or language(path) in DATA \
            or not (language(path) or is_config(path)):
        return []
    # a removal and nothing else: no shrinking, rewording or moving beside it ("remove X and shorten Y")
    said = plain(instruction)  # its words, not its code: "remove the Sorter class" asks for no sorting
    removal = bool(REMOVES.search(instruction)) and not REWORKING.search(said) \
        and not asks_shrinking(REMOVES.sub(" ", instruction))
    if not removal and not (ADDS.search(said) and not CHANGES.search(said) and not asks_shrinking(instruction)):
        return []
    old, new = split_lines(old_text), split_lines(new_text)
    ops, lost = lost_lines(old, new)
    sql = language(path) == "sql"  # a statement runs to its `;`, at any indentation (`CREATE VIEW v AS`, `SELECT`)
    asked: set[int] = set()  # the old lines that go with what the instruction asks to go
    if removal:
        if not (asked := removal_lines(old, instruction, whole_blocks=False)):
            return []
        taken = {k for run in lost.values() for k in run}
        kept = set(new)
        for k in sorted(asked) if sql else []:  # an SQL statement that names what goes, taken out, to its `;`
            while old[k] not in kept and not ends_statement(old[k]) and k + 1 < len(old):
                k += 1
                asked.add(k)
        for start, end in spans(old):  # a definition whose first line (or its `def` line) names what goes, and went
            head = next((k for k in range(start, end) if DEF.match(old[k].strip())), start)  # its own, not a
            if any(k in asked and k in taken for k in {start, head}):  # member's: "remove the __bool__ method of
                asked.update(range(start, end))  # TopologicalSorter" asked the whole class away (a probe, session 37)
        for run in lost.values():  # what lies between two lines of it went with it ("remove the build stage"),
            held = [k for k in run if k in asked]  # and a statement's deeper or closing lines with its first
            asked.update(k for k in run if held and held[0] < k < held[-1])
            for k in held:
                after = [j for j in run if j > k]
                for j in after:
                    if not (indent_of(old[j]) > indent_of(old[k]) or CLOSER.match(old[j])
                            and indent_of(old[j]) == indent_of(old[k])):
                        break
                    asked.add(j)
    gone = {w for n, run in lost.items() for k in run if k in asked for w in NAME_TOKEN.findall(old[k])}
    go = language(path) == "go"
    asked_text = {old[k].strip() for k in asked}  # a line written twice: the alignment may call either copy lost
    left = set(NAME_TOKEN.findall(new_text))
    out = []
    for n, run in lost.items():
        _, _, _, j1, j2 = ops[n]
        there = {w for line in new[j1:j2] for w in NAME_TOKEN.findall(line)}
        for k in run:
            names = set(NAME_TOKEN.findall(old[k])) - COMMON
            if k in asked or old[k].strip() in asked_text or (names & gone) - left and (
                    IMPORT_LINE.match(old[k]) or names <= gone) or go and GO_IMPORT.match(old[k]):
                continue  # asked to go, or what the removal left unused (`import math`, only `clamp` used it; a Go
                # import, which `goimports.fix_imports` drops, saying so, once no code uses it)
            if names and not names <= there and not COMMENT_LINE.match(old[k]):  # not joined into a line there
                out.append(k)  # (a signature's `target,` and `):` put on one line are no loss)
    return sorted(out)


def ends_statement(line: str) -> bool:
    """Whether an SQL line ends its statement: a `;` at its end, a `--` comment aside."""
    return line.split("--", 1)[0].rstrip().endswith(";")


# Where what a removal names ends: the clause, or another verb's ("... and disable the restart step")
OTHER_VERB = re.compile(r"[;!?]|\.(?![\w$])|\b(?:and|then|but)\s+(?:also\s+)?(?:disable|add|change|make|rename|"
                        r"update|set|move|use|keep|replace|fix|put|turn|call|log|return|throw|raise|write|insert|"
                        r"create|convert|comment|wrap|pass|send|read|print|handle|switch|let|leave|instead)\w*\b"
                        r"(?!\.[A-Za-z_$])", re.I)  # not a dot in a name (`log.debug`), nor a verb that is a name
# Where a removal says where from, not what ("the prune_backups call from main": main stays)
PLACE = re.compile(r"\b(?:from|in|inside|within|of|under|on|out of)\s+(?:the\s+|its\s+)?[`'\"]?[\w$.:/-]+(?:\(\))?"
                   r"[`'\"]?", re.I)


def removal_words(instruction: str) -> set[str]:
    """The words (lower case, filler aside) of what the instruction asks to remove: after each removal verb, up to
    the end of its clause or another verb, leaving out where from. A probe (session 36): "Remove the prune_backups
    call from main and disable the restart_service step" counted `main` and `restart_service` as asked away, and
    the model's commented-out `main "$@"` was taken out: the script no longer ran."""
    out: set[str] = set()
    for m in REMOVES.finditer(instruction):
        span = PLACE.sub(" ", OTHER_VERB.split(instruction[m.end():], 1)[0])
        dotted = re.findall(r"(?<![\w$.])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+", span)  # `log.debug`: itself, not
        out |= {d.lower() for d in dotted}  # every `log.` line (a probe, session 37: `log.warn` went unnoted)
        for d in dotted:
            span = span.replace(d, " ")
        out |= {w.lower() for w in re.findall(r"[A-Za-z_$][\w$-]*", span)}
    return out - FILLER


def spans(lines: list[str]) -> list[tuple[int, int]]:
    """The line ranges of the file's top-level blocks and of the members of its classes, and of theirs (a C#
    namespace's classes' methods: a probe, session 39, had a method removed as asked noted as lines dropped)."""
    out: list[tuple[int, int]] = []
    k = 0
    for b in split_blocks(lines, 0):
        out += [(k, k + len(b.lines))] + member_spans(b, k)
        k += len(b.lines) + len(b.blank)
    return out


def member_spans(block: Block, start: int) -> list[tuple[int, int]]:
    """The line ranges of a class's members (and of theirs), the class starting at line `start`."""
    out: list[tuple[int, int]] = []
    j = start + header_size(block)
    for m in class_members(block) or []:
        out += [(j, j + len(m.lines))] + member_spans(m, j)
        j += len(m.lines) + len(m.blank)
    return out


def removal_lines(old: list[str], instruction: str, whole_blocks: bool = True) -> set[int]:
    """The lines of the top-level blocks of `old` that hold a word of what the instruction asks to remove (the same
    word, or one ending in up to three more letters: "prints" finds `print`; `tuple` is no word of `tuple_max`);
    without `whole_blocks`, the lines that hold one themselves."""
    wanted = {w for w in removal_words(instruction) if len(w) >= 3}
    dotted = [re.compile(r"(?<![\w$])" + r"\s*\.\s*".join(map(re.escape, w.split("."))) + r"(?![\w$])")
              for w in wanted if "." in w]

    def holds(line: str) -> bool:
        low = line.lower()
        if any(d.search(low) for d in dotted):
            return True
        for w in re.findall(r"[A-Za-z_$][\w$-]*", low):
            if any(_same_word(w, o) for o in wanted):
                return True
        return "loop" in wanted and LOOP.match(low) is not None  # "remove the retry loop": its `for` line

    if not whole_blocks:
        return {k for k, line in enumerate(old) if holds(line)}
    out: set[int] = set()
    k = 0
    for b in split_blocks(old, 0):
        span = range(k, k + len(b.lines))
        if any(holds(line) for line in b.lines):
            out.update(span)
        k += len(b.lines) + len(b.blank)
    return out


LOOP = re.compile(r"\s*(?:for|while|loop|do|foreach)\b")


def _same_word(a: str, b: str) -> bool:
    """Whether two lower-case words are one, or one is the other with up to three letters more."""
    return a == b or _inflected(a, b) or _inflected(b, a)


def _inflected(word: str, stem: str) -> bool:
    """Whether `word` is `stem` (four letters at least) with up to three letters more ("prints"), a final y made i
    ("retries" of "retry": session 41's probe, "remove the retry loop" noted as taking out lines it did not ask)."""
    return len(stem) >= 4 and any(word.startswith(s) and 0 < len(word) - len(s) <= 3 and word[len(s):].isalpha()
                                  for s in {stem, stem[:-1] + "i" if stem.endswith("y") else stem})


def dropped_note(path: str, old_text: str, lines: list[int], instruction: str = "") -> str:
    """The note for lines an edit took out that the instruction does not ask to go."""
    old = old_text.split("\n")
    shown = few([f"line {k + 1} ({old[k].strip()[:40]!r})" for k in lines])
    why = "" if REMOVES.search(instruction) else ", asking only for an addition,"
    return (f"{path}: note: the edit also takes out {shown}, which the instruction{why} does not ask to go; check "
            f"{'it' if len(lines) == 1 else 'they'} should")


def drifted_note(path: str, names: list[str]) -> str:
    """The note for definitions changed beyond what the instruction names."""
    shown = few(names)
    return (f"{path}: note: the edit also changes {shown}, which the instruction does not speak of; check "
            f"{'it' if len(names) == 1 else 'they'} should change")
