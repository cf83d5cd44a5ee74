"""Whole-file safety: a partial rewrite must never become a diff that deletes the user's code.

Asked for a whole file, small models often write only the part they changed. A diff against that
fragment would delete everything else, so every regenerated text is checked here first:

- it is a *fragment* when it drops what the instruction does not name: a top-level definition
  (each of several with one name), a whole top-level statement anywhere (also one dropped beside a
  statement the output rewrote, when the output still uses a name only it defined), or more than a few
  lines at the start or end of the file. No instruction *word* lifts this check (a "strip" in "make f
  strip its input" is not a request to delete); only naming what goes, or `allow_deletions`, does;
- a fragment is *merged* into the original (`merge`); a whole output that drops a method of a class the
  instruction does not ask to remove (`asks.removal`) is refused with a one-line reason, since merging it
  back could undo the edit;
- a definition written a second time in the same scope is `editor.twice`'s to judge; that a file still parses,
  in every language, is `editor.syntax`'s job.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from dataclasses import dataclass, field

from editllm.editor.align import line_opcodes
from editllm.editor.asks import AWAY, GONE, NEEDLESS, RENAMING, asks_removal, mentioned, renames
from editllm.editor.blocks import (
    CONTAINER,
    HEADING,
    IDENT,
    LITERAL,
    PAIRING_LIMIT,
    RUST_ATTRIBUTE,
    Block,
    blank_tail,
    brace_delta,
    braced,
    child_indent,
    class_members,
    defined_names,
    defines,
    field_name,
    header_end,
    header_size,
    import_names,
    imported,
    indent_of,
    is_blank,
    line_likeness,
    members,
    names,
    notes_above,
    paired,
    property_name,
    split_blocks,
    target,
)
from editllm.editor.errors import EditError, few
from editllm.editor.languages import LANGUAGES, is_prose, language
from editllm.editor.merge import PARTIAL, merge_code, merge_region, renamed_text
from editllm.editor.source import split_lines


@dataclass(frozen=True)
class WholeFile:
    """The text to diff against, and how it was obtained."""

    text: str
    complete: bool  # the model's output was already a whole file
    merged: bool  # a fragment was placed into the original
    lines: list[str] = field(default_factory=list, repr=False, compare=False)  # split_lines(text), not split again


def missing_names(old: list[str], new: list[str], instruction: str) -> list[str]:
    """Top-level definitions of `old` that `new` lacks and the instruction does not ask to remove (`removal`:
    "make main call stop" names `stop` without asking for that); a name defined several times (`@overload`
    stubs, a getter and a setter) counts each time."""
    new_blocks, old_blocks = split_blocks(new, 0), split_blocks(old, 0)
    have = Counter(defined_names(new_blocks))
    want = Counter(defined_names(old_blocks))
    dissolved = {name for name, left in taken_apart(old_blocks, new_blocks).items()
                 if all(asks_removal(m, instruction) for m in left)}
    return [n for n in want if have[n] < want[n] and not asked_away(n, instruction) and n not in dissolved
            and not renamed_with(n, instruction, have)]


def renamed_with(name: str, instruction: str, have: Counter) -> bool:
    """Whether a definition is gone because the asked rename renamed it too: `test_format_price` written as
    `test_format_money` for "rename format_price to format_money" (a probe, session 37: the whole test file, written
    right, was taken for a fragment, and the old test and its import were pasted back beside the new ones, so the
    tests no longer imported). `formatPrice` → `formatMoney` in `testFormatPrice` too."""
    for old, new in renames(instruction):
        for a, b in ((old, new), (old[:1].upper() + old[1:], new[:1].upper() + new[1:])):
            if a != name and a in name and have[name.replace(a, b)]:
                return True
    return False


def asked_away(name: str, instruction: str) -> bool:
    """Whether the instruction asks a definition away, by its name or, for `Inventory:dump` (Lua) or `Writer.pool`,
    by its own last part ("remove the dump method": a probe, session 35, had it undone)."""
    own = re.split(r"[.:]", name)[-1]
    return asks_removal(name, instruction) or (own != name and asks_removal(own, instruction))


# A TestCase's methods that pytest style writes as fixtures, under names of their own
LIFECYCLE = {"setUp", "tearDown", "setUpClass", "tearDownClass", "setUpModule", "tearDownModule", "__init__",
             "asyncSetUp", "asyncTearDown"}
SELF = re.compile(r"\(\s*(?:self|cls)\b")  # a method's first parameter


def taken_apart(old: list[Block], new: list[Block]) -> dict[str, set[str]]:
    """The classes the output took apart into top-level functions ("convert these tests to pytest style": a
    `unittest.TestCase` made functions), each with its methods the output has nowhere (`setUp` and the like become
    fixtures under names of their own; of a class with tests, only its tests count: a helper may be a fixture
    now). Taken apart: at least two methods and half of them now top-level functions that the file did not define,
    none still taking `self` (two methods written without their class are a fragment). Merged back, such a class
    stood beside its own functions (exit 0, session 30)."""
    old_top, top = set(names(old)), {b.name: b for b in new if b.name}
    out: dict[str, set[str]] = {}
    for b in old:
        parts = class_members(b)
        if parts is None:
            continue
        methods = set(names(parts)) - LIFECYCLE
        moved = {n for n in methods if n in top and n not in old_top}
        if len(moved) >= 2 and 2 * len(moved) >= len(methods) and \
                not any(SELF.search("".join(top[n].lines[:header_size(top[n])])) for n in moved):
            left = methods - moved
            out[b.name] = {n for n in left if n.startswith("test")} if any(n.startswith("test") for n in methods) \
                else left
    return out


def missing_members(old: list[str], new: list[str], instruction: str, sparse: bool = False) -> list[str]:
    """Members of a class (`A.g`, `Shop.Cart.g` in a namespace) that the output drops and the instruction does not
    ask to remove, in classes both texts define once: a class written whole with a method gone lost it silently.
    Merging it back could undo the edit (a class turned into a dataclass drops its `__init__`), so the output is
    refused instead. With `sparse`, only those of a class the output shows with fewer than half of its members,
    under the same header and with none of its own: shown to place the one it changed (a fragment, merged), not
    rewritten (a class made a dataclass drops `__init__`, `__repr__` and `__eq__` at once)."""
    return dropped_members(split_blocks(old, 0), split_blocks(new, 0), "", instruction, sparse)


# A class decorator or base that writes a class's `__init__` and the like from its fields (a dataclass, attrs, a
# pydantic model, a NamedTuple): a class made one drops those methods as part of the edit
GENERATES = re.compile(r"@(?:dataclasses\.)?dataclass\b|@(?:attr\.s|attrs?\.(?:define|frozen|mutable)|define|frozen)\b|"
                       r"\((?:[\w.]*\.)?(?:BaseModel|NamedTuple|TypedDict)\b")
ASKS_GENERATED = re.compile(r"data ?class|attrs|pydantic|named ?tuple|typed ?dict|base ?model|model class", re.I)
GENERATED = {"__init__", "__repr__", "__eq__", "__hash__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}


def dropped_members(olds: list[Block], news: list[Block], where: str, instruction: str, sparse: bool) -> list[str]:
    """`missing_members` among the containers `olds` and `news` (one level of a file), and those nested in them."""
    olds = [b for b in olds if b.name]
    news = [b for b in news if b.name]
    old_count, new_count = Counter(b.name for b in olds), Counter(b.name for b in news)
    new_by = {b.name: b for b in news}
    out: list[str] = []
    for b in olds:
        top = header_size(b)
        if old_count[b.name] != 1 or new_count[b.name] != 1 or not CONTAINER.match(b.lines[top - 1]):
            continue
        inner, nb = child_indent(b), new_by[b.name]
        if inner is None or child_indent(nb) != inner:
            continue
        old_members = members(b.lines[header_end(b):], inner, braced(b))
        new_members = members(nb.lines[header_end(nb):], inner, braced(nb))
        have, want = Counter(names(new_members)), Counter(names(old_members))
        have += Counter(name for m in new_members if not m.name and m.lines  # a method made a property keeps its name
                        and (name := field_name(m.lines[0]) or property_name(m.lines)) and name in want)
        made = GENERATES.search("".join(nb.lines[:header_size(nb)])) and not GENERATES.search("".join(b.lines[:top])) \
            and ASKS_GENERATED.search(instruction)
        gone = [f"{where}{b.name}.{n}" for n in want if have[n] < want[n] and not asks_removal(n, instruction)
                and not (made and n in GENERATED) and not renamed_with(n, instruction, have)]
        shown_only = (b.lines[:top] == nb.lines[:header_size(nb)] and not (have - want))  # same header, no new ones
        if not sparse or (shown_only and 2 * sum((want & have).values()) < sum(want.values())):
            out += gone
        out += dropped_members(old_members, new_members, f"{where}{b.name}.", instruction, sparse)
    return out


TABLE = re.compile(r"^\[\[?[\w.\- \"']+\]\]?\s*(?:#.*)?$")  # a TOML or INI table's header: `[dependencies]`
SHELL_FUNCTION = re.compile(r"^(?:function\s+([\w:.-]+)\s*(?:\(\s*\))?|([\w:.-]+)\s*\(\s*\))\s*\{?\s*$")
TYPE_DECLARATION = re.compile(r"^(?:export\s+)?(?:type|var|const)\s+([A-Za-z_]\w*)\b(?!\s*[(,])")
# selectors, then `{` (a one-line rule too); no `=` outside `[attr=value]`: a TOML inline table is none
CSS_RULE = re.compile(r"^[.#:\[*]?[\w-](?:\[[^\]]*\]|[^{};()=\[])*\{\s*(?:[^{}]*:[^{}]*\}\s*)?$")
CSS_DECLARATION = re.compile(r"^\s+(?:--)?[\w-]+\s*:[^,]*;\s*$")  # `  color: #000;`, not a JS object's `  a: 1,`


def named_by(block: Block, instruction: str) -> bool:
    """Whether the instruction names this block: a definition by its name, an assignment by its
    target, an import by a name it imports, a compound statement or a Markdown heading by a word
    of its first line; a CSS at-rule (`@media`) asked away by its word. A call (`main()`) is named only with its
    function, where the instruction asks for the call to go too ("remove the main function and its call": a probe,
    session 35, had that read as an output cut short and undone)."""
    if block.name:
        return mentioned(block.name, instruction) or asked_away(block.name, instruction)
    if not block.lines:
        return False
    first = block.lines[0].strip()
    name = target(block.lines[0])
    imports = imported(block)
    if imports:
        words = [w for part in imports[1] for w in IDENT.findall(part)]
    elif name:
        words = IDENT.findall(name)
    elif TABLE.match(first):  # `[profile.release]` by its whole name or its last part, not by `profile` alone
        table = first.split("]")[0].strip("[ \"'")
        words = [table, table.rsplit(".", 1)[-1]]
    elif first.endswith(":") or HEADING.match(first):
        words = IDENT.findall(first.lstrip("#"))
    elif words := headed(block):  # only asked away: a review had `die()` lost, written, when "like die does" named it
        return any(asks_removal(word, instruction) for word in words)
    elif at := AT_RULE.match(first):  # CSS's `@media (...) {`, `@keyframes spin {`: asked away ("the media query")
        return any(asks_removal(word, instruction) for word in filter(None, at.groups()))
    else:  # a call (`main "$@"`, `main()`) only where its function and its call are asked away (a probe, session 35)
        call = CALL.match(first)
        return bool(call and CALLS.search(instruction) and asks_removal(call[1], instruction))
    return any(not keyword.iskeyword(w) and mentioned(w, instruction) for w in words)


AT_RULE = re.compile(r"^@([\w-]+)(?:\s+([A-Za-z_][\w-]*))?[^;]*\{\s*$")
CALL = re.compile(r"^([A-Za-z_][\w.]*)(?:\s*\(.*\)\s*;?|\s+(?!=)\S.*)?$")
CALLS = re.compile(r"\b(?:calls?|called|calling|invocations?)\b", re.I)


def headed(block: Block) -> list[str]:
    """The names a shell function (`dns_myapi_rm() {`, `function cleanup {`), a CSS rule (`.number {`,
    `pre.screen {`) or a Go or TypeScript declaration (`type Core interface {`, `var API Core`) goes by, which
    `blocks` leaves unnamed; none for other blocks. A generator (session 29) had
    "remove the function `slack_send`" and "remove the rule `.number`" refused or undone: the whole output read
    as a fragment, the rule or function taken for a statement left out unasked."""
    first = block.lines[0].strip() if block.lines else ""
    shell = SHELL_FUNCTION.match(first) or TYPE_DECLARATION.match(first)
    if shell:
        return [w for w in shell.groups() if w]
    if CSS_RULE.match(first) and (len(block.lines) == 1 or CSS_DECLARATION.match(block.lines[1])):
        return [w for w in re.findall(r"[\w-]+", first) if not w[0].isdigit()]
    return []


STRING_OPENERS = ('"""', "'''", "`")  # the delimiters of a string that may span lines; Rust's r#" is read apart
RAW_OPEN = re.compile(r'\br(#+)"')  # Rust's raw string, closed by `"` and as many `#`


def _string_left_open(lines: list[str], open_string: str | None) -> str | None:
    """The delimiter of the multi-line string still open after `lines`, read from `open_string` (the one open
    before them): a triple quote, a backtick or a Rust raw string's `"#`. Counted, not parsed: a line comment's
    backtick is rare next to what a wrong guess costs (lines of one statement, not of another)."""
    for line in lines:
        position = 0
        while position < len(line):
            if open_string is None:
                raw = RAW_OPEN.search(line, position)
                found = [(line.find(d, position), d) for d in STRING_OPENERS if line.find(d, position) >= 0]
                if raw and all(raw.start() < at for at, _ in found):
                    open_string, position = '"' + raw.group(1), raw.end()
                elif found:
                    at, open_string = min(found)
                    position = at + len(open_string)
                else:
                    break
            else:
                end = line.find(open_string, position)
                if end < 0:
                    break
                open_string, position = None, end + len(open_string)
    return open_string


def owners(blocks: list[Block], prose: bool | None = None) -> list[int]:
    """For each block, the block whose naming covers it: itself, or in prose its section heading. `prose`: whether
    the file is prose (by its name); unknown, a file with no definitions is taken for prose, and a code file's `# `
    comment then read as a heading that owned the statements under it (a TOML key or a Python import dropped
    unseen under "# License" when the instruction said "license", session 28)."""
    out: list[int] = []
    prose = not names(blocks) if prose is None else prose
    section: int | None = None
    for k, b in enumerate(blocks):
        if prose and HEADING.match(b.lines[0] if b.lines else ""):
            section = k
        out.append(section if prose and section is not None else k)
    if not prose:  # the comment right above a definition is its own: "remove `f`" takes its JSDoc with it
        for i, b in enumerate(blocks):
            if b.name or headed(b):
                for k in range(notes_above(blocks, i), i):
                    out[k] = i
        table = None  # a TOML or INI table owns its keys: "remove the `[palette]` section" takes them
        for k, b in enumerate(blocks):
            if b.lines and TABLE.match(b.lines[0].strip()):
                table = k
            elif table is not None and out[k] == k:
                out[k] = table
        # a statement that opens a multi-line string (Go's `...`, Rust's r#"..."#, Python's triple quotes) holds
        # the column-0 lines up to its end: a generator (session 29) had "remove the function TestErrorSlice"
        # refused, its string's lines read as statements left out. Brackets would be no guide: a review found
        # `'\033[33m'` and `sed 's/\[//g'` leave one open, and a whole script then held by one function
        holder, open_string = 0, None
        for k, b in enumerate(blocks):
            if open_string and b.name is None and out[k] == k:
                out[k] = out[holder]
            else:
                holder, open_string = k, None
            open_string = _string_left_open(b.lines, open_string)
    return out


def unasked_losses(old: list[str], new: list[str], instruction: str, prose: bool | None = None) -> tuple[int, bool]:
    """Lines the output drops with nothing written in their place, in blocks the instruction does
    not name: how many non-blank ones were cut off at the start or end of the file, and whether a
    whole top-level statement went anywhere (a definition's own lines may shrink in an edit; a
    statement that vanishes was deleted)."""
    edge: set[int] = set()
    lost: set[int] = set()
    aligned: list[tuple] = []
    loose: set[int] = set()  # rewritten in place without a counterpart: lost only if the output still needs it
    sunk: set[int] = set()  # top-level lines whose place only indented lines took
    # Two line alignments, and what either finds lost: blank lines as anchors keep a trailing blank run of the
    # output from hiding what it cut off; without them, two imports cannot pass for a rewrite of the
    # `def answer():` and its body that the output opens with (it matched the blank lines after them).
    for junk in (None, is_blank):
        ops = line_opcodes(old, new, junk)
        aligned = ops if junk is None else aligned
        for n, (tag, i1, i2, j1, j2) in enumerate(ops):
            if tag in ("delete", "replace") and (j2 - j1) * 3 < (i2 - i1):
                gone = {k for k in range(i1, i2) if not is_blank(old[k])}
                lost |= gone
                if n in (0, len(ops) - 1):
                    edge |= gone
            elif tag == "replace" and junk is None:  # rewritten in place, but a line with no counterpart is gone
                loose |= unmatched(old[i1:i2], new[j1:j2], i1)
                elsewhere = set(old[:i1]) | set(old[i2:])  # lines of the file the output only moved here
                tops = [line for line in new[j1:j2] if not is_blank(line) and indent_of(line) == 0]
                if all(line in elsewhere for line in tops):
                    # no new top-level line came in place of top-level statements that have no counterpart: those
                    # are gone (`edited = True` added to `load` aligned with the `__all__` after it, or the
                    # definitions of a reordered output with the imports it left out)
                    sunk |= {k for k in unmatched(old[i1:i2], new[j1:j2], i1) if indent_of(old[k]) == 0}
    if lost or loose or sunk:
        taken = accounted(old, new, instruction, ops=aligned)  # part of the edit, not left out
        taken |= placed_away(old, instruction) if prose else set()
        lost, loose, sunk, edge = lost - taken, loose - taken, sunk - taken, edge - taken
    blocks, new_blocks = split_blocks(old, 0), split_blocks(new, 0)
    owner = owners(blocks, prose)
    written = Counter(b.text for b in new_blocks)
    had = Counter(b.text for b in blocks)
    count, whole = 0, False
    needed = dangling(new)
    heads = {word for nb in new_blocks for word in headed(nb)}  # `.a, .b {`: rules the output writes
    documents = (_documents_asked_away(blocks, instruction) | _sections_asked_away(blocks, instruction)
                 | _last_asked_away(blocks, instruction) | _comments_asked_away(blocks, instruction)) \
        if not prose else set()
    named = [named_by(b, instruction) or  # a block is named by its own name, or by what owns it
             (asks_removal(blocks[owner[k]].name, instruction) if owner[k] > k and blocks[owner[k]].name
              else named_by(blocks[owner[k]], instruction))  # a definition's comment goes only with it, asked away
             or _merged_into(b, heads, instruction) or k in documents for k, b in enumerate(blocks)]
    # a copy of a line the file has twice (`// A different case of f.` above two tests) that went with a named
    # block: the alignment may call the other copy lost (a generator, session 29: "remove the function f" refused)
    asked = Counter(b.text for k, b in enumerate(blocks) if named[k])
    for k, (b, start) in enumerate(_located(blocks)):
        content = [start + n for n, line in enumerate(b.lines) if not is_blank(line)]
        moved = b.name is None and written[b.text] >= had[b.text] - asked[b.text]  # written elsewhere, not lost
        if not content or moved or named[k]:
            continue
        count += sum(1 for n in content if n in edge)
        whole = whole or (b.name is None and all(n in lost for n in content))
        whole = whole or (b.name is None and all(n in lost | loose for n in content) and bool(needed(b)))
        whole = whole or (b.name is None and content[0] in sunk and all(n in lost | loose | sunk for n in content))
        whole = whole or _lost_declaration(b, start, lost, instruction)
    return count, whole or bool(_unbound_go_imports(old, new)) or _lost_decorator(blocks, new_blocks, instruction)


# A part of a prose file asked away by its place: "delete the last paragraph", "drop the closing section" (not "remove
# the typo in the last paragraph", nor "shorten the last paragraph")
PLACED = re.compile(r"\b(?:remove|delete|drop|cut|omit|strip|eliminate|discard|get rid of|take out)\s+(?:the\s+)?"
                    r"(last|final|closing|first|opening)\s+(paragraph|section)\b", re.I)
UNDERLINE = re.compile(r"^([=\-~^*#])\1{2,}\s*$")  # a reST title's underline


def placed_away(old: list[str], instruction: str) -> set[int]:
    """The lines of the first or last paragraph, or the last section, that the instruction asks to remove by its
    place, which none of its words names (a review, session 32: "delete the last paragraph" of a README was read as
    an output cut short, its paragraph put back, and the edit undone, exit 0). A first section is not read: the
    title and the introduction above it may be meant."""
    asked = PLACED.search(QUOTED.sub(" ", instruction))
    if asked is None:
        return set()
    last, section = asked.group(1).lower() in ("last", "final", "closing"), asked.group(2).lower() == "section"
    text = [k for k, line in enumerate(old) if not is_blank(line)]
    if not text:
        return set()
    if section:  # the last one: from its title (a Markdown heading, or a reST title above its underline) on
        titles = [k for k in text if HEADING.match(old[k])] + [
            k - 1 for k in text if k and not is_blank(old[k - 1]) and UNDERLINE.match(old[k])]
        return set(range(max(titles), len(old))) if titles and last else set()
    k = text[-1] if last else text[0]
    step = -1 if last else 1
    stretch = {k}
    while 0 <= k + step < len(old) and not is_blank(old[k + step]):
        k += step
        stretch.add(k)
    return stretch


YAML_DOCUMENT = re.compile(r"^---(?:\s|$)")  # a YAML document's start (`---`, `--- !tag`)
YAML_NAMES = re.compile(r"^(?:kind|  name|name):\s*[\"']?([\w.-]+)", re.M)  # a Kubernetes object's kind and name


YAML_KIND = re.compile(r"^kind:[ \t]*['\"]?([\w.-]+)", re.M)  # a Kubernetes-style document's kind and its name
YAML_NAME = re.compile(r"^metadata:[ \t]*\n(?:[ \t]+.*\n)*?[ \t]+name:[ \t]*['\"]?([\w.-]+)", re.M)


def _documents_asked_away(blocks: list[Block], instruction: str) -> set[int]:
    """The blocks of the YAML documents (between `---` lines) the instruction asks to remove by their kind or name
    ("remove the Deployment", "drop the web-canary document"): a document's lines are top-level statements that no
    other rule names. A name two documents share names neither (a Service and a Deployment both called `web`), but
    a kind and a name together may ("remove the web Deployment")."""
    starts = [k for k, b in enumerate(blocks) if b.lines and YAML_DOCUMENT.match(b.lines[0])]
    if len(starts) < 2 and not (starts and starts[0] > 0):
        return set()
    bounds = ([0] if starts[0] > 0 else []) + starts + [len(blocks)]
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    texts = ["".join(line for b in blocks[i:j] for line in b.lines) for i, j in spans]
    words = [set(YAML_NAMES.findall(text)) for text in texts]
    seen = Counter(w for ws in words for w in ws)
    pairs = [(kind[1], name[1]) if (kind := YAML_KIND.search(text)) and (name := YAML_NAME.search(text)) else None
             for text in texts]  # "remove the api Deployment", where a Service is called api too
    twice = Counter(pairs)
    return {k for (i, j), ws, pair in zip(spans, words, pairs, strict=True)
            if any(seen[w] == 1 and asks_removal(w, instruction) for w in ws)
            or (pair and twice[pair] == 1 and all(asks_removal(w, instruction) for w in pair)) for k in range(i, j)}


SECTION_NOTE = re.compile(r"^[ \t]*(?:#(?![!\[{])|//|--(?:\s|$)|;)")  # a comment of code, SQL, Lua, INI


def _note(block: Block) -> bool:
    """Whether every line of the block is a comment (`SECTION_NOTE`'s kinds)."""
    return bool(block.lines) and all(SECTION_NOTE.match(line) for line in block.lines)

# Words of a comment that say nothing of what the lines under it are
FILLER_WORDS = {"the", "and", "for", "with", "from", "this", "that", "all", "are", "its", "more", "than", "each", "per"}


def _sections_asked_away(blocks: list[Block], instruction: str) -> set[int]:
    """The blocks of a section headed by a comment (the comment and the lines under it up to a blank line: a SQL
    query under `-- Overdue loans`, settings under `# Logging`) that the instruction asks to remove by the comment's
    words ("remove the members with more than three open loans query"). A probe (session 35) had such a section
    that ended the file read as an output cut short, put back, and the edit undone, exit 0; the words of most
    comments match no instruction, so a section not asked away is judged as before."""
    if not re.search(rf"\b(?:{AWAY})\b", instruction, re.I):
        return set()
    said = {w.lower() for w in IDENT.findall(instruction)}
    out: set[int] = set()
    for k, b in enumerate(blocks):
        if b.name or b.blank or not _note(b):
            continue
        words = {w.lower() for line in b.lines for w in IDENT.findall(line) if len(w) > 2} - FILLER_WORDS
        if not words or len(words & said) * 3 < len(words) * 2:
            continue
        end = k
        while end + 1 < len(blocks) and not blocks[end].blank and not blocks[end + 1].name:
            end += 1
        out |= set(range(k, end + 1))
    return out


COMMENTS_AWAY = re.compile(rf"\b(?:{AWAY})\b[^.;]*?\b(?:comments|every comment|each comment|comment lines)\b", re.I)


def _comments_asked_away(blocks: list[Block], instruction: str) -> set[int]:
    """The comment blocks of a file whose instruction asks its comments away ("remove all the comments", "drop the
    blank lines and comments"). A probe (session 35) had the model's right output read as a fragment, the header
    and doc comments merged back (Go, Lua, SQL, INI, SCSS, .env), or the output refused as partial."""
    if not COMMENTS_AWAY.search(QUOTED.sub(" ", instruction)):
        return set()
    return {k for k, b in enumerate(blocks) if b.lines and not b.name
            and all(SECTION_NOTE.match(line) or COMMENT_LINE.match(line) for line in b.lines)}


NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
LAST = re.compile(rf"\b(?:{AWAY})\s+(?:the\s+)?(?:last|final|closing)\s+(?:(\d+|{'|'.join(NUMBERS)})\s+)?[a-z]", re.I)


def _last_asked_away(blocks: list[Block], instruction: str) -> set[int]:
    """The blocks at the file's end that the instruction asks to remove by their place: "delete the last query"
    (the last run of lines with no blank line between, its comment included), "remove the last three settings"
    (the last three statements, and the comments among and right above them). A probe (session 35) had both read
    as an output cut short and undone, exit 0."""
    m = LAST.search(QUOTED.sub(" ", instruction))
    content = [k for k, b in enumerate(blocks) if b.lines and "".join(b.lines).strip()]
    if not m or not content:
        return set()
    if m[1]:
        count = int(m[1]) if m[1].isdigit() else NUMBERS[m[1].lower()]
        statements = [k for k in content if not _note(blocks[k])]
        if not 0 < count <= len(statements):
            return set()
        start = statements[-count]
        while start > 0 and not blocks[start - 1].blank and _note(blocks[start - 1]):
            start -= 1  # the comment right above them goes with them
        return set(range(start, len(blocks)))
    start = content[-1]
    while start > 0 and not blocks[start - 1].blank and blocks[start - 1].lines:
        start -= 1
    return set(range(start, len(blocks)))


def _merged_into(block: Block, heads: set[str], instruction: str) -> bool:
    """Whether a rule or function the instruction names is written under another head of the output ("style `.a`
    and `.b` with one rule": `.b {` gone, `.a, .b {` written): rewritten, not lost. A name only mentioned, with no
    head of the output that writes it (`die()` gone while "pass it to die" named it), is lost."""
    words = headed(block)
    return bool(words) and any(word in heads and mentioned(word, instruction) for word in words)


def _lost_declaration(block: Block, start: int, lost: set[int], instruction: str) -> bool:
    """Whether a CSS rule the instruction does not name loses a declaration it does not name either: a rule's lines
    are its statements. A generator (session 29): "delete the `.keyword` rule" written with two declarations of
    `.specialchar` gone too, once such deletions were no longer refused as fragments."""
    if not block.lines or not CSS_RULE.match(block.lines[0].strip()) or not headed(block):
        return False
    return any(start + n in lost and CSS_DECLARATION.match(line)
               and not mentioned(line.split(":")[0].strip(), instruction) for n, line in enumerate(block.lines))


def _lost_decorator(blocks: list[Block], new_blocks: list[Block], instruction: str) -> bool:
    """Whether the output keeps a Rust item but leaves out an attribute line of it (`#[test]`, `#[repr(C)]`) the
    instruction does not name: a lost `#[test]` stops a test from running, with exit 0. Attributes joined their
    items' blocks this session, where a lost one had been a statement lost; a review found both written then.
    Counted over every block of a name (a struct and its `impl` share one). Python's decorators are left to the
    merge as before: a decorator removed in other words ("stop caching") is the edit more often than a loss."""
    before: dict[str, Counter] = {}
    after: dict[str, Counter] = {}
    for side, source in ((before, blocks), (after, new_blocks)):
        for b in source:
            if b.name:
                attributes = (line.strip() for line in b.lines if RUST_ATTRIBUTE.match(line))
                side.setdefault(b.name, Counter()).update(attributes)
    for name, had in before.items():
        if name not in after or sum(after[name].values()) >= sum(had.values()) or asks_removal(name, instruction):
            continue  # the item went (or one of its name, asked away), or has as many attributes as before
        if any(not any(mentioned(w, instruction) for w in IDENT.findall(line)) for line in had - after[name]):
            return True
    return False


# comments (line and block), strings, raw strings and runes, in one pass: a `/*` inside a string opens no comment
GO_NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|`[^`]*`|\'(?:[^\'\\\n]|\\.)*\'', re.S)
GO_SPEC = r'(?:([A-Za-z_]\w*|\.)\s+)?"([^"\s]+)"'  # one import: an alias (or `.`, `_`) and the path
GO_IMPORT = re.compile(rf'^\s*(?:import\s+)?{GO_SPEC}\s*(?://.*)?$')


def _unbound_go_imports(old: list[str], new: list[str]) -> list[str]:
    """The Go packages whose import line the output leaves out while it still uses them (`http.StatusOK` with
    `"net/http"` gone): a line inside the import group is no statement of its own for the fragment checks, so a
    generator's whole outputs with one import dropped were written (session 28: 22 Go files), which then do not
    compile. Only in a Go file (one that starts with `package`)."""
    if not any(line.startswith("package ") for line in old[:50]):
        return []
    text = "".join(GO_NOT_CODE.sub(" ", line) for line in new)  # code only: no comment, string or rune
    kept = {path for _, path in go_imports(new)}
    provided = {name for path in kept for name in go_names(None, path)}  # `math/rand/v2` for `math/rand`
    out = []
    for alias, path in go_imports(old):
        if path in kept or alias in ("_", "."):
            continue
        names = go_names(alias, path)
        if names & provided:
            continue  # swapped for another package of the name (a new major version, another YAML library)
        if any(name and re.search(rf"(?<![\w.]){re.escape(name)}\.[A-Za-z_]", text) for name in names):
            out.append(path)
    return out


def go_imports(lines: list[str]) -> list[tuple[str | None, str]]:
    """(alias, path) of each import of a Go file: `import "fmt"` and the lines of an `import (...)` group."""
    out = []
    group = False
    for line in lines:
        if line.startswith("import (") and ")" in line.split("//")[0]:  # a group on one line: `import ("a"; "b")`
            out += [(m[1], m[2]) for m in re.finditer(GO_SPEC, line)]
            continue
        group = (group or line.startswith("import (")) and not line.startswith(")")
        m = GO_IMPORT.match(line) if group or line.startswith("import ") else None
        if m:
            out.append((m[1], m[2]))
    return out


def go_names(alias: str | None, path: str) -> set[str]:
    """The names a Go import may go by: its alias, else its path's last part as Go code names it (`go-toml/v2` is
    `toml`, `yaml.v3` is `yaml`, `math/rand/v2` is `rand`)."""
    if alias:
        return {alias}
    parts = [p for p in path.split("/") if not re.fullmatch(r"v\d+", p)] or [""]
    last = parts[-1]
    return {last.replace("-", "_"), last.split("-")[-1], last.removesuffix("-go"), last.split(".")[0],
            path.split("/")[-1]} - {""}  # and `k8s.io/api/core/v1`, which is `v1`


def dangling(new: list[str]):
    """A test of a dropped statement: the names it defined that the output still uses but defines nowhere
    (`from .ansi import AnsiDecoder` swapped for `import logging` while `AnsiDecoder(...)` stays). A statement
    folded into another (`x = f()` then `g(x)` written `g(f())`, two imports joined) leaves none. The output's
    definitions are over-counted (any assignment, import or definition on any line), so the test errs on the
    side of taking the output as the user's edit."""
    text = "".join(new)
    used = set(IDENT.findall(text))
    bound = set(re.findall(r"([A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=(?!=)", text))
    bound |= set(re.findall(r"\b(?:as|for|def|class|function|import)\s+([A-Za-z_$][\w$]*)", text))
    for b in split_blocks(new, 0):
        bound |= defines(b)
        bound |= {n for line in b.lines if (t := target(line)) for n in t.split(",")}

    def needed(block: Block) -> set[str]:
        return {n for n in defines(block) if n in used and n not in bound}
    return needed


def unmatched(old: list[str], new: list[str], offset: int) -> set[int]:
    """Indices (from `offset`) of the non-blank old lines of a rewritten stretch left without a counterpart
    (`paired`). So `Z = 3` beside `Y = 2` → `Y = 5` is gone (only one line came back for two), where `Y = 5`
    alone would match both."""
    if len(old) * len(new) > PAIRING_LIMIT:
        return set()  # a rewrite of this size is the model's whole text: judged as before, not line by line
    kept = paired(old, new, line_likeness, 0.6)
    return {offset + i for i, line in enumerate(old) if not is_blank(line) and i not in kept}


ENDIF = re.compile(r"^\s*#\s*endif\b")
GUARD = re.compile(r"^\s*#\s*(?:ifndef\s+|if\s+!\s*defined\s*\(?\s*)(\w+)")  # an include guard's test
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s*$")  # and its definition (no value)
# A line that only closes what an earlier line opened: a docstring's `"""`, a call's `)`, a literal's `]`
CLOSER_LINE = re.compile(r"^\s*(\"\"\"|\'\'\'|[)\]}])[)\]};,]*\s*$")
DOCSTRING = re.compile(r"^\s*[rRuU]?(\"\"\"|\'\'\')")  # a stretch that opens with a triple-quoted string
UNUSED_IMPORTS = re.compile(r"\b(?:unused|unnecessary|superfluous|redundant)\s+(?:\w+\s+)?imports?\b|"
                            r"\bimports?\s+(?:that\s+(?:are|is)\s+|which\s+(?:are|is)\s+)?(?:not|never)\s+used\b",
                            re.I)
CJS_EXPORT = re.compile(r"^\s*(?:module\.)?exports\b")
ESM_EXPORT = re.compile(r"^export\s")
CONTENT_WORD = re.compile(r"[a-z][a-z0-9]{3,}")  # a word of four letters or more, in lower case


# A line's words, in order: one whose words the lines written in its place hold, in order, was joined into a longer
# line (a paragraph put on one line, made a list), not lost. A generator (session 30): the last paragraph of a
# LICENSE put on one line was read as the file cut short, and its old lines were added back under the new one.
WORD = re.compile(r"\w+")


def _joined(old: list[str], i1: int, i2: int, now: str, lines: set[str]) -> set[int]:
    """The lines of old[i1:i2] whose words `now` (the text written in their place) holds in order: joined into a
    longer line, not lost. A line of one or two words counts with a neighbour (a paragraph's last line, `SOFTWARE.`).
    One that `now` holds as a line of its own (`lines`, stripped) is not joined but a copy: in a file of repeated
    lines (a test table), the other copy may be the one written (a generator's fragment, session 30)."""
    words = f" {' '.join(WORD.findall(now))} "

    def held(text: str) -> bool:
        found = WORD.findall(text)
        return len(found) >= 3 and f" {' '.join(found)} " in words

    return {k for k in range(i1, i2) if WORD.search(old[k]) and old[k].strip() not in lines
            and (held(old[k]) or held("".join(old[max(i1, k - 1):k + 1])) or held("".join(old[k:k + 2][:i2 - k])))}


def accounted(old: list[str], new: list[str], instruction: str, shape: bool = True,
              ops: list[tuple] | None = None) -> set[int]:
    """Indices of the old lines that an edit of the whole file took out as part of the edit, though neither they nor
    a line like them are left: what the fragment checks must not read as the model leaving part of the file out.

    Each was taken for a fragment, and the merge put the old lines back beside the new ones (exit 0), or broke the
    file and blamed the edit. A generator of asked edits and a review (session 28): a licence header's comments
    rewritten as one SPDX line; an include guard replaced by `#pragma once` (its `#endif` put back); a FIXME over the
    code the edit fixed; an import whose last use the edit took out; the last line moved up and edited (posted
    twice); lines naming what the instruction asks to stop (a codecov step); CommonJS exports of a file made an ES
    module. The bundled model on real files (session 28, 9 of 44 outputs read as fragments, every one a whole file):
    "Remove the unused imports" (put back: "no change proposed"); a module docstring made one line (its lone closing
    triple quote put back: "no longer valid Python"); a `try` importing cython made `compiled = False` (the `try` kept
    below it, so the edit did nothing). Each is read narrowly, so that a fragment cut short keeps being merged:
    comments count only where the same place now holds new comment lines, a marker comment only over code the
    output changed, a closing line only where the lines written hold as many of its delimiter as the lines taken
    out, a word of the instruction only when the output no longer has it and the instruction is not a rename.

    `shape`: also count what only tells a whole file from a fragment (comments rewritten in place, a closing line,
    a docstring rewritten); whether such a rewrite was asked, and how long a run it leaves out, is
    `no_unasked_code_deletion`'s to judge. `ops`: the two texts' line alignment, where the caller has it."""
    if ops is None:
        ops = line_opcodes(old, new)
    unchanged = sum(1 for op, i1, i2, _, _ in ops if op == "equal" for k in range(i1, i2) if not is_blank(old[k]))
    if 3 * unchanged < sum(1 for line in old if not is_blank(line)):
        return set()  # most of the file is not there: the model wrote part of it, whatever it replaced
    had = {line.strip() for line in old}
    fresh = [j for op, _, _, j1, j2 in ops if op in ("insert", "replace") for j in range(j1, j2)
             if not is_blank(new[j]) and new[j].strip() not in had]  # lines the edit wrote that the file did not have
    gone = [k for op, i1, i2, _, _ in ops if op in ("delete", "replace") for k in range(i1, i2) if not is_blank(old[k])]
    out: set[int] = set()
    marked = _marked(old)
    for op, i1, i2, j1, j2 in ops:
        if op == "delete" and any(o != "equal" and i1 < a <= i2 + 10 for o, a, _, _, _ in ops):
            out |= {k for k in range(i1, i2) if k in marked}  # a TODO/FIXME retired by the change just under it
        if op != "replace":
            continue
        if shape and any(COMMENT_LINE.match(new[j]) and new[j].strip() not in had for j in range(j1, j2)):
            out |= {k for k in range(i1, i2) if COMMENT_LINE.match(old[k])}  # comments rewritten in place
        put = [new[j] for j in range(j1, j2) if not is_blank(new[j])]
        inner = {old[k].strip(): indent_of(old[k]) for k in range(i1, i2)}
        if put and old[i1].strip() == "try:" and all(
                line.strip() in inner and indent_of(line) < inner[line.strip()] for line in put):
            out |= set(range(i1, i2))  # a statement unwrapped: a `try` made the one assignment it held
        was, now = "".join(old[i1:i2]), "".join(new[j1:j2])
        out |= _joined(old, i1, i2, now, {new[j].strip() for j in range(j1, j2)})
        if shape and DOCSTRING.match(was) and DOCSTRING.match(now) \
                and was.count(was.lstrip()[:3]) == 2 and now.count(now.lstrip()[:3]) == 2:
            out |= set(range(i1, i2))  # a docstring rewritten whole ("a one-line docstring")
    removed = "".join(old[k] for op, i1, i2, _, _ in ops if op != "equal" for k in range(i1, i2))
    added = "".join(new[j] for op, _, _, j1, j2 in ops if op != "equal" for j in range(j1, j2))
    for k in gone:
        closer = CLOSER_LINE.match(old[k])
        if shape and closer and added.count(closer[1]) >= removed.count(closer[1]):
            out.add(k)  # the closing line of a construct the edit rewrote whole: a docstring made one line
    if any(ESM_EXPORT.match(new[j]) for j in fresh):  # made an ES module: its CommonJS exports go
        out |= {k for k in gone if CJS_EXPORT.match(old[k])}
    guards = {m[1]: k for k in gone if (m := GUARD.match(old[k]))}
    defined = {m[1]: k for k in gone if (m := DEFINE.match(old[k])) and m[1] in guards}
    last_endif = max((k for k, line in enumerate(old) if ENDIF.match(line)), default=None)
    if defined and last_endif in gone:  # an include guard taken out whole: its test, its name, the file's last #endif
        out |= {guards[name] for name in defined} | set(defined.values()) | {last_endif}
    deleted = [k for op, i1, i2, _, _ in ops if op == "delete" for k in range(i1, i2) if not is_blank(old[k])]
    edits = _edited_into(ops, old, new)
    spare = [j for j in fresh if j not in edits]  # not an edit of a line in its own place
    if len(deleted) * len(spare) <= PAIRING_LIMIT:  # moved and edited: each spare line stands for one deleted line
        moved = paired([old[k] for k in deleted], [new[j] for j in spare], _moved_likeness, 0.6)
        out |= {deleted[n] for n in moved}
    rewritten = {k for op, i1, i2, _, _ in ops if op == "replace" for k in range(i1, i2)}
    new_words = set(IDENT.findall("".join(new)))
    lines_of: dict[str, set[int]] = {}  # each name of the file, the lines that hold it
    for k, line in enumerate(old):
        for name in set(IDENT.findall(line)):
            lines_of.setdefault(name, set()).add(k)
    unused = UNUSED_IMPORTS.search(instruction)
    for b, at in _located(split_blocks(old, 0)):
        bound = import_names(b)
        if not bound or bound & new_words:
            continue
        if unused:  # asked away, and the output uses none of its names
            out |= set(range(at, at + len(b.lines)))
            continue
        uses = {k for n in bound for k in lines_of.get(n, ())} - set(range(at, at + len(b.lines)))
        if uses and uses <= rewritten:
            out |= set(range(at, at + len(b.lines)))  # an import whose every use the edit rewrote away
    if not RENAMING.search(instruction):  # what the instruction names, gone everywhere, and what goes with it
        asked = set(CONTENT_WORD.findall(instruction.lower())) - set(CONTENT_WORD.findall("".join(new).lower()))
        asked -= PLAIN
        away = re.search(rf"\b(?:{AWAY})\b", instruction, re.I)
        for op, i1, i2, j1, _ in ops:
            if op == "delete" and j1 >= len(new) - blank_tail(new) and not away:
                continue  # the output stops there, nothing asked away: cut short before the edit, not the edit
            lines = [k for k in range(i1, i2) if op != "equal" and not is_blank(old[k])]
            named = [k for k in lines if asked & set(CONTENT_WORD.findall(old[k].lower()))]
            if named and 3 * len(named) >= len(lines):
                out |= set(lines)
    return out


def _marked(lines: list[str]) -> set[int]:
    """Indices of the comment lines of a TODO, FIXME, XXX or HACK note: its line and the comment lines that go on
    from it, up to an empty comment line, which the work retires whole ("Resolve the XXX in `import_dill`" took
    four lines of it). Not the comment above it: a long explanation that ends in a TODO is the file's own."""
    out: set[int] = set()
    for k, line in enumerate(lines):
        if MARKER.search(line) and COMMENT_LINE.match(line):
            out.add(k)
            n = k + 1
            while n < len(lines) and COMMENT_LINE.match(lines[n]) and not EMPTY_COMMENT.match(lines[n]) \
                    and not MARKER.search(lines[n]):
                out.add(n)
                n += 1
    return out


DECLARES = {"const", "let", "var", "use", "using", "include", "require", "extern", "mod", "package", "func", "fn"}


def _moved_likeness(a: str, b: str) -> float:
    """`line_likeness` of two lines that may be one moved and edited: both code or both comments (a commented-out
    `#define` lost beside a `#define` the edit wrote is no move), and an import or declaration only of the same name
    (an `import re` lost beside an added `import json` is no move either: a review, session 28)."""
    heads = IDENT.findall(LITERAL.sub('""', a))[:2], IDENT.findall(LITERAL.sub('""', b))[:2]  # names, not text
    keyed = bool(heads[0]) and (keyword.iskeyword(heads[0][0]) or heads[0][0] in DECLARES)
    if bool(COMMENT_LINE.match(a)) != bool(COMMENT_LINE.match(b)) or (keyed and heads[0] != heads[1]):
        return 0.0
    return line_likeness(a, b)


def _edited_into(ops: list[tuple], old: list[str], new: list[str]) -> set[int]:
    """Indices of the new lines of rewritten stretches that are edits of an old line there (`paired`)."""
    out: set[int] = set()
    for op, i1, i2, j1, j2 in ops:
        if op == "replace" and (i2 - i1) * (j2 - j1) <= PAIRING_LIMIT:
            out |= {j1 + n for n in paired(new[j1:j2], old[i1:i2], line_likeness, 0.6)}
    return out


def _located(blocks: list[Block]) -> list[tuple[Block, int]]:
    """Each block with the index of its first line."""
    out, at = [], 0
    for b in blocks:
        out.append((b, at))
        at += len(b.lines) + len(b.blank)
    return out


def is_fragment(old: list[str], new: list[str], instruction: str, path: str | None = None) -> bool:
    """Whether the output is part of the file: a definition or class member missing, a whole statement lost, or
    lines cut off at its start or end. `path`: the file's name, which says whether it is prose."""
    if not old:
        return False
    if missing_names(old, new, instruction) or missing_members(old, new, instruction, sparse=True):
        return True
    count, whole_block = unasked_losses(old, new, instruction, None if path is None else is_prose(path))
    nonblank = sum(1 for line in old if not is_blank(line))
    return whole_block or count > max(2, nonblank // 10)


def ensure_whole(old_text: str, new_text: str, instruction: str, allow_deletions: bool = False,
                 old_lines: list[str] | None = None, new_lines: list[str] | None = None,
                 path: str | None = None) -> WholeFile:
    """Return a whole file to diff against: the output itself, or the fragment merged into `old`.

    `allow_deletions` (the user's explicit flag) takes the output as the whole file as it is.
    `old_lines`, `new_lines`: the texts' `split_lines`, when the caller has them (a request splits
    each text once); the result carries its own lines on. `path`: the file's name, which a merge error
    then starts with (in a multi-file edit "the file" would not say which)."""
    old = split_lines(old_text) if old_lines is None else old_lines
    new = split_lines(new_text) if new_lines is None else new_lines
    if allow_deletions:
        return WholeFile(new_text, complete=True, merged=False, lines=new)
    for name, left in taken_apart(split_blocks(old, 0), split_blocks(new, 0)).items():
        if left := sorted(m for m in left if not asks_removal(m, instruction)):
            raise EditError(f"{path + ': ' if path else ''}the output takes class {name} apart into functions but "
                            f"leaves out {few(left)}, which the "
                            "instruction does not ask to remove; nothing written (ask for it, or --allow-deletions)")
    if not is_fragment(old, new, instruction, path):
        gone = missing_members(old, new, instruction)
        if gone:  # a merge would put them back and may undo the edit (a class made a dataclass): say so instead
            where = f"{path}: " if path else ""
            raise EditError(f"{where}the output drops {few(gone)}, "
                            "which the instruction does not ask to remove; nothing written (ask for it, or "
                            "--allow-deletions)")
        return WholeFile(new_text, complete=True, merged=False, lines=new)
    try:
        merged = merge_code(old, new, instruction)
        if merged is None:
            merged = merge_region(old, new, path is not None and is_prose(path), instruction)
        if missing_names(old, merged, instruction):
            raise EditError("the model wrote part of the file and it could not be merged safely; nothing written")
        had = set(names(split_blocks(old, 0)))
        added = sorted(set(names(split_blocks(merged, 0))) - had)
        said = FILE_NAME.sub(" ", instruction)  # "in getopt.py" names the file, not its `getopt` (a probe, session 37)
        stays = [n for n in had if mentioned(n, said)]  # named by a rename, and merged back
        if added and stays and RENAMING.search(instruction):  # the renamed definitions beside the old ones
            merged = renamed_fragment(old, new, merged, instruction, stays, added)
    except EditError as exc:  # the whole file was shown (or a view merged back): "partial output" would read wrong
        said = str(exc).replace(PARTIAL, "the output leaves out parts of the file and cannot be placed as a part", 1)
        raise EditError(f"{path}: {said}" if path else said) from None
    text = "".join(merged)  # merged blocks may join a last line that had no newline: split the text anew
    return WholeFile(text, complete=False, merged=True, lines=split_lines(text))


# A file's name in an instruction ("rename x to y in getopt.py and in the test file")
FILE_NAME = re.compile(r"(?<![\w.$])[\w./-]+\.(?:" + "|".join(sorted({k[1:] for k in LANGUAGES}, key=len, reverse=True))
                       + r")\b")


def renamed_fragment(old: list[str], new: list[str], merged: list[str], instruction: str, stays: list[str],
                     added: list[str]) -> list[str]:
    """A rename's fragment merged without the old definitions it renamed: those the instruction names that the
    fragment no longer mentions at all (it renamed them and every use it wrote), when the rest of the file, merged
    back, does not use them either. A probe (session 36): "Rename the Item class to StockItem." renamed the class
    and its five uses and stopped before the file's last function, which does not use it; the merge kept `class
    Item` beside `class StockItem`, refused as "their uses unchanged", which they were not. Else refused, saying
    which old names the rest of the file still uses."""
    text = "".join(new)
    renamed = [n for n in stays if not mentioned(n, text)]
    blocks = split_blocks(old, 0)
    if renamed:
        retry = merge_code(old, new, instruction, {i for i, b in enumerate(blocks) if b.name in renamed})
        if retry is not None and not any(mentioned(n, "".join(retry)) for n in renamed):
            return retry
    written = set(names(split_blocks(new, 0))) | set(stays)
    rest = [b.text for b in blocks if b.name and b.name not in written]  # the definitions the merge put back
    if used := [n for n in stays if any(mentioned(n, part) for part in rest)]:
        raise EditError(f"the model wrote only part of the file for a rename: new definitions ({few(added)}) beside "
                        f"the old ones, and the part of the file it did not write still uses {few(used)}; nothing "
                        "written")
    # the old name left in a statement (a probe, session 42: the model wrote the whole file, renamed one function
    # more than asked, so it read as a part, and left the old name in `__all__`; the message said the part of the
    # file the model did not write used it)
    raise EditError(f"the model's output reads as part of the file for a rename: new definitions ({few(added)}) "
                    f"beside the old ones, and the file would still use {few(stays)}; nothing written")


BRACED = {"c", "cpp", "java", "javascript", "typescript", "tsx", "jsx", "rust", "go", "csharp", "swift", "kotlin",
          "scala", "php", "css"}
def still_balanced(path: str, old: list[str], new: list[str]) -> None:
    """Refuse an edit of a brace language whose lost lines (`lost_lines`: left out, not moved, not edited) hold more of
    one brace than the other: the output cut short inside a block (the model closed its fence early), or a truncated
    definition the merge put in place of the whole one, loses a `}` (or a `{` with its body). A generator over real
    files (session 27) found both written with exit 0 in C, Go, Rust and JavaScript (`editor.syntax` reads them now,
    where the old file parsed; this count also holds where it did not, a C header's macros). A block taken out whole
    keeps the count, and so does a rewrite whose new lines hold as many more of one brace as the lines it took out (an
    if chain made a switch, a `match` made `.unwrap_or`, early returns: a review refused those when only the lost lines
    counted); a brace the line scan misreads in a new line (a regex literal, a raw string) refuses nothing."""
    if language(path) not in BRACED:
        return
    ops, lost_by_op = lost_lines(old, new)
    delta = brace_delta([old[k] for lost in lost_by_op.values() for k in lost])
    removed = brace_delta([line for op, i1, i2, _, _ in ops if op != "equal" for line in old[i1:i2]])
    added = brace_delta([line for op, _, _, j1, j2 in ops if op != "equal" for line in new[j1:j2]])
    if delta and removed != added:  # a rewrite (a switch for an if chain, an early return) writes its own pairs
        what = f"{delta} '{{'" if delta > 0 else f"{-delta} '}}'"
        raise EditError(f"{path}: the lines the edit leaves out hold {what} more than their pairs, so a block no "
                        "longer closes where it did (the output may be cut short); nothing written")


# Words that ask a prose edit to take text out (or to rewrite it, which may leave out lines)
PROSE_REMOVAL = re.compile(r"\b(remove|delete|drop|cut|trim|shorten|shorter|condense|concise|brief\w*|terse|"
                           r"summari[sz]e|simplify|strip|omit|get rid|eliminate|clean ?up|de-?dup\w*|duplicat\w*|"
                           r"pasted twice|merge|combine|"
                           r"replace|rewrite|reword|restructure|reorgani[sz]e|clear|empty|leave out|keep just|"
                           r"keep only|discard|prune|take out|no longer|obsolete|outdated|deprecated|unused|"
                           r"less (?:verbose|wordy)|fewer (?:words|lines))\b", re.I)
# A quoted name is not an ask: "swap the "Merge Requests" and "Patches" sections" asks for no merge (a real-model
# probe, session 30: the model dropped the Merge Requests paragraph, and the word in its title let it pass)
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')


def asks_shrinking(instruction: str) -> bool:
    """Whether the instruction, outside its quoted names, asks for something to go, shrink or be rewritten."""
    return PROSE_REMOVAL.search(QUOTED.sub(" ", instruction)) is not None


PROSE_RUN = 4  # text lines taken out in one place, with nothing written there, that make an unasked deletion


# A comment line: `#`/`//` line comments (not `#include`, `#[derive]`), and the lines of a `/* ... */` block
COMMENT_LINE = re.compile(r"^[ \t]*(?:#(?![\w!\[])|//|/\*|\*(?:\s|/|$))")
# An instruction about comments, or a refactor for readability, may reword them in place
COMMENTS = re.compile(r"\bcomment|\bdoc|\brefactor|\breadab|\btranslat|\bdescri|\bwording", re.I)
COMMENT_RUN = 3  # comment lines taken out in one place, their words written nowhere, that make an unasked deletion
NAME_TOKEN = re.compile(r"[A-Za-z_$][\w$]+")  # a name in code, two characters or more (`xs`, `db`)
COMMON = set(keyword.kwlist) | {"self", "cls", "this", "return", "const", "let", "var", "function", "null", "true",
                                "false", "int", "str", "new", "for", "else", "elif", "def", "end", "then", "nil"}
# Words that let lines go without a verb of removal: "we don't need the lint job", "the retry is redundant now",
# "convert to ES modules" (a review, session 27); and a comment that marks work to do, which the work retires
NOT_NEEDED = re.compile(rf"\b(?:{GONE}|{NEEDLESS}|any ?more|conver\w*|migrat\w*|port (?:it |this )?to|"
                        r"switch\w* to|instead|implement\w*)\b", re.I)
MARKER = re.compile(r"\b(?:TODO|FIXME|XXX|HACK)\b")
EMPTY_COMMENT = re.compile(r"^\s*(?:#|//|\*)\s*$")
CODE_RUN = 5  # lines taken out in one place, with nothing written there, that make an unasked deletion


def no_unasked_code_deletion(path: str, old: list[str], new: list[str], instruction: str) -> None:
    """Refuse a code or config edit that takes out what the instruction does not ask to go: a run of lines left out
    with (almost) nothing in their place, or comment lines whose words the output writes nowhere.

    The fragment checks count definitions and the file's edges, and a definition's own lines may shrink, so lines
    inside one vanished unseen. Of 1,007 real-model code edits the distillation kept (`training/data/distill-*`),
    10 asked for something added (a parameter, logging, a docstring, type hints) and left out 5 to 30 lines
    with nothing in their place, and 3 of those still passed every check: 32 lines of `elif` branches and the
    broadcast after them, gone from a function given a `strict` parameter. Each of the 10 was a loss; none of
    the 109 bench cases' gold edits is refused. Comments are
    the file's prose: a real probe (2026-11) asked to add a key and a dependency to an environment.yml; the model
    dropped the four-line comment under `dependencies:`, exit 0, the same on a rerun. A line the output writes
    elsewhere was moved, not lost; so was a comment whose words it writes elsewhere (turned into a docstring), and
    one rewritten in place counts only when the instruction does not speak of comments or ask for a refactor.
    At the file's end any line left out counts: an output that stops early and closes its fence passed for the
    whole file while it lost up to a tenth of it (the fragment checks' tolerance; a generator over real files,
    session 27: 76 of 182 Python files cut after a line like their last one, 25 of 300 YAML files).
    Nothing is judged when the instruction asks for anything to go, shrink, move or be rewritten."""
    if is_prose(path) or asks_shrinking(instruction) or re.search(rf"\b(?:{AWAY})\b", instruction, re.I) \
            or NOT_NEEDED.search(instruction):
        return
    not_renamed(path, old, new, instruction)
    ops, lost_by_op = lost_lines(old, new)
    if not any(lost_by_op.values()):
        return
    taken = accounted(old, new, instruction, False, ops)  # moved and edited, retired with the edit
    marked = _marked(old)
    edits = _edited_into(ops, old, new)  # a line edited in place (a signature given a parameter) rewrites no run
    new_code = [new[j] for op, _, _, j1, j2 in ops if op in ("insert", "replace") for j in range(j1, j2)
                if j not in edits]
    written = [line for op, _, _, j1, j2 in ops if op in ("insert", "replace") for line in new[j1:j2]]
    added = {w for line in written for w in _words(line)}
    ends = (len(old) - blank_tail(old), len(new) - blank_tail(new))
    for n, lost in lost_by_op.items():
        op, i1, i2, j1, j2 = ops[n]
        lost = [k for k in lost if k not in taken]
        notes = [k for k in lost if COMMENT_LINE.match(old[k])]
        if op == "replace" and notes == lost and (COMMENTS.search(instruction) or _names(instruction, notes, old)):
            continue  # comments rewritten in place, as asked ("the license header" made one SPDX line)
        if op == "delete" and lost and i2 >= ends[0] and j1 >= ends[1]:  # the output stops before the file does
            raise EditError(f"{path}: the output ends before the file does: it leaves out the last {len(lost)} lines "
                            f"from line {lost[0] + 1} on ({old[lost[0]].strip()[:40]!r} ...), which the instruction "
                            "does not ask to remove; nothing written (ask for it, or --allow-deletions)")
        if (j2 - j1) * 3 < i2 - i1 and len(lost) >= CODE_RUN and not _rewritten(lost, old, new_code):
            _refuse_lost(path, old, lost, "")
        if op == "replace" and COMMENTS.search(instruction):
            continue  # a comment rewritten in place, as asked
        notes = [k for k in notes if k not in marked]
        words = [w for k in notes for w in _words(old[k])]
        if len(notes) >= COMMENT_RUN and sum(w in added for w in words) * 2 < len(words):
            _refuse_lost(path, old, notes, "comment ")


def not_renamed(path: str, old: list[str], new: list[str], instruction: str) -> None:
    """Refuse an edit asked for a rename alone (`focus.renamed`) whose output leaves out `CODE_RUN` or more lines of
    the file, each written nowhere as it was or renamed: a rename takes no line out. A probe (session 43) asked to
    rename difflib's `_split_line`; the model deleted it and gave `_line_wrapper` its name, and the refusal spoke only
    of 9 comment lines, its advice (`--allow-deletions`) the way to a broken file."""
    from editllm.editor.focus import renamed  # focus reads this module's checks

    if not renamed(instruction):
        return
    swaps = renames(instruction)
    written = Counter(line.strip() for line in new if line.strip())
    gone = []
    for k, line in enumerate(old):
        if not (key := line.strip()):
            continue
        if written[form := renamed_text(key, swaps)] > 0:
            written[form] -= 1
        elif written[key] > 0:
            written[key] -= 1
        else:
            gone.append(k)
    if len(gone) >= CODE_RUN:
        raise EditError(f"{path}: the instruction asks only for a rename, but the output leaves out {len(gone)} lines "
                        f"of the file, from line {gone[0] + 1} ({old[gone[0]].strip()[:40]!r}) to line "
                        f"{gone[-1] + 1}; nothing written (ask for the rest in words of its own, or "
                        "--allow-deletions)")


def lost_lines(old: list[str], new: list[str]) -> tuple[list[tuple], dict[int, list[int]]]:
    """The line alignment's opcodes, and for each that removes lines the non-blank ones lost: more copies of the
    line in the file than in the output (a line the output writes elsewhere was moved; a `}` or `return false;`
    written for another block still leaves this one's lost), and for a rewritten stretch none edited into a line
    of the output there (`unmatched`)."""
    ops = line_opcodes(old, new)
    missing = Counter(line.strip() for line in old) - Counter(line.strip() for line in new)
    lost: dict[int, list[int]] = {}
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op not in ("delete", "replace"):
            continue
        edited = set() if op == "delete" else set(range(i1, i2)) - unmatched(old[i1:i2], new[j1:j2], i1)
        lost[n] = []
        for k in range(i1, i2):
            if not is_blank(old[k]) and k not in edited and missing[old[k].strip()] > 0:
                missing[old[k].strip()] -= 1
                lost[n].append(k)
    return ops, lost


# A name the line binds (`let mut out`, `for x in`, `const n =`, `total = 0`), and a method called on something
LOCAL = re.compile(r"\b(?:let(?:\s+mut)?|var|const|auto|for)\s+\(?([A-Za-z_$][\w$]*)|^\s*([A-Za-z_$][\w$]*)\s*:?=(?!=)")
METHOD_CALL = re.compile(r"\.([A-Za-z_$][\w$]*)\s*\(")


def _rewritten(gone: list[int], old: list[str], put: list[str]) -> bool:
    """Whether the lines the edit writes (`put`, anywhere: a helper extracted, a table built above) name most of
    what the lost lines `gone` named: a loop made a comprehension, an object literal put on one line, an if chain
    made a dict (a review, session 27: all refused as losses). A truncated function keeps only its header, whose
    names are few of its body's. Names the lost lines bind themselves (a loop's variable, an accumulator) and
    methods called on something are the construct's own workings, which a rewrite drops with it: a Rust loop that
    pushed into a `Vec` made `xs.iter().map(..).collect()` was refused for `out`, `mut` and `push` (session 28)."""
    text = [old[k] for k in gone]
    own = {g for line in text for m in LOCAL.findall(line) for g in m if g}
    own |= {m for line in text for m in METHOD_CALL.findall(line)}
    names = {w for line in text for w in NAME_TOKEN.findall(line)} - COMMON - own - {"mut", "auto"}
    written = {w for line in put for w in NAME_TOKEN.findall(line)}
    return bool(names) and len(names & written) * 2 >= len(names)


# Words of an instruction too common to name what it is about
PLAIN = {"this", "that", "these", "those", "with", "from", "into", "line", "lines", "file", "code", "make", "more",
         "when", "each", "them", "then", "than", "also", "have", "should", "would", "could", "only", "just", "some",
         "like", "instead", "please", "change", "update", "text", "comment", "comments", "header", "true", "false",
         "none", "null", "last", "first", "block", "above", "below", "after", "before", "move", "keep", "same",
         "value", "name", "call", "calls", "function", "method", "class", "section", "table", "step", "stop"}


def _names(instruction: str, gone: list[int], old: list[str]) -> bool:
    """Whether the instruction has a word (four letters or more, not a plain one) of the lines `gone`: "switch the
    license header to MIT" names the Apache licence text it replaces."""
    prose = re.sub(r"`[^`]*`", " ", instruction)  # its words, not the code it quotes
    words = {w for w in CONTENT_WORD.findall(prose.lower()) if len(w) >= 6} - PLAIN  # "license", not "state"
    return bool(words & {w for k in gone for w in CONTENT_WORD.findall(old[k].lower())})


def _refuse_lost(path: str, old: list[str], gone: list[int], kind: str) -> None:
    raise EditError(f"{path}: the output leaves out {len(gone)} {kind}lines from line {gone[0] + 1} on "
                    f"({old[gone[0]].strip()[:40]!r} ...), which the instruction does not ask to remove; "
                    "nothing written (ask for it, or --allow-deletions)")


def _words(line: str) -> list[str]:
    """A line's words (letters only, lower case), for telling a moved comment from a lost one."""
    return re.findall(r"[a-z]{2,}", line.lower())


PARAGRAPH_WORDS = 12  # a paragraph of this many words, taken out whole with nothing in its place, was lost


# Characters of scripts written without spaces between words (Chinese, Japanese), each counted as a word: a
# paragraph translated into Chinese is a few `\w+` runs, and read as one cut short (a review, session 31)
UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# An instruction that starts by having a named section's text revised ("update the Install section: we now recommend
# uv"), not added to ("add a sentence to the Usage section", which a model answered without the section's other
# paragraph; "... saying it now supports --json" is no revision either: a review)
REVISES = re.compile(r"^\W*(update|revise|rework|rewrite|change|switch|modernize|refresh)\b", re.I)


def _words_of(lines: list[str]) -> list[str]:
    """The lower-cased words of `lines`, each character of an unspaced script one word."""
    text = "".join(lines)
    return [w.lower() for w in WORD.findall(UNSPACED.sub(" ", text))] + UNSPACED.findall(text)


def _whole_paragraph(old: list[str], i1: int, i2: int, written: Counter, instead: list[str],
                     revised: tuple[int, int] | None = None, had: Counter | None = None) -> bool:
    """Whether old[i1:i2] holds a whole paragraph (text between blank lines) of `PARAGRAPH_WORDS` words or more that
    the output writes nowhere: none of its lines, and in their place (`instead`) fewer words than it had, not half
    of them its own (a rewording keeps its words, a translation or a change of tone its length). Markdown is often
    written a paragraph to a line, and a README's paragraphs are two or three lines: `PROSE_RUN` lines never
    counted them (session 30: an output that answered "add a sentence to the Usage section" without the section's
    other paragraph was written, exit 0). `revised`: the lines of the section the instruction has revised, whose
    paragraphs may shrink. `had`: the old lines' counts; a line the output writes fewer times than the file did is
    written nowhere (a generator, session 31: a paragraph ending "delegated to the Foundation Staff.", as the next
    section's did, was dropped and passed as written elsewhere)."""
    written_instead = _words_of(instead)
    kept = set(written_instead)
    k = i1
    while k < i2:
        if is_blank(old[k]):
            k += 1
            continue
        start = k
        while k < len(old) and not is_blank(old[k]):
            k += 1
        words = _words_of(old[start:k])
        whole = (start == 0 or is_blank(old[start - 1])) and k <= i2 and len(words) >= PARAGRAPH_WORDS \
            and not (revised and revised[0] <= start and k <= revised[1])
        translated = bool(UNSPACED.search("".join(old[start:k]))) != bool(UNSPACED.search("".join(instead)))
        if whole and all(written[line.strip()] < (had[line.strip()] if had else 1) for line in old[start:k]) \
                and len(set(words) & kept) * 2 < len(set(words)) and len(written_instead) < len(words) \
                and not translated:  # into or out of an unspaced script: its length says nothing
            return True
    return False


def no_unasked_prose_deletion(path: str, old: list[str], new: list[str], instruction: str) -> None:
    """Refuse a prose edit that takes out a run of text lines where the instruction asks for nothing of the kind:
    lines left out with nothing in their place, or a stretch rewritten into well under half its words. A line
    the output writes elsewhere was moved, not lost (a section swapped, a changelog sorted). Prose has no
    definitions for the fragment checks to count, so a block the model skipped vanished silently: a real probe
    (2026-11), a LICENSE holding two copies of the MIT text, asked to change a year; the model jumped from the
    first copy to the second, and 24 lines (the rest of the first licence, the Joyent attribution) went, exit 0."""

    if not is_prose(path) or asks_shrinking(instruction):
        return
    from editllm.editor.prosefocus import named_section  # prosefocus reads the prompt, which reads this module

    written = Counter(line.strip() for line in new if line.strip())
    had = Counter(line.strip() for line in old if line.strip())
    section = named_section(old, instruction) if REVISES.search(QUOTED.sub(" ", instruction)) else None
    for op, i1, i2, j1, j2 in line_opcodes(old, new):
        if op not in ("delete", "replace"):
            continue
        gone = [line for line in old[i1:i2] if line.strip() and written[line.strip()] < had[line.strip()]]
        words = sum(len(line.split()) for line in old[i1:i2])
        lost = (op == "delete" and len(gone) >= PROSE_RUN) or (
            op == "replace" and len(gone) >= PROSE_RUN and words >= 40
            and sum(len(line.split()) for line in new[j1:j2]) < words / 2) or _whole_paragraph(
                old, i1, i2, written, new[j1:j2], section and section[0], had)
        if lost:
            first = i1 + next(k for k, line in enumerate(old[i1:i2]) if line.strip() == gone[0].strip())
            raise EditError(f"{path}: the output leaves out {len(gone)} lines from line {first + 1} on "
                            f"({gone[0].strip()[:40]!r} ...), which the instruction does not ask to remove; nothing "
                            "written (ask for it, or --allow-deletions)")
