"""Focus: when the instruction names top-level definitions, the model edits only those.

Measured on the bench (bundled 1.5B, spec mode): asked to fix one named function, the model passed
the tests of 3/8 single-function files but only 1/8 multi-function modules: around the function it
must fix, a long module is mostly distraction, and every extra line is a chance to drift. So when
the instruction names definitions (and does not ask for file-wide changes such as a rename), the
model is given a small file: the module's import lines and the named definitions, in file order.
Its output is merged back by definition name (`merge.merge_code`), so the rest of the file is
kept byte for byte by construction, not by the model's care. A named definition the model was shown
and left out is deleted only when the instruction asks for that ("remove `f`", `asks.asks_removal`):
shown two functions, the model often writes back only the one it changed; nothing it was not shown can go.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from editllm.editor import goimports
from editllm.editor.asks import ADDING, AWAY, RENAME, RESHAPES, REWORKS, asks_removal, mentioned, plain, renames
from editllm.editor.blocks import (
    ACCESS,
    DEF,
    IDENT,
    IMPORT_LINE,
    LINE_COMMENT,
    NAMESPACE,
    PREPROCESSOR,
    Block,
    brace_delta,
    braced,
    bracket_depth,
    child_indent,
    class_members,
    defines,
    defining_line,
    ending,
    field_name,
    header_size,
    imported,
    indent_of,
    is_blank,
    joined,
    members,
    notes_above,
    opening,
    signature,
    split_blocks,
)
from editllm.editor.errors import EditError
from editllm.editor.merge import merge_blocks, merge_code, removes_member
from editllm.editor.source import split_lines
from editllm.editor.wholefile import COMMENT_LINE, FILE_NAME

# Instructions whose edit may reach beyond the named definitions: these see the whole file.
# "File" counts only as the edit's scope ("at the top of the file", "the file's header"), not as what a function
# handles ("when the file can't be opened": a probe's instruction that showed the model the whole file, which then
# deleted a line of another function); "module" always does ("the module docstring", "a module-level constant").
FILE_WIDE = re.compile(r"\b(rename|every|everywhere|all|call ?sites?|callers?|usages?|uses|references|"
                       r"(?<!\ba )(?<!\ban )(?<!\bby )(?<!const )(?<!value )reference|"  # not "return a reference"
                       r"the name of|be (?:called|named)|new name|"  # a rename in other words (a probe, session 38)
                       r"throughout|whole|entire|module|imports?)\b"
                       r"|\b(?:in|into|across|of|to|for|from|at|over|through)\s+(?:the|this)\s+file\b"
                       r"|\bfile[- ]wide\b|\b(?:the|this)\s+file's\b|^\W*(?:the\s+|this\s+)?file\b", re.I)
def renamed(instruction: str) -> list[str]:
    """The old names of a rename that is all the instruction asks ("Rename the helper _v to _hue_to_channel and
    update its call sites"): shown are the definitions and every block that mentions them (`shown_blocks`), not the
    whole file. A probe (session 42) asked to rename fnmatch's `filter` and its caller in glob.py: both files, 436
    lines, were written back whole, past 300 s, where two of fnmatch's blocks and one of glob's change. Any other
    word ("... and add type hints everywhere") asks for more: the whole file, as before."""
    pairs = renames(instruction)
    rest = re.sub(r"[\w./-]+\.[A-Za-z]{1,5}\b", " ", RENAME.sub(" ", instruction))  # "in glob.py"
    if not pairs or any(w.lower() not in RENAME_ONLY for w in re.findall(r"[A-Za-z_]\w*", rest)):
        return []
    return [old for old, _ in pairs]


# The words a rename may say of its uses besides ("and update its call sites", "everywhere in the file")
RENAME_ONLY = {"and", "also", "please", "then", "update", "updating", "change", "fix", "adjust", "its", "their", "the",
               "all", "every", "each", "of", "in", "to", "call", "calls", "site", "sites", "callsite", "callsites",
               "caller", "callers", "use", "uses", "usage", "usages", "reference", "references", "occurrence",
               "occurrences", "mention", "mentions", "everywhere", "throughout", "this", "that", "file", "it", "them",
               "accordingly", "too", "as", "well", "__all__", "so", "where", "is", "used", "import", "imports",
               "both", "files", "definition", "definitions"}  # "(the import and every call)": a probe's, session 42


# A rename of a local variable stays inside its function ("in commonprefix, rename the local variable s1": a
# probe's instruction that showed the model the whole file, which then edited other functions)
LOCAL_RENAME = re.compile(r"\brenam\w*\s+(?:the\s+|a\s+)?local\s+variables?\b", re.I)
# ... nor does a remark that nothing uses what goes ("Remove Point::translate; nothing uses it": a probe, session 40,
# showed the model the whole file for its "uses", and it pasted another type's methods into `impl Point`)
NO_USES = re.compile(r"\b(?:nothing|nobody|no\s+one|no\s+code|none\s+of\s+\w+)\s+(?:else\s+)?(?:uses|calls|"
                     r"references)\s+(?:it|them|this|these)\b|"
                     r"\b(?:has|have|with)\s+no\s+(?:other\s+)?(?:callers|usages|uses|references)\b", re.I)
# An instruction that changes what a definition holds or takes: the code that builds or calls it must change with
# it. A probe (session 35): "add a timeout_secs field to Config, read from the timeout_secs key" showed the model
# only the struct, so `load`, which builds `Config {...}`, was not updated and the file no longer compiled; "in
# TodoItem, add a delete button that calls an onDelete prop" left the caller `<TodoItem .../>` without the prop.
# A verb that adds, takes out or changes one, in the same clause: not "add type annotations to the signature",
# "describing its arguments" or "the columns are misaligned" (114 of 1,121 bench and distillation instructions
# widened by the nouns alone, 16 by these)
SHAPE = re.compile(r"\b(?:add|remov|drop|delet|renam|introduc|accept|tak|requir|pass|chang)\w*\b[^.;:!?]{0,60}?\b"
                   r"(?:fields?|props?|propert(?:y|ies)|members?|attributes?|param(?:eter)?s?|arg(?:ument)?s?|columns?|"
                   r"signature)\b", re.I)
# ... and not one about types or docs, nor an optional one ("add an optional keyword argument `verbose`", which no
# caller need pass: 11 distillation instructions)
# ("add a required field X of type T" is no ask about types: a probe, session 36, hid the builders for its "type")
TYPES_OR_DOCS = re.compile(r"\b(?:annotat\w*|type\s+hints?|typing|types\s+to|docstrings?|doc\s*comments?|"
                           r"document\w*|describ\w*|validat\w*|optional\w*)\b", re.I)
# An instruction about a definition's comment ("shorten the doc comment on hostname", "fix the JSDoc of parse"): a
# real probe (session 28) showed the model only `pub fn hostname`, without the `///` lines above it, and got the
# function back unchanged ("no change proposed")
DOC_WORDS = re.compile(r"\b(?:comments?|doc(?:s|umentation|block)?|jsdoc|javadoc|rustdoc|godoc|doxygen)\b", re.I)
MAX_SHARE = 0.6  # focus only when the named definitions are a minority of the file
# Text the instruction quotes ('Failed to load users', "Not found"): an apostrophe inside a word ("error 500's")
# opens none
QUOTED = re.compile(r"(?:^|(?<=[\s(\[]))(['\"“])([^'\"”\n]{3,}?)(?:\1|”)(?=$|[\s.,;:!?)\]])")
NUMBER = re.compile(r"(?<![\w.])\d{3,}(?![\w.])")  # an error code, a port, a limit: 500, 8080


def pointers(instruction: str, text: str) -> list[re.Pattern]:
    """What the instruction points at in the file besides names: the words it quotes (a message, not one word: a
    bug told by example, `url_join("/api", "users")`, or '"The" and "the"', quotes words found all over the file)
    and the numbers it gives (of three digits or more) that the file holds. Where they stand is part of what it is
    about (a probe, session 40: "In formatDate, use long month names, and change the 'Failed to load users'
    message" was shown formatDate alone, "In farewell, ..., and change error 500's message" farewell alone, and
    the other half of each was left undone, exit 0)."""
    found = [re.compile(re.escape(said)) for _, said in QUOTED.findall(instruction) if " " in said.strip()]
    found += [re.compile(rf"(?<![\w.]){n}(?![\w])") for n in NUMBER.findall(instruction)]
    return [p for p in found if p.search(text)]


def points_at(text: str, found: list[re.Pattern]) -> bool:
    """Whether the text holds one of the instruction's `pointers`."""
    return any(p.search(text) for p in found)


@dataclass(frozen=True)
class Focus:
    """The part of a file the model sees, and the definitions it holds."""

    text: str
    names: tuple[str, ...]


def focus_of(text: str, instruction: str, lines: list[str] | None = None) -> Focus | None:
    """The import lines plus the named top-level definitions, or None when focusing would not help
    (nothing named, a file-wide instruction, a name defined twice, or most of the file named).
    `lines`: `split_lines(text)`, when the caller has it (`SourceFile.lines`)."""
    olds = set(renamed(instruction))
    if FILE_WIDE.search(NO_USES.sub(" ", LOCAL_RENAME.sub(" ", instruction))) and not olds:
        return None
    lines = split_lines(text) if lines is None else lines
    blocks = split_blocks(lines, 0)
    named = [blocks[i] for i in told_apart(blocks, [i for i, b in enumerate(blocks) if is_named(b, instruction)],
                                           instruction)] or [  # else a class whose member it is about
        b for b in blocks if any(about_member(m, instruction) for m in member_names(b, instruction))
        or names_field(b, instruction)  # ... or whose method is renamed ("Rename the method get_ready"), not a C++
        or olds & member_names(b) and not NAMESPACE.match(defining_line(b))]  # namespace's (`std::__variant`)
    if not named or len({identity(b) for b in named}) < len(named):
        return None  # a name defined twice (a Rust `struct S` and its `impl S` are two things, told apart, as are a
        # C++ class, its forward declaration, `class Ring;`, and its specializations, `struct Info<bool> {`)
    if DOC_WORDS.search(instruction) and any(notes_above(blocks, blocks.index(b)) < blocks.index(b) for b in named):
        return None  # the comment on the definition is a block of its own, which focus would not show
    content = sum(1 for line in lines if not is_blank(line))
    shown = shown_blocks(blocks, instruction)
    alike = Counter(likeness(b) for b in blocks if b.name) if olds else Counter()
    if any(alike[likeness(blocks[i])] > 1 for i in shown if blocks[i].name):
        return None  # a rename's uses in definitions written alike (one per platform): which is which, the merge
        # cannot tell (overloads are told apart by their parameters)
    slim = cut_down(blocks, shown, instruction)
    view = [slim[i].block if i in slim else undocumented(b, list(olds)) if i in shown else b
            for i, b in enumerate(blocks)]
    if sum(len(view[blocks.index(b)].lines) for b in named) > MAX_SHARE * content \
            or sum(len(view[i].lines) for i in shown) > MAX_SHARE * content:
        return None
    go = goimports.handled(lines)  # Go's package clause and `import (...)` group: the model adds what it uses
    guarded = guarded_includes(blocks)
    kept = [view[i] for i, b in enumerate(blocks)
            if i in shown or is_import(b) or i in guarded or go and goimports.is_header(b)]
    body = "".join("".join(b.lines + (b.blank if b is not kept[-1] else [])) for b in kept)  # the file's spacing
    names = tuple(name for i in sorted(shown) for name in (  # not an export list's
        [f"{blocks[i].name}.{m}" for m in slim[i].named] if i in slim
        else [name_of(blocks[i]) or grouped(blocks[i], instruction)]) if name)
    return Focus(body if body.endswith("\n") else body + "\n", names)


INCLUDE = re.compile(r"\s*#\s*include\b")


def guarded_includes(blocks: list[Block]) -> set[int]:
    """The blocks of each top-level C preprocessor group (`#ifdef _WIN32` ... `#else` ... `#endif`) that holds
    includes and nothing but includes, macros and comments: shown whole with its includes. A fuzz (session 42) saw
    llama.cpp's server shown `#include <windows.h>` and `#include <unistd.h>` one under the other, as if both were
    always included. A group that holds code too (a header's include guard) shows its includes as before."""
    out: set[int] = set()
    if not any(b.lines and INCLUDE.match(b.lines[0]) for b in blocks):  # C's, not a Python comment's "# if"
        return out
    depth, start, plain = 0, 0, True
    for i, b in enumerate(blocks):
        if depth == 0:
            start, plain = i, True
        plain = plain and (is_import(b) or all(PREPROCESSOR.match(x) or LINE_COMMENT.match(x) or is_blank(x)
                                               for x in b.lines))
        for line in b.lines:
            if re.match(r"\s*#\s*if", line):
                depth += 1
            elif re.match(r"\s*#\s*endif\b", line) and depth:
                depth -= 1
        if depth == 0 and i > start and plain and any(is_import(blocks[k]) for k in range(start, i + 1)):
            out.update(range(start, i + 1))
    return out


def identity(block: Block) -> tuple | str | None:
    """What tells a definition from others of its name: its keywords and decorators (a Rust `struct S` from its `impl
    S`), whether it is only declared (C++'s `class Ring;`), its specialization (`struct Info<bool> {`)."""
    return (signature(block), declaration(block), specialized(block)) if block.name else name_of(block)


def told_apart(blocks: list[Block], named: list[int], instruction: str) -> list[int]:
    """The named blocks, less those of a name the file defines alike more than once (two `impl Rect {` blocks of one
    Rust type) that do not hold the member the instruction names when another of them does: "In Rect::area, ..."
    is about the `impl Rect` that defines `area` (a probe, session 40: both taken, the name read as defined twice,
    the whole file shown)."""
    def holds(i: int) -> bool:
        return any(names_member(blocks[i].name or "", m, instruction) for m in member_names(blocks[i]))

    return [i for i in named if class_members(blocks[i]) is None or holds(i)
            or not any(holds(k) for k in named if k != i and likeness(blocks[i]) == likeness(blocks[k]))]


def likeness(block: Block) -> tuple:
    """What two definitions written alike share (`impl Rect {` twice; not a class and its
    `IntervalMap<...>::iterator {`): their identity and their defining line."""
    return identity(block), defining_line(block)


def declaration(block: Block) -> bool:
    """Whether a definition is only declared here (C++'s `class Ring;`, `struct slot; // forward declaration`)."""
    return re.search(r";\s*(?://.*|/\*.*\*/)?$", defining_line(block)) is not None


def specialized(block: Block) -> str:
    """A C++ template specialization's arguments after its name (`<bool>` of `struct Info<bool> {`), else ""."""
    m = re.search(rf"\b{re.escape(block.name or '')}\s*(<[^{{;]*>)", defining_line(block)) if block.name else None
    return m.group(1) if m else ""


class Cut(NamedTuple):
    """A class cut down for the model (`narrowed`): what it is shown, the members the instruction names (a nested
    class's as `Inner.member`), and those it is shown (the named ones, and a neighbour beside members asked away)."""

    block: Block
    named: list[str]
    shown: list[str]
    picked: list[int]  # the members of `body_of(block)` shown, with the comments above them
    inner: dict[int, Cut]  # the picked members that are classes cut down in turn (a C# namespace's, a Ruby module's)


class Asked(NamedTuple):
    """The members of a class an instruction is about (`asked_members`)."""

    members: list[int]  # indices into `body_of(block)`, in order
    inner: dict[int, Cut]  # of those, the classes cut down in turn
    called: dict[int, str]  # what each is called by: its name, a field's, `__doc__`


def narrowed(block: Block, instruction: str, read: frozenset[str] = frozenset(),
             taken: frozenset[str] = frozenset()) -> Cut | None:
    """A class cut down to its header, the members the instruction is about (`asked_members`) and its closing
    line; None when it names none of them, or all. Real probes (session 37) asked for one method of a class that was
    most of its file (`scheduler.enter`, `TopologicalSorter.__bool__`): shown the whole file, the model dropped
    other methods or wrote it back unchanged, in 60-150 s; one of configparser's classes is 649 lines, past the
    model's context. Members asked away are shown beside a neighbour: shown `__bool__` alone and asked to remove
    it, the model renamed it rather than leave a class with no body (session 38); a Python class's docstring is
    shown too (shown a class without one, and asked to "add a docstring to RawConfigParser.sections", the model
    wrote one for the class). The merge keeps the members the class was shown without (`merge.merge_pair`)."""
    olds = renamed(instruction)
    if not (body := body_of(block)) or (found := renamed_members(block, body, olds) if olds else asked_members(
            block, body, instruction, read, taken)) is None:
        return None
    asked, inner, called = found
    leaves = [k for k in asked if k not in inner]  # the members named themselves, not through one of theirs
    going = not olds and bool(leaves) and all(removes_member(called[k], instruction) for k in leaves)
    if going and len({called[k] for k in leaves}) < len(leaves):
        return None  # one of a getter and setter, or of overloads, asked away: their name alone tells neither
    doc = docstring(body)  # a rename's view shows it only where it names an old name (then all its parts)
    shown = asked + (doc if not olds or set(doc) & set(asked) else []) + (
        fields_read(body, asked) if CLASS.match(block.lines[header_size(block) - 1]) else [])
    if going:
        others = [k for k, m in enumerate(body) if m.name and k not in asked]
        shown += [min(others, key=lambda k: abs(k - leaves[0]))] if others else []  # the nearest, not its comment
    elif not olds and SHAPE.search(instruction) and not TYPES_OR_DOCS.search(instruction):  # its callers change too
        calls = [called[k] for k in leaves] + [leaf.rsplit(".", 1)[-1] for cut in inner.values() for leaf in cut.named]
        shown += [k for k, m in enumerate(body) if k not in asked and m.name
                  and any(re.search(rf"(?<![\w$]){re.escape(name)}\s*\(", m.text) for name in calls)]
    labels = [k for k, m in enumerate(body) if not m.name and len(m.lines) == 1 and ACCESS.match(m.lines[0].strip())]
    shown += [max(j for j in labels if j < k) for k in shown if any(j < k for j in labels)]  # C++'s `public:` over
    # it (session 41's probe: `front()` shown under no label, read as private)
    top, end = opening(block), len(block.lines) - ending(block)
    picked = sorted({j for k in shown for j in range(notes_above(body, k), k + 1)})  # with the comment on it
    cut = [line for n, k in enumerate(picked) for line in (inner[k].block if k in inner else undocumented(
        body[k], olds)).lines + (
        body[k].blank if n < len(picked) - 1 else [])]
    named = list(dict.fromkeys(f"{body[k].name}.{leaf}" if k in inner else called[k] for k in asked
                               if k in inner or k in called  # not a statement a rename changes
                               for leaf in (inner[k].named if k in inner else [""])))  # a docstring's parts: once
    return Cut(Block(block.name, block.lines[:top] + cut + block.lines[end:], block.blank), named,
               [body[k].name or "" for k in shown if body[k].name], picked, inner)


def asked_members(block: Block, body: list[Block], instruction: str, read: frozenset[str],
                  taken: frozenset[str]) -> Asked | None:
    """The members of a class the instruction is about, or None when it is about none, or all: those it names
    (`names_member`), a field it names as code, and
    - a member that is a class with members of its own asked (cut down in turn): a C# file's classes sit in a
      `namespace X { }`, a Ruby gem's in a `module`, and a probe (session 38) found none of them ever focused;
    - the members that read a constant asked of its readers (the class's own, or one of `read`, the file's: "warn
      when the count exceeds MAX_POINTS", "remove the DEBUG prints"), or asked away;
    - the docstring, asked of by the class's name ("Change the JobQueue class docstring to ...": a probe, session
      39, was shown the whole file, and the model rewrote the module's docstring), or the first member, after
      which the model writes one the class lacks.
    A member named as one of a class the instruction names is that class's (`taken`: "Remove the Total method of
    Invoice" is not about `InvoiceBook.Total`: the same probe had both shown and an empty answer took both away)."""
    owners = [m for m in body if class_members(m) is not None and m.name
              and names_member(block.name or "", m.name, instruction)]  # the classes in it the instruction names
    known = {name for m in owners for name in member_names(m)}
    inner = {k: cut for k, m in enumerate(body) if m.name and (cut := narrowed(
        m, instruction, read, frozenset() if m in owners else taken | known)) is not None}
    fields = {k: name for k, m in enumerate(body) if not m.name and (name := field_named(m, instruction))
              and name not in taken}
    found = pointers(instruction, block.text)
    asked = [k for k, m in enumerate(body) if k in inner or points_at(m.text, found)
             or m.name and m.name not in taken and names_member(block.name or "", m.name, instruction)
             or m.name and class_members(m) is not None and holds_named_member(  # asked of all it holds: whole
                 m, instruction, set() if m in owners else set(taken | known), taken)]
    if asked:  # "In InventoryService.removeItem, drop the LOG.info call": that member, not all that read LOG; but a
        # field it does not read yet is shown ("Make Catalog.Count return _max": a probe, session 40, showed Count
        # alone, and the model declared a `_max` of its own)
        fields = {k: name for k, name in fields.items() if about_itself(name, instruction)
                  or not any(body[a].name and mentioned(name, body[a].text) for a in asked)}
    reading = set() if asked else set(read) | {name for name in fields.values() if not about_itself(name, instruction)}
    reading |= {name for name in fields.values() if removes_member(name, instruction)}  # and what reads one going
    called = {k: name for k, m in enumerate(body) if (name := m.name or fields.get(k))}
    asked = sorted(set(asked) | set(fields) | {k for k, m in enumerate(body) if m.name and any(
        mentioned(w, m.text) for w in reading)})
    if not asked and re.search(r"\bdocstring\b", instruction, re.I) and mentioned(block.name or "", instruction) \
            and not asks_removal("docstring", instruction):  # one asked away: the class, as before
        asked = docstring(body) or [k for k, m in enumerate(body) if m.name][:1]
        called |= {k: "__doc__" for k in asked if not body[k].name}
    if not asked or all(k in asked for k, m in enumerate(body) if m.name) and not inner \
            and all(body[k].name for k in asked):
        return None
    return Asked(asked, inner, called)


# C's and C#'s (in a braced body: Python's `#if not cap in caps:` is code commented out), not a comment's "# if found"
CONDITION = re.compile(r"#(?:\s*(?:ifdef|ifndef|elif|endif)|if|else)\b")


def renamed_members(block: Block, body: list[Block], olds: list[str]) -> Asked | None:
    """The members of a class a rename changes: each that mentions an old name, shown whole (a class cut to its
    `_cmp` alone hid the `self._cmp(other)` calls of its other methods: a fuzz, session 42). None when that is no
    member, or every one. A probe (session 42) found no Python method ever renamed in a view: the class, shown
    whole, was most of its file, and the model wrote all of it back. Not a C++ class (closed by `};`), whose
    unnamed members, nested types and out-of-class definitions had 81 of 779 method renames of LLVM's and llama.cpp's
    C++ refused (the same fuzz; 2 with these left out), nor a C++ namespace's."""
    if not block.lines or block.lines[-1].strip().startswith("};") or NAMESPACE.match(defining_line(block)) \
            or brace_delta(block.lines):  # nor a namespace, nor a class its `#ifdef` in column 0 cut short
        return None
    asked = [k for k, m in enumerate(body) if any(mentioned(old, m.text) for old in olds)]
    if not asked or all(k in asked for k, m in enumerate(body) if m.name) \
            or braced(block) and any(CONDITION.match(line.lstrip()) for m in body for line in m.lines):
        return None  # a C++ body's `#ifdef` splits it where no member ends (a fuzz, session 43: llama-server's
        # `server_context_impl` merged back with 1,271 lines twice)
    return Asked(asked, {}, {k: name for k in asked if (name := body[k].name)})


def cut_down(blocks: list[Block], shown: set[int], instruction: str) -> dict[int, Cut]:
    """The shown classes the model sees cut down (`narrowed`), by index: one reading for the view and the merge."""
    read = frozenset(w for b in blocks if not b.name and is_named(b, instruction) and (w := name_of(b))
                     and not about_itself(w, instruction))  # the file's constants asked of their readers
    named = {i for i, b in enumerate(blocks) if is_named(b, instruction)}
    known = frozenset(m for i in named for m in member_names(blocks[i]))  # the members of the classes it names
    return {i: cut for i in sorted(shown) if (cut := narrowed(
        blocks[i], instruction, read, frozenset() if i in named else known)) is not None}


CLASS = re.compile(r"^[ \t]*(?:[\w@\[\]()\"]+\s+)*(?:class|struct|record)\b")  # whose fields its methods read


def fields_read(body: list[Block], asked: list[int]) -> list[int]:
    """The fields of a class its asked methods read (`private readonly List<decimal> _prices = ...;`), shown with
    them: a probe (session 40) showed a C# method alone, and the model declared the field it uses again, its own
    way, and the edit was refused."""
    names = {k: name for k, m in enumerate(body) if not m.name and k not in asked and len(m.lines) == 1
             and not COMMENT_LINE.match(m.lines[0]) and len(m.lines[0].split()) > 1  # not C++'s `virtual` over a
             and not ACCESS.match(m.lines[0].strip())  # method, nor a `public:` label (a fuzz, session 41)
             and (name := field_name(m.lines[0]))}  # a declaration's line
    return [k for k, name in names.items() if any(body[a].name and mentioned(name, body[a].text) for a in asked)]


def all_going(cut: Cut, instruction: str) -> bool:
    """Whether the instruction asks every member it names of a cut-down class away."""
    return all(removes_member(m.rsplit(".", 1)[-1], instruction) for m in cut.named)


def docstring(body: list[Block]) -> list[int]:
    """The members that make a Python class's docstring, to its closing line (a block of its own), after the blank
    lines a body may open with (a block of no lines: `_pyio.BufferedReader`'s docstring went unshown, and its first
    part, shown for a rename without its closing line, swallowed the method below it: a fuzz, session 43)."""
    start = next((k for k, b in enumerate(body) if b.lines), len(body))
    first = body[start].lines[0].strip() if start < len(body) and body[start].name is None else ""
    if not DOCSTRING.match(first):
        return []
    end = string_end([b.text for b in body[start:]], first)
    return [] if end is None else list(range(start, start + end + 1))  # never closed: not a docstring to show


def string_end(parts: list[str], first: str) -> int | None:
    """The index of the part (a member's text, a line) that closes the triple-quoted string `first` opens; None when
    none of them does."""
    quote, text = first.lstrip("rRbBuUfF")[:3], ""
    for k, part in enumerate(parts):
        text += part
        if text.count(quote) >= 2:
            return k
    return None


def body_of(block: Block) -> list[Block] | None:
    """A class's members between its header and its closing lines; None for any other block."""
    if class_members(block) is None:
        return None
    return members(block.lines[opening(block):len(block.lines) - ending(block)], child_indent(block) or 0,
                   braced(block))


MEMBER_WORDS = r"(?:method|function|getter|setter|property|member|handler|hook)"


def constant_of(member: Block, instruction: str) -> str | None:
    """The name of a class's constant the instruction asks something of itself ("Change MAX_POINTS to 2000", "Set
    `TaxRate` to 0.25"): a field named as code, its value on its line. A probe (session 38) was shown all of
    Geometry.java to change one `static final` line. Asked of the code that reads it ("warn when the count
    exceeds MAX_POINTS"), None: the readers are shown with it (`narrowed`)."""
    name = field_named(member, instruction)
    return name if name and about_itself(name, instruction) else None


def field_named(member: Block, instruction: str) -> str | None:
    """The name of a class's field the instruction names as code (`MAX_POINTS`, `` `limit` ``; not `limit`, which is
    an English word too)."""
    first = member.lines[0] if member.lines and not member.name else ""
    name = field_name(first) if not COMMENT_LINE.match(first) else None
    if not name or not mentioned(name, instruction):
        return None
    return name if not re.fullmatch(r"[a-z]+", name) or f"`{name}`" in instruction else None


def names_field(block: Block, instruction: str) -> bool:
    """Whether the instruction names a field of this class (or of a class in it) as code, wherever it stands: a
    constant is what an instruction reads by ("log a warning when the size exceeds MAX_POINTS"), not a step of a
    symptom as a method may be."""
    return any(field_named(m, instruction) or m.name and names_field(m, instruction)
               for m in class_members(block) or [])


def about_member(name: str, instruction: str) -> bool:
    """Whether the instruction is about the member `name` of a class it does not name: written as code, as what it
    acts on ("Add a docstring to `pop`", "Document `add`", "`from_data` returns the wrong variable", "a bug in
    `validate`", "In the off method, ..."), not as a step of a symptom ('after get("a"), put evicts it', "when a
    `once` handler unsubscribes itself": the held-out bench's bugs, whose fix lies elsewhere)."""
    word = re.escape(name)
    code = rf"`{word}(?:\(\))?`|{word}\(\)|{word}(?=\s+{MEMBER_WORDS}\b)" + (
        rf"|#?{word}" if not re.fullmatch(r"[a-z]+", name) else "")  # `#getLogFilePath`, `set_seq1`: code as it is
    # a verb at a clause's start: "In the companion object, make standard() return ..."
    return re.search(rf"(?:^\W*|\b(?:to|of|in|for|inside|within|into|on|from)\s+(?:the\s+)?|(?:^|[,;:]\s)\W*"
                     rf"(?:please\s+)?(?!(?:when|whenever|after|before|if|once|while|since|because|unless|until|so|"
                     rf"but)\b)[A-Za-z]+\s+"
                     rf"(?:the\s+)?)(?:{code})(?:\s+{MEMBER_WORDS})?(?=[\s.,:;!?#]|$)", instruction, re.I) is not None


def names_member(owner: str, name: str, instruction: str) -> bool:
    """Whether the instruction names this member of class `owner` as code: `scheduler.enter` (`Config::load`,
    `Foo#bar`), `enter()`, `` `enter` ``, "the enter method", or a name no English word is (`hasSection`,
    `__bool__`, `has_section`)."""
    if not mentioned(name, instruction) or name == owner:  # a constructor named as its class is: the class, named
        return False
    if re.fullmatch(r"[A-Z][a-z]+", name) and not mentioned(name, re.sub(r"(?:^|(?<=[.;:!?]\s))\W*[A-Z][a-z]+\b", "",
                                                                         instruction)):
        return False  # a sentence's verb: "Remove the Void method of Invoice" names no `InvoiceBook.Remove` (a probe,
        # session 39: both shown, and an empty answer took both away)
    word = re.escape(name)
    return not re.fullmatch(r"[a-z]+", name) or re.search(
        rf"(?<![\w$]){re.escape(owner)}(?:\.|::|#){word}(?![\w$])|(?<![\w$.]){word}\(|`{word}`|"
        rf"\b{word}\s+{MEMBER_WORDS}\b|\b{MEMBER_WORDS}\s+{word}\b", instruction) is not None


def shown_blocks(blocks: list[Block], instruction: str) -> set[int]:
    """The indices of the top-level definitions the model is shown: those the instruction names (or one of whose
    members it names as code, or the exports it asks to add to), those that use what it asks away from them (a
    probe, session 36: "Remove the invalidURL case from NetworkError and throw badStatus(0) where invalidURL was
    thrown" was shown the enum alone, not the method that throws it), and when it changes what they hold or take
    (`SHAPE`), the definitions that build or call them (`builds`), which must change too."""
    named = set(told_apart(blocks, [i for i, b in enumerate(blocks) if is_named(b, instruction)], instruction))
    known = {m for i in named for m in member_names(blocks[i])}  # a member a named class has is its own
    taken = frozenset(name for i in named if (name := name_of(blocks[i])))
    named |= {i for i, b in enumerate(blocks) if i not in named and (holds_named_member(b, instruction, known, taken)
                                                                      or EXPORT.search(instruction) and exports(b))}
    found = pointers(instruction, "".join(joined(blocks)))
    named |= {i for i, b in enumerate(blocks) if points_at(b.text, found)}  # where the quoted text stands
    declared = {w for i in named for w in declared_names(blocks[i])}
    gone = {w for w in set(re.findall(r"[A-Za-z_$][\w$]*", instruction)) & declared if removes_member(w, instruction)}
    named |= {i for i, b in enumerate(blocks) if i not in named and (name_of(b) or exports(b))
              and any(mentioned(w, b.text) for w in gone)}  # an export list too: a removed function stayed in it
    constants = {w for i in named if not blocks[i].name and (w := name_of(blocks[i]))}
    read = {w for w in constants if not about_itself(w, instruction)}  # asked of the code that reads it: shown too
    named |= {i for i, b in enumerate(blocks) if name_of(b) and any(mentioned(w, b.text) for w in read)}
    if olds := renamed(instruction):
        mentions = {i for i, b in enumerate(blocks) if any(mentioned(old, b.text) for old in olds)}
        # not a string whose closing line at the margin is a block of its own (`in_strings`: a module's docstring,
        # `return '''<!--...`): shown alone the model saw it open; shown with its end, two alike closing-quote
        # lines made the merge's anchors ambiguous (a fuzz, session 42). Its mention keeps the old name
        named = (named | mentions) - (split_strings(blocks) - {i for i in named if name_of(blocks[i]) in olds})
        # (nor one that names a method renamed: `_parser = re.compile(r"""...(?P<exp>` of `Decimal.exp`)
    if not SHAPE.search(instruction) or TYPES_OR_DOCS.search(instruction):
        return named
    users = {i for i, b in enumerate(blocks) if i not in named and b.lines  # `const o = (): Order => ({...})` too
             and not DOCSTRING.match(b.lines[0])  # the module's docstring names calls, makes none (a probe, session 37)
             and any(builds(b, blocks[k].name) for k in named if blocks[k].name)}  # not an export list's
    return named | users


EXPORT = re.compile(r"\bexport(?:s|ed|ing)?\b", re.I)
DOCSTRING = re.compile(r"^[rRbBuUfF]{0,2}(?:\"\"\"|''')")  # a string at the margin: the module's docstring
QUOTES = ("\"" * 3, "'" * 3)
EXPORTS = re.compile(r"^(?:module\.)?exports\b|^export\s*\{")  # CommonJS's and ES modules' export lists


def split_strings(blocks: list[Block]) -> set[int]:
    """The blocks of each triple-quoted string split over blocks: from the one that opens it to the one its closing
    line at the margin makes (`in_strings`), each kind of quote paired in order."""
    out: set[int] = set()
    for q in QUOTES:
        odd = [i for i, b in enumerate(blocks) if b.text.count(q) % 2]
        out.update(i for k in range(0, len(odd) - 1, 2) for i in range(odd[k], odd[k + 1] + 1))
    return out


def member_names(block: Block, instruction: str = "") -> set[str]:
    """The names of a class's members, and of the members of the classes in it (empty for anything else); with the
    instruction, the fields it names as code (`field_named`)."""
    return {name for m in class_members(block) or [] if (own := m.name or field_named(m, instruction))
            for name in {own} | member_names(m, instruction)}


def declared_names(block: Block) -> set[str]:
    """The names a definition declares: its own, and its members' (a method's name; a field's, an enum case's: the
    words of its first line), not what its body merely uses ("remove the print from parse" asks no name of it
    away, and the file's other prints stay unshown); a constant's name too ("remove the X constant and throw a
    plain Error where it was used" shows where it is used)."""
    found = {name} if (name := name_of(block)) else set(group_names(block))
    for m in class_members(block) or []:
        first = next((line for line in m.lines if not is_blank(line)), "")
        if not m.name and (COMMENT_LINE.match(first) or re.match(r"\s*[rRbBuUfF]{0,2}[\"'`]", first)):
            continue  # a docstring's or a comment's words declare nothing ("the": a probe, session 38)
        found |= {m.name} if m.name else set(re.findall(r"[A-Za-z_$][\w$]*", first.split("//")[0]))
    return found


def holds_named_member(block: Block, instruction: str, known: set[str], taken: frozenset[str] = frozenset()) -> bool:
    """Whether the instruction names a member of this class as code (`request()`, `` `parse` ``, `findById`) that
    no definition already shown (`known`) has: a probe (session 36) asked to "throw it from request() when the
    status code is 401" beside a named enum, was shown the enum alone, and the model wrote a top-level `func
    request` of its own, pasted in with exit 0. A plain word ("add", "get") is not taken for a member, but "the
    off method" is (`names_member`). A field named as code counts unless a definition shown has its name (`taken`:
    "Add a `verbose` argument to `decode`" is about the function, not a class's `decode = codecs.utf_7_decode`)."""
    return any(m.name not in known and names_member(block.name or "", m.name, instruction)
               or holds_named_member(m, instruction, known, taken) if m.name else field_named(m, instruction) not in
               (None, *known, *taken) for m in class_members(block) or [])


def exports(block: Block) -> bool:
    """Whether the block is the module's export list (`module.exports = {...}`, `export { a, b }`): "... and export
    it" under focus showed the function alone, and the model's own export list was refused (the same probe)."""
    return bool(block.lines) and bool(EXPORTS.match(block.lines[0]))


def builds(block: Block, name: str) -> bool:
    """Whether the block builds or calls `name`: `name(`, `name {`, `name::`, `new name`, `<name` (JSX), a literal
    typed by it (`const o: Order = {`, `(): Order => ({`: the second probe, session 36); a type annotation alone
    (`c: &Config`) needs no change when a field is added."""
    word = re.escape(name)
    return bool(re.search(rf"(?<![\w$.]){word}\s*(?:[({{]|::|=>)|<{word}\b|:\s*{word}(?:\[\])?\s*=\s*[{{\[]",
                          block.text))


def is_named(block: Block, instruction: str) -> bool:
    """Whether the instruction names the block: a definition by its name, a top-level constant by its name written
    as code (`MAX_RETRIES`, `defaultOptions`, `` `timeout` ``, `api.load`: an object's method, a probe in session 38
    saw the whole file for; not `app` or `log`, which are English words too)."""
    if grouped(block, instruction):
        return True
    name = name_of(block)
    if not name or not mentioned(name, FILE_NAME.sub(" ", instruction)):  # "in report.py" names no `report`
        return False
    if (owner := owner_of(block, name)) is not None:
        return owned_named(owner, name, instruction)
    return bool(block.name) or not re.fullmatch(r"[a-z]+", name) or f"`{name}`" in instruction \
        or bool(FUNCTION_VALUE.search(block.lines[0])) \
        or re.search(rf"(?<![\w$.]){re.escape(name)}(?:\.|::|#)[A-Za-z_$]", instruction) is not None


def owner_of(block: Block, name: str) -> str | None:
    """The type a definition written outside its type's body belongs to: Go's `Pool` of `func (p *Pool) Close()`,
    C++'s `Bag` of `size_t Bag::size() const {` (its return type maybe on the line above, GNU's style) and of the
    constructor `Registry::Registry(int n)`; None for any other definition."""
    if receiver := GO_RECEIVER.match(defining_line(block)):
        return receiver.group(1)
    qualified = re.compile(rf"(?<![\w$])(\w+)\s*(?:<[^()]*>)?\s*::\s*~?{re.escape(name)}\s*\(")
    return next((m.group(1) for line in block.lines[:4] if (m := qualified.search(line))), None)


GO_RECEIVER = re.compile(r"func\s*\(\s*\w*\s*\*?\s*(\w+)")  # a Go method's type: `Pool` of `func (p *Pool)`
QUALIFIED = re.compile(r"(?<![\w$])(\w+)\s*(?:\.|::)\s*(~?\w+)")  # `Pool.Close`, `Bag::size`, `Registry::~Registry`


def owned_named(owner: str, name: str, instruction: str) -> bool:
    """Whether the instruction names `owner`'s `name`: written with it (`Pool.Close`, `Bag::size`), or bare, apart
    from any qualified name (`Close` names every type's Close). Probes (session 40) saw both of Go's `Close` taken
    for "Make Pool.Close idempotent", and C++'s constructor `Registry::Registry` for "In Registry::ReloadAll": the
    name read as defined twice, the whole file shown; `A::size` and `B::size` in one .cpp the same (session 41)."""
    pairs = [(m.group(1), m.group(2)) for m in re.finditer(rf"(?={QUALIFIED.pattern})", instruction)]
    if (owner, name) in pairs:
        return True
    return mentioned(name, re.sub(rf"{QUALIFIED.pattern}(?:\s*(?:\.|::)\s*~?\w+)*", " ", instruction))


# A constant whose value is a function (`const check = (url) => {`, `const run = async function (`): a definition,
# named by any name (a probe, session 38: every function of npm's open-url.js is written so, and none was focused)
FUNCTION_VALUE = re.compile(r"=\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*(?::[^=]*)?=>|[\w$]+\s*=>)")


GROUP = re.compile(r"^(?:const|var)\s*\(\s*$")  # Go's `const (` ... `)`


GROUP_WORDS = re.compile(r"\b(const|var)\w*\s+(?:group|block)\b", re.I)  # "the const group", "the constants block"


def grouped(block: Block, instruction: str) -> str | None:
    """The constant of a Go `const (...)` group the instruction asks something of itself ("Change MaxRetries to 5"),
    named as code: the group is shown whole (a probe, session 38, was shown all of the file for that); or the
    group's first, when the instruction speaks of the group ("add a MaxDelay constant to the const group": a probe,
    session 39, was shown `Delay` alone, and the model's group of its own was refused)."""
    names = group_names(block)
    if names and (words := GROUP_WORDS.search(instruction)) and block.lines[0].startswith(words[1].lower()):
        return names[0]
    return next((name for name in names if mentioned(name, instruction)
                 and not re.fullmatch(r"[a-z]+", name) and about_itself(name, instruction)), None)


def group_names(block: Block) -> list[str]:
    """The names a Go `const (...)` or `var (...)` group declares, in order (none for any other block)."""
    if not block.lines or block.name or not GROUP.match(block.lines[0]):
        return []
    return [name for line in block.lines[1:] if not COMMENT_LINE.match(line)
            and (name := field_name(line) or next(iter(IDENT.findall(line.split("//")[0])), None))]


def about_itself(name: str, instruction: str) -> bool:
    """Whether the instruction asks something of the constant itself, its name right after a clause's verb ("Change
    MAX_SIZE to 20", "Set the DEFAULT_TIMEOUT constant = 30", "Remove the unused DEBUG."); not "log a warning when
    the size exceeds MAX_SIZE" or "remove the DEBUG prints", which ask for the code that reads it, shown too."""
    return re.search(rf"(?:^|[.;:,!?]\s+)(?:please\s+)?[A-Za-z]+\s+(?:the\s+)?(?:value\s+of\s+(?:the\s+)?)?"
                     rf"(?:[a-z-]+\s+)?(?:constant\s+|variable\s+)?[`'\"]?{re.escape(name)}[`'\"]?"
                     rf"(?:\s+(?:constant|variable|value|setting|message|string|default))?"
                     rf"(?:\s+(?:to|from|so|by|with|and)\b|\s*=|\s*[.,;:!?](?![\w$(])|\s*$)",  # not `LOG.info(`
                     instruction, re.I) is not None


def name_of(block: Block) -> str | None:
    """What an instruction calls a top-level block by: a definition's name, or the one target of a top-level
    assignment (`MAX_RETRIES = 3`, `const LAST_REMAINING_VERSION_ERROR = ...`). A probe (session 37) asked to "Change
    LAST_REMAINING_VERSION_ERROR so the message says 72 hours" and, the constant being no definition, the model
    wrote all 163 lines of the file back (57.0 s) for a one-line change; a focused one-line edit took 5.8 s."""
    if block.name:
        return block.name
    targets = defines(block) if block.lines and not imported(block) else set()
    return next(iter(targets)) if len(targets) == 1 else None


def is_import(block: Block) -> bool:
    return block.name is None and bool(block.lines) and all(IMPORT_LINE.match(x) for x in block.lines)


def merge_focus(text: str, edited: str, instruction: str, allow_deletions: bool = False,
                lines: list[str] | None = None) -> str:
    """Put the edited definitions (and any new ones or new imports) back into the whole file.

    What the model was shown and left out goes: the named definitions the instruction asks to remove,
    and with `allow_deletions` the import lines too; everything else stays.
    `lines`: `split_lines(text)`, when the caller has it (`SourceFile.lines`)."""
    lines = split_lines(text) if lines is None else lines
    blocks = split_blocks(lines, 0)
    go = goimports.handled(lines)
    drop = {i for i, b in enumerate(blocks) if is_named(b, instruction) and asks_removal(name_of(b) or "", instruction)
            or (allow_deletions and is_import(b) and not (go and goimports.is_header(b)))}
    # a cgo file's imports are not shown (`handled`), and any the model writes anyway are left out, not pasted in as a
    # second declaration: `goimports.fix_imports` adds a standard package its code then uses
    edited += "" if not edited or edited.endswith("\n") else "\n"  # its last line is a line (a member's: a class's)
    new_lines, imports = goimports.split_output(split_lines(edited)) if goimports.is_go(lines) else \
        (split_lines(edited), None)
    shown = shown_blocks(blocks, instruction)
    cuts = cut_down(blocks, shown, instruction)
    if not any(line.strip() for line in new_lines):  # a class whose shown members all go: its members but those
        new_lines = [line for cut in members_going(blocks, cuts, instruction) for line in cut + ["\n"]] or new_lines
    named = {i for i, b in enumerate(blocks) if is_named(b, instruction)}
    asked = {i for i in named if asks_removal(name_of(blocks[i]) or "", instruction)}
    if asked and asked == named and not any(line.strip() for line in new_lines):  # all it was shown goes: nothing back
        gone = {k for i in asked for k in range(notes_above(blocks, i), i + 1)}  # with the comment on it, no import
        return "".join(joined([b for i, b in enumerate(blocks) if i not in gone]))
    new_lines = redocumented(blocks, shown, cuts, rewrapped(blocks, cuts, new_lines), instruction)
    refuse_unshown(blocks, new_lines, shown, cuts)
    merged = merge_code(lines, new_lines, instruction, drop)
    if merged is None and any(name_of(b) for b in blocks) and min(
            (indent_of(line) for line in new_lines if not is_blank(line)), default=1) == 0:
        # a file of constants and arrow functions (npm's open-url.js): no definition names, but statements the
        # merge aligns by what they assign (`merge.head`)
        merged = joined(merge_blocks(blocks, split_blocks(new_lines, 0), instruction, "the file", drop))
    if merged is None:
        raise EditError("cannot place the model's output for the focused definitions: it holds none of them; "
                        "nothing written")
    keep_unshown(blocks, cuts, "".join(merged))
    kept_groups(blocks, shown, "".join(merged), instruction)
    merged = redeclared(blocks, shown, merged)
    return "".join(goimports.merge_imports(lines, merged, imports) if imports and go else merged)


def rewrapped(blocks: list[Block], cuts: dict[int, Cut], new_lines: list[str]) -> list[str]:
    """The output with the namespace (module) lines it left out put back around a class shown inside them: written
    without them, the class would be pasted at the file's top beside the namespace that still holds it. Only where
    the class kept its indentation in the namespace; written at another, refused."""
    written = {b.name for b in split_blocks(new_lines, 0) if b.name}
    for i, cut in cuts.items():
        body = body_of(blocks[i]) or []
        if blocks[i].name in written or not cut.inner:
            continue
        inside = {body[k].name: indent_of(body[k].lines[header_size(body[k]) - 1]) for k in cut.inner}
        found = [(m.group(1), indent_of(line)) for line in new_lines if (m := DEF.match(line)) and m.group(1) in inside]
        if not found:
            continue
        name, indent = found[0]
        if indent != inside[name]:
            raise EditError(f"the model wrote {name} outside {blocks[i].name}, where it was shown, at another "
                            "indentation; nothing written")
        lines, at = blocks[i].lines, next(k for k, line in enumerate(new_lines) if indent_of(line) >= indent
                                          and not is_blank(line))  # after the imports
        return new_lines[:at] + lines[:opening(blocks[i])] + new_lines[at:] + lines[len(lines) - ending(blocks[i]):]
    return new_lines


def redeclared(blocks: list[Block], shown: set[int], merged: list[str]) -> list[str]:
    """`merged` without a shown constant the output declares anew as a definition of the same name: "Convert sleep to
    a regular function declaration" had `export function sleep` merged in beside `export const sleep = ...`, `sleep`
    declared twice (a probe, session 38)."""
    out = split_blocks(merged, 0)
    new = {b.name for b in out if b.name} - {b.name for b in blocks if b.name}
    old = [blocks[i].text for i in shown if not blocks[i].name and name_of(blocks[i]) in new]
    return joined([b for b in out if b.text not in old]) if old else merged


def keep_unshown(blocks: list[Block], cuts: dict[int, Cut], merged: str) -> None:
    """Refuse a merge that lost a member of a class cut down for the model (`narrowed`) that it was not shown: each
    stays byte for byte by design, and a probe (session 38) found the design's gaps by losing them (a field whose
    line named a word of the instruction; a class written back at another indentation, replaced whole)."""
    for i, cut in cuts.items():
        kept_members(blocks[i], cut, merged)


def kept_members(block: Block, cut: Cut, merged: str) -> None:
    """`keep_unshown` for one class cut down, and the classes cut down inside it."""
    for k, member in enumerate(body_of(block) or []):
        if k in cut.inner:
            kept_members(member, cut.inner[k], merged)
        elif k not in cut.picked and member.text.strip() and member.text not in merged:
            what = member.name or next(line.strip() for line in member.lines if line.strip())
            raise EditError(f"the merge would lose {block.name}'s `{what}`, which the model was not shown; "
                            "nothing written")


def kept_groups(blocks: list[Block], shown: set[int], merged: str, instruction: str) -> None:
    """Refuse a merge that changed a Go `const (...)` group the model was not shown, or lost a constant of one it
    was that the instruction does not ask away: a probe (session 39) had the model, shown `Delay` alone, write a
    group of its own that replaced the file's (`MaxRetries`, still read, gone); shown a group to change one of its
    constants, an output without a sibling lost it."""
    for i, b in enumerate(blocks):
        if not (names := group_names(b)):
            continue
        if i not in shown and b.text not in merged:
            raise EditError(f"the model rewrote the group that declares {names[0]}, which it was not shown; "
                            "nothing written")
        for name in names:
            if not removes_member(name, instruction) and not re.search(rf"(?m)^[ \t]*{re.escape(name)}\b", merged):
                raise EditError(f"the merge would lose the constant {name}, which the instruction does not ask "
                                "away; nothing written")


# Words of an instruction that ask for more than taking definitions out: then an unchanged answer is no removal to make
BEYOND_REMOVAL = re.compile(rf"\b(?:{ADDING}|{RESHAPES}|{REWORKS}|keep\w*|but|except\w*|call\w*|pass\w*|if|unless|"
                            r"whether|only)\b", re.I)


def echoed_removal(text: str, shown: str, edited: str, instruction: str,
                   lines: list[str] | None = None) -> tuple[str, ...]:
    """The definitions to take out when the instruction asks only that the named ones go and the model gave back
    what it was shown, unchanged, or a comment alone: real probes (sessions 36 and 37) asked to "Remove the
    DefaultConfig function" and "Remove the ringbuf_is_full function", were shown that function alone, and wrote it
    back ("no change proposed"); asked to "remove the parse_sku function", the model wrote `# No changes made`
    (refused: it shares nothing with the file). What to do is then not in doubt. () otherwise: the model's answer
    stands."""
    said = [line for line in edited.split("\n") if line.strip()]  # not split_lines: merge_focus splits it once
    if (edited.strip() != shown.strip() and not (said and all(COMMENT_LINE.match(line) for line in said))) \
            or not asks_removal_only(instruction):  # an empty answer is the removal itself
        return ()
    blocks = split_blocks(split_lines(text) if lines is None else lines, 0)
    names: list[str] = []
    shown = shown_blocks(blocks, instruction)
    cuts = cut_down(blocks, shown, instruction)
    for i in sorted(shown):  # each shown whole and asked away, or its shown members
        cut = cuts.get(i)
        if cut is not None and all_going(cut, instruction):
            names += [f"{blocks[i].name}.{m}" for m in cut.named]
        elif cut is None and is_named(blocks[i], instruction) and asks_removal(name_of(blocks[i]) or "", instruction):
            names.append(name_of(blocks[i]) or "")
        else:
            return ()
    return tuple(names)


def members_going(blocks: list[Block], cuts: dict[int, Cut], instruction: str) -> list[list[str]]:
    """The bare lines (header, closing brace) of each class shown cut down (`narrowed`) whose shown members the
    instruction all asks away: merged back bodiless, such a class keeps its other members."""
    return [bare(blocks[i], cut) for i, cut in cuts.items() if all_going(cut, instruction)]


def bare(block: Block, cut: Cut) -> list[str]:
    """A class's header and closing lines, around the bare lines of the classes cut down inside it."""
    body = body_of(block) or []
    lines = block.lines
    return lines[:opening(block)] + [line for k, c in cut.inner.items() for line in bare(body[k], c)] + \
        lines[len(lines) - ending(block):]


def asks_removal_only(instruction: str) -> bool:
    """Whether the instruction asks for definitions to go and for nothing else ("Remove the `parse` helper, it is
    unused"; not "remove parse and call load instead")."""
    return bool(re.search(rf"\b(?:{AWAY})\b", instruction, re.I)) and not BEYOND_REMOVAL.search(
        re.sub(rf"\b(?:{AWAY})\b|\b(?:unused|dead|obsolete|deprecated|no\s+longer\s+used|not\s+used)\b", " ",
               plain(instruction), flags=re.I))


def refuse_unshown(blocks: list[Block], new_lines: list[str], shown: set[int], cuts: dict[int, Cut]) -> None:
    """The model was shown the `shown` definitions (of a class cut down by `narrowed`, the members named) and the
    imports; a definition it writes under the name of one it was not shown would replace the user's code with a
    guess (a helper it made up whose name the file already uses, or the whole file written from imagination).
    Unchanged text is harmless; changed, refused."""
    written = split_blocks(new_lines, 0)
    unshown(blocks, written, shown, "")
    for i, cut in cuts.items():
        unshown_members(blocks[i], cut, written, "")


def unshown_members(block: Block, cut: Cut, written: list[Block], owner: str) -> None:
    """`refuse_unshown` for the members of one class cut down, and of the classes cut down inside it."""
    body = body_of(block) or []
    same = [b for b in written if b.name == block.name]
    if len(same) > 1:  # C++'s `class IntervalMap {` and `class IntervalMap<K, V>::const_iterator {`: the class's own
        same = [b for b in same if defining_line(b) == defining_line(block)]  # (a fuzz, session 43)
    for b in same:
        mine = body_of(b) or []
        unshown(body, mine, {k for k, m in enumerate(body) if m.name in cut.shown}, f"{owner}{b.name}.")
        for k, inner in cut.inner.items():
            unshown_members(body[k], inner, mine, f"{owner}{b.name}.")


def unshown(old: list[Block], new: list[Block], shown: set[int], owner: str) -> None:
    """Refuse a definition of `new` named as one of `old` the model was not shown, and changed."""
    hidden: dict[str, set[str]] = {}  # a name may be defined several times (`@overload` stubs)
    for i, b in enumerate(old):
        if b.name and i not in shown:
            hidden.setdefault(b.name, set()).add(b.text)
    # a definition shown under a name an unshown one has too (C++'s `class DenseMapIterator;` declared above the
    # class: a fuzz, session 40), written with the shown one's defining line, is the shown one
    heads = {(b.name, defining_line(b)) for i, b in enumerate(old) if b.name and i in shown}
    for b in new:
        if b.name in hidden and b.text not in hidden[b.name] and (b.name, defining_line(b)) not in heads:
            raise EditError(f"the model wrote {owner}{b.name}, which it was not shown (only the definitions the "
                            "instruction names, and those that build or call them, are); nothing written")


PY_DEF = re.compile(r"^([ \t]*)(?:async\s+)?def\s+(\w+)\s*[(\[]")  # a Python function's first line


def signature_end(lines: list[str], at: int) -> int | None:
    """The index after a Python `def` line's signature (its `:` at bracket depth 0, over up to 12 lines), or None."""
    depth = 0
    for k in range(at, min(len(lines), at + 12)):
        code = lines[k].split("#", 1)[0].rstrip()  # not a comment's `(`
        depth += bracket_depth(code)
        if depth <= 0 and code.endswith(":"):
            return k + 1
    return None


def docstring_span(lines: list[str], at: int) -> tuple[int, int] | None:
    """Where the docstring of the Python function whose `def` is `lines[at]` lies, with the blank lines after it
    (start, end), or None when it has none."""
    start = signature_end(lines, at)
    if start is None or start >= len(lines) or not DOCSTRING.match(first := lines[start].strip()) \
            or indent_of(lines[start]) <= indent_of(lines[at]):
        return None
    closes = string_end(lines[start:start + 400], first)
    if closes is None:
        return None
    end = start + closes + 1
    while end < len(lines) - 1 and is_blank(lines[end]):
        end += 1
    return (start, end) if end < len(lines) else None  # a body after it: else the docstring is the body


def undocumented(block: Block, olds: list[str]) -> Block:
    """For a rename's view, a Python function (or a class's members, `narrowed`) without a docstring that names no
    old name: smtplib's `send` renamed showed 372 lines, most of them its callers' docstrings, and the model ran past
    300 s (a probe, session 43). `redocumented` puts them back."""
    span = left_out(block, olds)
    return block if span is None else Block(block.name, block.lines[:span[0]] + block.lines[span[1]:], block.blank)


def left_out(block: Block, olds: list[str]) -> tuple[int, int] | None:
    """The lines of a Python function's docstring (and the blank lines after it) that a rename's view leaves out:
    where it cites no old name (`cited`); None where it keeps them."""
    m = PY_DEF.match(block.lines[header_size(block) - 1]) if olds and block.name and block.lines else None
    span = docstring_span(block.lines, header_size(block) - 1) if m else None
    if span is None or any(cited(old, "".join(block.lines[span[0]:span[1]])) for old in olds):
        return None
    return span


def cited(name: str, text: str) -> bool:
    """Whether a docstring refers to `name`: by any mention where the name reads as code (`_get_nodeinfo`,
    `getReply`), else only by one written as code (`send()`, `self.send`, `` `send` ``): smtplib's docstrings say
    "send" as a verb ("Hostname to send for this command")."""
    if re.search(r"[_\d]|[a-z][A-Z]", name):
        return mentioned(name, text)
    return bool(re.search(rf"[.`'\"]{re.escape(name)}(?![\w$])|(?<![\w$]){re.escape(name)}\s*[(`'\"]", text))


def left_out_docs(blocks: list[Block], shown: set[int], cuts: dict[int, Cut], olds: list[str]) -> dict:
    """The docstrings a rename's view left out (`undocumented`), by (owner class, function name), in file order (a
    property's getter and setter share a name, as do `@singledispatch`'s `_`s): lines to put back after the
    signature, where the model writes the function."""
    found: dict[tuple[str, str], dict[int, list[str]]] = {}
    seen: Counter = Counter()

    def note(owner: str, block: Block) -> None:
        key = (owner, block.name or "")
        seen[key] += 1  # the how-manieth function of this name in the view
        if (span := left_out(block, olds)) is not None:
            found.setdefault(key, {})[seen[key]] = block.lines[span[0]:span[1]]

    def members_of(block: Block, cut: Cut) -> None:
        body = body_of(block) or []
        for k in cut.picked:
            if k in cut.inner:
                members_of(body[k], cut.inner[k])
            elif body[k].name:
                note(block.name or "", body[k])

    for i in sorted(shown):
        if i in cuts:
            members_of(blocks[i], cuts[i])
        elif blocks[i].name:
            note("", blocks[i])
    return found


def redocumented(blocks: list[Block], shown: set[int], cuts: dict[int, Cut], new_lines: list[str],
                 instruction: str) -> list[str]:
    """The model's output with the docstrings its view left out (`undocumented`) put back under each function's
    signature, found by its owner class and its name (old or new), in order. Refused where the model wrote a
    docstring there itself, its body at another indentation, or the function where it was not shown, or fewer times:
    which to keep, or where, cannot be told."""
    olds = renamed(instruction)
    docs = left_out_docs(blocks, shown, cuts, olds) if olds else {}
    if not docs:
        return new_lines
    back, seen = {new: old for old, new in renames(instruction)}, Counter()
    out = joined([restored(b, "", docs, back, seen) for b in split_blocks(new_lines, 0)])
    for (_owner, name), left in docs.items():
        names = {name} | {new for new, old in back.items() if old == name}
        if left and any((m := PY_DEF.match(line)) and m.group(2) in names for line in new_lines):
            raise EditError(f"the model wrote {name} where its view did not show it, or not as often; its "
                            "docstring, left out of the view, would be lost; nothing written")
    return out


def restored(block: Block, owner: str, docs: dict[tuple[str, str], dict[int, list[str]]], back: dict[str, str],
             seen: Counter) -> Block:
    """`redocumented` for one block of the output (taking its docstring from `docs`: the function's own, by its
    place among those of its name), and a class's members in turn."""
    body = body_of(block) if block.name else None
    if body is not None:
        top, end = opening(block), len(block.lines) - ending(block)
        owner = back.get(block.name or "", block.name or "")  # a class renamed itself (datetime's `tzinfo`)
        inner = joined([restored(m, owner, docs, back, seen) for m in body])
        return Block(block.name, block.lines[:top] + inner + block.lines[end:], block.blank)
    name = block.name or ""
    key = (owner, name) if (owner, name) in docs else (owner, back.get(name, ""))
    if key not in docs or not (m := PY_DEF.match(block.lines[header_size(block) - 1])):
        return block
    seen[key] += 1
    if seen[key] not in docs[key]:
        return block
    doc, at = docs[key].pop(seen[key]), signature_end(block.lines, header_size(block) - 1)
    after = next((line for line in block.lines[at:] if not is_blank(line)), "") if at is not None else ""
    if at is None or indent_of(after) != indent_of(doc[0]) or DOCSTRING.match(after.strip()):
        raise EditError(f"the model wrote {m.group(2)} with a docstring of its own, or its body at another "
                        "indentation, where its view left the docstring out; nothing written")
    return Block(block.name, block.lines[:at] + doc + block.lines[at:], block.blank)


def copy_view(before: str, after: str, instruction: str) -> tuple[str, str, tuple[str, ...]]:
    """An edit as focused copy mode sees it: (the text shown, the text the program must give, the
    focused names). When the instruction names definitions that both versions hold, and putting the
    after-version's definitions back into the before file gives the after file, that is the focused
    pair; else the whole files and no names. One rule for the bench's oracle programs and for the
    selector's training examples (training/), so the selector learns on the prompts copy mode builds."""
    shown = focus_of(before, instruction)
    goal = focus_of(after, instruction) if shown is not None else None
    if shown is not None and renamed(instruction) and (goal is None or goal.names != shown.names):
        # a rename's after-file no longer has the old names: its view is that of the new ones, the rename undone
        goal = focus_of(after, "; ".join(f"Rename {new} to {old}" for old, new in renames(instruction)))
        goal = goal if goal is not None and len(goal.names) == len(shown.names) else None
        goal = None if goal is None else Focus(goal.text, shown.names)
    if shown is None or goal is None or goal.names != shown.names:
        return before, after, ()
    try:
        if merge_focus(before, goal.text, instruction) != after:
            return before, after, ()
    except EditError:
        return before, after, ()
    return shown.text, goal.text, shown.names

