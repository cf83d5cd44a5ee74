"""Whole-file safety: a partial rewrite must never become a diff that deletes the user's code.

Asked for a whole file, small models often write only the part they changed. A diff against that
fragment would delete everything else, so every regenerated text is checked here first:

- it is a *fragment* when it drops what the instruction does not name: a top-level definition
  (each of several with one name), a whole top-level statement anywhere (also one dropped beside a
  statement the output rewrote, when the output still uses a name only it defined), or more than a few
  lines at the start or end of the file. No instruction *word* lifts this check (a "strip" in "make f
  strip its input" is not a request to delete); only naming what goes, or `allow_deletions`, does;
- a fragment is *merged* into the original by an in-order alignment of blocks (statements with
  what is nested under them): identical blocks are anchors matched in order, a definition replaces
  the old one of the same name (a lone method lands in its class), a changed statement replaces the
  old statement it aligns with, and prose goes into the region it matches best. A placement that
  depends on which of two identical blocks is meant is refused with a one-line reason, and so is a whole
  output that drops a method of a class the instruction does not ask to remove (`asks_removal`);
- a Python file that parsed before the edit must parse after it (`still_parses`): output cut short inside
  a definition, or a line of the model's own prose in the code, is refused, not written.
"""

from __future__ import annotations

import ast
import difflib
import keyword
import re
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field

from editllm.editor.errors import EditError
from editllm.editor.source import split_lines

# What may come before a definition's keyword: `export default`, Rust's `pub(crate)`, modifiers of Java, C#,
# Kotlin, TypeScript and PHP (`public abstract class`, `public function`), Python's `async`.
MODIFIERS = (r"^[ \t]*(?:export\s+(?:default\s+)?)?(?:pub(?:\([^)]*\))?\s+)?"
             r"(?:(?:public|private|protected|internal|abstract|final|sealed|static|open|data|partial|async)\s+)*")
# The name is followed by what a definition goes on with (a parameter list, a base, `{`, `:`, the line's end):
# "public interface that other modules use" in a README, or C's `static struct node *find(...)`, is none.
DEF = re.compile(
    MODIFIERS + r"(?:def|class|function\*?|fn|func|interface|struct|enum|trait|impl)\s+"
    r"(?!(?:extends|implements)\b)([A-Za-z_$][\w$]*)(?=\s*(?:[<({:;=\[@]|$|(?:extends|implements|where|for|final|"
    r"permits|private|protected|internal|public|constructor)\b))"
)
# A method in a braced class body (`  size() {`, `  static async load(url): Promise<X> {`, a C++ constructor): named
# only as a member of a class whose header opens a brace, never elsewhere (object literals, PHP `foreach`, C macros
# and Kotlin `repeat(3) {` look the same).
METHOD = re.compile(
    r"^[ \t]+(?:(?:static|async|get|set|public|private|protected|readonly|override)\s+)*\*?#?"
    r"(?!(?:if|for|foreach|while|switch|catch|with|function|return|else|do|try|new|await|typeof|elseif)\b)"
    r"([A-Za-z_$][\w$]*)\s*\([^()]*\)\s*(?::\s*[^{=;]+)?\{\s*$"
)
# Definitions whose body is a list of members: shown with one member, the others are kept.
CONTAINER = re.compile(MODIFIERS + r"(?:class|interface|struct|enum|trait|impl)\s")
DECORATOR = re.compile(r"^[ \t]*@")
ACCESS = re.compile(r"^(?:public|private|protected)(?:\s+(?:slots|Q_SLOTS))?\s*:\s*(?://.*)?$")
DECORATOR_NAME = re.compile(r"^[ \t]*@(?:[\w$]+\s*\.\s*)*([\w$]+)")  # `@functools.cache` → cache
CLOSER = re.compile(r"^[ \t]*[}\])]")
# An assignment or a declaration (`x = 1`, `x: int = 1`, `x: int`, `const X = 1`): group 1 is the target.
ASSIGN = re.compile(r"^[ \t]*(?:(?:export\s+)?(?:const|let|var)\s+)?([A-Za-z_$][\w$.]*(?:\s*,\s*[A-Za-z_$][\w$.]*)*)"
                    r"\s*(?::[^=]*)?(?:=(?!=)|$)")
IMPORT = re.compile(r"^(?:from\s+(\S+)\s+)?import\s+(.*)$", re.S)
HEADING = re.compile(r"^#{1,6}\s")
IDENT = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass
class Block:
    """A statement at one indentation level with everything nested under it."""

    name: str | None
    lines: list[str]  # content lines (no trailing blank lines)
    blank: list[str]  # blank lines that follow it

    @property
    def text(self) -> str:
        return "".join(self.lines)


@dataclass(frozen=True)
class WholeFile:
    """The text to diff against, and how it was obtained."""

    text: str
    complete: bool  # the model's output was already a whole file
    merged: bool  # a fragment was placed into the original
    lines: list[str] = field(default_factory=list, repr=False, compare=False)  # split_lines(text), not split again


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def is_blank(line: str) -> bool:
    return not line.strip()


def split_blocks(lines: list[str], indent: int) -> list[Block]:
    """Cut lines into blocks that start at a non-blank line indented exactly `indent`.

    Deeper lines, closing brackets at that level and a definition right after its decorators stay
    in the current block. Lines before the first block start (shallower text) form an unnamed block.
    """
    blocks: list[Block] = []
    for line in lines:
        starts = (not is_blank(line) and indent_of(line) <= indent and not CLOSER.match(line)
                  and line.strip() != "{"  # a brace on its own line (PHP's PSR-12, C#, Allman) opens the last one
                  and not (indent == 0 and ACCESS.match(line)))  # C++ `public:` in column 0 is inside its class
        if starts and blocks and blocks[-1].lines and not blocks[-1].blank:
            last = blocks[-1]
            if bare_decorator(last.lines[-1]) and indent_of(last.lines[-1]) == indent:
                starts = False  # `@decorator` then `def f`: one block named f
        if starts or not blocks:
            blocks.append(Block(None, [], []))
        block = blocks[-1]
        if is_blank(line):
            block.blank.append(line)
            continue
        if block.blank:  # blank lines inside a nested body belong to the content
            block.lines.extend(block.blank)
            block.blank = []
        block.lines.append(line)
        if block.name is None:
            m = DEF.match(line)
            if m and indent_of(line) == indent:
                block.name = m.group(1)
    return blocks


def bare_decorator(line: str) -> bool:
    """A line that is a decorator and nothing else (`@property`, `@app.route("/")`): the definition under it
    belongs to it. A decorated field (TypeScript's `@Input() userId: string;`) is a member of its own."""
    m = re.match(r"[ \t]*@[\w$.]+[ \t]*", line)
    if not m:
        return False
    rest, depth, quote = line[m.end():], 0, ""
    for k, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote and rest[k - 1] != "\\" else quote
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth <= 0 and not ch.isspace():
            return rest[k:].startswith(("#", "//"))  # only a comment after the decorator
    return True


def joined(blocks: list[Block]) -> list[str]:
    return [line for b in blocks for line in b.lines + b.blank]


def names(blocks: list[Block]) -> list[str]:
    return [b.name for b in blocks if b.name]


def mentioned(name: str, instruction: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", instruction) is not None


# Verbs after which a name goes away (removed, or renamed, inlined, merged, split, moved elsewhere); words after
# a name that say it should go; phrases before one that say it is not needed; words that only hint at removal.
GOES = (r"remov\w*|delet\w*|drop\w*|get(?:ting)? rid of|eliminat\w*|(?:take|taking|strip\w*|cut\w*) out|"
        r"renam\w*|inlin\w*|replac\w*|merg\w*|mov\w*|fold\w*|combin\w*|consolidat\w*|split\w*|"
        r"deprecat\w*|purg\w*|prun\w*|discard\w*|ditch\w*|kill\w*|nuke\w*|swap\w*|eras\w*|retir\w*|"
        r"throw\w* away")
GONE = (r"removed|deleted|dropped|unused|not used|never used|obsolete|redundant|dead|superfluous|unnecessary|"
        r"not needed|no longer (?:needed|used)|gone|goes away|(?:can|must|should|may|has to|have to|needs to) go")
NEEDLESS = r"no longer (?:need|use)\w*|(?:don't|do not|doesn't|does not|won't|will not) (?:need|use)\w*|no need for"
HINTS = rf"{GOES}|{GONE}|need\w*|anymore|any more|no longer|go"
RENAMES = re.compile(r"(?<![.\w])renam\w*|\b(?:new|better|clearer|descriptive|shorter|proper|different)\s+name\b",
                     re.I)
# A rename asked in any words: the refusal of a fragment that adds definitions beside the ones it renames.
RENAMING = re.compile(RENAMES.pattern + r"|->|\u2192|\binstead of\b|\bbe (?:called|named)\b|\bthe name\b|"
                      r"\bcall\s+\S+\s+\S+\s+instead\b", re.I)
QUOTES = r"[`'\"()\s]*"
ITEM = re.compile(r"\s*(?:[-*\u2022]|\d+[.)])(?:\s|$)")  # a line of a list: `- foo`, `2. bar`
# After a name, words that make it a part of what goes: "the `validate()` call", "the `debug` parameter".
PART = re.compile(r"[`'\"\s]*(?:\(\))?[`'\"\s]*(?:calls?|invocations?|parameters?|params?|arguments?|args?|checks?|"
                  r"fields?|imports?|prefix|suffix|decorators?|statements?|lines?|usages?|uses|references?|keys?|"
                  r"variables?|attributes?|options?|flags?|logging|prints?|comments?|docstrings?|type hints?|"
                  r"annotations?|handling|handlers?|branch(?:es)?|cases?|wrappers?|subclass(?:es)?|support|entry|"
                  r"entries|variants?|logic|code|paths?|clauses?|blocks?|loops?|guards?|retr(?:y|ies)|mentions?|"
                  r"cop(?:y|ies)|invalidation|bug|tests?|except(?:ion)?\s+(?:branch|clause|block|handler)s?)\b", re.I)
POSSESSIVE = re.compile(r"[`'\"]*'s\b")  # "the items route's auth check": a part of it
STOPS = {"keep", "keeping", "but", "except", "not", "leave", "leaving", "preserve", "since", "because", "so", "while",
         "when", "if", "then", "after", "before", "make", "add", "use", "call", "reuse", "invoke", "update", "fix",
         "simplify", "instantiate", "subclass", "import", "test", "extend", "wrap", "adapt", "document", "log",
         "check", "handle", "support", "above", "below", "next", "beside", "which", "who", "whose", "where"}
# After a name, the start of a clause of its own: "..., `parse` already does it", "(`baz` stays)".
SUBJECT = re.compile(r"[`'\")\s]*(?:already\s+|still\s+|also\s+|now\s+)?(?:does|do|did|handles|covers|replaces|stays|"
                     r"remains|works|returns|calls|has|have|is still|are still|takes over)\b", re.I)
# Words that make the name the object of something else: "the call to `validate`", "from `save`", "to `bar`".
OBJECT_OF = {"to", "into", "in", "from", "of", "with", "inside", "within", "by", "for", "on", "at", "as", "than",
             "onto", "via", "calls", "call", "calling", "uses", "use", "using", "called"}
FILLER = {"the", "a", "an", "its", "their", "this", "that", "method", "function", "helper", "class", "member", "field",
          "attribute", "property"}
CLAUSE = re.compile(r"[.;!?\n](?![\w$`(])")  # a sentence or clause ends (a dot inside `A.f` or `f.py` does not)
SPAN = r"(?:[^.;:!?\n]|\.(?=[\w$`]))"  # a run of text within one clause


def removal(name: str, instruction: str, parts: bool | str = True) -> str | None:
    """Whether the instruction asks for `name` to go: "asked" when it is the object of a verb such as remove,
    delete, rename, inline or replace ("remove `A.f`", "delete the helpers a, b and c", "get rid of stop"),
    follows "no longer need" or "don't need", comes before "is unused", "can be removed", ": remove it", or is
    renamed in other words ("give `report` a clearer name", "`foo` should be called `load`", "the name of
    `foo`"); "unclear" when it only shares a clause with such words (callers keep the code); None otherwise.
    Not asked: a name in a phrase of its own between the verb and it ("remove the print calls from `parse`"),
    one that names a part of it (with `parts`: "remove the `validate()` call", "the `debug` parameter"), one
    after "keep" or "but" ("remove foo but keep `bar`"), or the object of a preposition ("rename foo to `bar`").
    A mere mention is never a removal: "make tick stop the timer" names the method `stop` too, and a merge that
    took it for one deleted it."""
    verdict = None
    instruction = re.sub(r"\b(?:as well as|along with|together with)\b", "and", instruction, flags=re.I)
    ends = [c.end() for c in CLAUSE.finditer(instruction)]
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}(?![\w$])", instruction):
        before = instruction[max((e for e in ends if e <= m.start()), default=0):m.start()]
        after = instruction[m.end():min((e - 1 for e in ends if e > m.end()), default=len(instruction))]
        if re.fullmatch(r"\s*(?:[-*\u2022]|\d+[.)])?\s*[`'\"]?", before):  # an item of a list: its heading says
            above = instruction[:m.start() - len(before)].rstrip().split("\n")
            heading = next((line for line in reversed(above) if not ITEM.match(line)), "")
            if heading.rstrip().endswith(":") and re.search(rf"\b(?:{GOES})\b", heading, re.I):
                return "asked"  # "Remove these functions:\n- foo\n- bar"
        part = PART.match(after) if parts else None
        if parts == "decorator" and part and "decorator" in part.group(0).lower():
            part = None  # "the cache decorator" is the decorator itself
        if part or POSSESSIVE.match(after) or re.search(r"[(\[\u2014]|\s-\s", before):
            continue  # "the `validate()` call", "the `debug` parameter", "route's check", "(baz stays)": not it
        if re.match(rf"{QUOTES}(?:isn't|is not|aren't|are not) needed\b", after, re.I):
            return "asked"
        words = [w.lower() for w in re.findall(r"[A-Za-z_$'][\w$']*", before)]
        while words and words[-1] in FILLER:
            words.pop()
        tail = " ".join(words[-4:]) + " "
        if re.search(rf"\b(?:{GOES}|{NEEDLESS}|the name of|give|giving|name)\s+$", tail, re.I):
            return "asked"  # right after the verb: "get rid of stop", "remove the stop method", "we don't need foo"
        if re.match(rf"{QUOTES}(?:(?:a|an)\s+(?:[\w-]+\s+){{0,3}}name\b|(?:should|must|could|will|is to|to) be "
                    rf"(?:called|named|renamed)\b|(?:is|are|was|has become|seems|looks|(?:can|should|must|may) be|now)"
                    rf"\s+(?:\w+\s+)?(?:{GONE})\b|(?:{GONE})\b|[:,\u2013-]+\s*(?:please\s+)?(?:remove|delete|drop)\b|"
                    r"(?:->|\u2192))",
                    after, re.I) or (words[-1:] == ["call"] and re.match(rf"{QUOTES}[\w$.]+\W*\s+instead\b", after)):
            return "asked"  # "f is dead code", "`report` a clearer name", "call foo `load` instead"
        if words and words[-1] in OBJECT_OF or SUBJECT.match(after):
            continue  # the object of something else, or the subject of a clause of its own ("parse does it")
        verbs = list(re.finditer(rf"\b(?:{GOES})\b", before[-45:], re.I))
        verb = verbs[-1] if verbs else None
        between = before[-45:][verb.end():] if verb else ""
        if verb and not re.search(rf"\b(?:{'|'.join(OBJECT_OF | STOPS)})\b", between, re.I):
            return "asked"  # "delete the legacy helpers a, b and c"
        if re.search(rf"\b(?:{HINTS})\b", before + " " + after, re.I):
            verdict = "unclear"
    return verdict


def asks_removal(name: str, instruction: str) -> bool:
    """`removal(name, instruction) == "asked"`."""
    return removal(name, instruction) == "asked"


def child_indent(block: Block) -> int | None:
    """Indentation of the body of a block (its first deeper non-blank line), if any."""
    base = indent_of(block.lines[0])
    for line in block.lines[1:]:
        if not is_blank(line) and indent_of(line) > base:
            return indent_of(line)
    return None


def header_size(block: Block) -> int:
    """Lines up to and including the definition line (decorators come first); for a named block the line
    that defines its name (a method `size() {` too)."""
    for k, line in enumerate(block.lines):
        m = DEF.match(line) or (METHOD.match(line) if block.name else None)
        if m and block.name in (None, m.group(1)):
            return k + 1
    return 1


def braced(block: Block) -> bool:
    """A class whose header opens a brace (JavaScript, TypeScript, Java, C++): its methods need no keyword
    (`size() {`), and its closing brace is its last line."""
    top = header_size(block)
    header = block.lines[top - 1] if block.lines else ""
    after = next((line for line in block.lines[top:] if not is_blank(line)), "")
    return bool(CONTAINER.match(header)) and (header.rstrip().endswith("{") or after.strip() == "{")


def members(lines: list[str], indent: int, methods: bool) -> list[Block]:
    """A class body cut into its members at `indent`; with `methods` (a braced class) a member such as
    `size() {` or `@Input() get size() {` is named too."""
    blocks = split_blocks(lines, indent)
    for b in blocks if methods else []:
        first = next((line for line in b.lines if not DECORATOR.match(line)), "")
        m = METHOD.match(first) if b.name is None and indent_of(first) == indent else None
        if m:
            b.name = m.group(1)
    return blocks


def closing(lines: list[str], top: int) -> int:
    """How many lines end a braced definition: its closing brace(s) at the header's indentation, and the
    blank lines before them. A member merged in must not take them along (a class closed before its
    last member) nor leave them out (a class never closed)."""
    base = indent_of(lines[top - 1])
    k = len(lines)
    while k > top and CLOSER.match(lines[k - 1]) and indent_of(lines[k - 1]) == base:
        k -= 1
    if k == len(lines):
        return 0
    while k > top and is_blank(lines[k - 1]):
        k -= 1
    return len(lines) - k


def signature(block: Block) -> tuple:
    """A definition's decorators, keywords and name: tells a property's getter from its setter (`@x.setter`,
    JavaScript's `set x(v) {`), `@overload` stubs from their implementation, and a Rust `struct S` from its
    `impl S`."""
    top = header_size(block)
    header = block.lines[top - 1] if block.lines else ""
    m = DEF.match(header) or (METHOD.match(header) if block.name else None)
    keywords = tuple(w for w in header[:m.start(1)].split() if w not in ("export", "async")) if m else ()
    return (block.name, tuple(x.strip() for x in block.lines[:top - 1]), keywords)


def imported(block: Block) -> tuple[str, set[str]] | None:
    """(`from module` or `import`, the names it imports) for an import statement, else None."""
    text = " ".join(line.split("#", 1)[0].strip() for line in block.lines)
    m = IMPORT.match(text)
    if not m:
        return None
    parts = {p.strip() for p in m.group(2).replace("(", " ").replace(")", " ").split(",")}
    return (m.group(1) or "", {p for p in parts if p})


def target(line: str) -> str | None:
    """The target of an assignment or declaration on this line (`else:` is not one)."""
    m = ASSIGN.match(line)
    return m.group(1).replace(" ", "") if m and not keyword.iskeyword(m.group(1)) else None


def head(block: Block) -> str:
    """What a statement is about: an assignment's target, else its first line (an enum member's trailing comma,
    which it gains when one is added after it, aside)."""
    if not block.lines:  # the blank lines a file starts with
        return ""
    first = block.lines[0].strip().rstrip(",;")
    name = target(first)
    return "=" + name if name else first


def same_statement(old: Block, new: Block, interior: bool) -> bool:
    """Whether an unnamed new block is a changed version of an old one (not an addition).

    Imports: only when the new one keeps every name the old one imported (so no name is lost).
    Assignments and compound statements: the same target or header. Other statements only between
    two anchors, where the fragment shows everything, and when they are alike.
    """
    if old.name or new.name:
        return False
    old_import, new_import = imported(old), imported(new)
    if old_import or new_import:
        return bool(old_import and new_import and old_import[0] == new_import[0]
                    and new_import[1] >= old_import[1])
    if head(old) == head(new):
        return True
    return interior and difflib.SequenceMatcher(None, old.text, new.text).ratio() >= 0.6


def missing_names(old: list[str], new: list[str], instruction: str) -> list[str]:
    """Top-level definitions of `old` that `new` lacks and the instruction does not ask to remove (`removal`:
    "make main call stop" names `stop` without asking for that); a name defined several times (`@overload`
    stubs, a getter and a setter) counts each time."""
    have = Counter(names(split_blocks(new, 0)))
    want = Counter(names(split_blocks(old, 0)))
    return [n for n in want if have[n] < want[n] and not asks_removal(n, instruction)]


def missing_members(old: list[str], new: list[str], instruction: str, sparse: bool = False) -> list[str]:
    """Members of a class (`A.g`) that the output drops and the instruction does not ask to remove, in classes both
    texts define once: a class written whole with a method gone lost it silently. Merging it back could undo
    the edit (a class turned into a dataclass drops its `__init__`), so the output is refused instead. With
    `sparse`, only those of a class the output shows with fewer than half of its members, under the same header
    and with none of its own: shown to place the one it changed (a fragment, merged), not rewritten (a class
    made a dataclass drops `__init__`, `__repr__` and `__eq__` at once)."""
    olds = [b for b in split_blocks(old, 0) if b.name]
    news = [b for b in split_blocks(new, 0) if b.name]
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
        have = Counter(names(members(nb.lines[header_size(nb):], inner, braced(nb))))
        want = Counter(names(members(b.lines[top:], inner, braced(b))))
        gone = [f"{b.name}.{n}" for n in want if have[n] < want[n] and not asks_removal(n, instruction)]
        shown_only = (b.lines[:top] == nb.lines[:header_size(nb)] and not (have - want))  # same header, no new ones
        if not sparse or (shown_only and 2 * sum((want & have).values()) < sum(want.values())):
            out += gone
    return out


def named_by(block: Block, instruction: str) -> bool:
    """Whether the instruction names this block: a definition by its name, an assignment by its
    target, an import by a name it imports, a compound statement or a Markdown heading by a word
    of its first line. A call (`main()`) is named by nothing: only the flag deletes it."""
    if block.name:
        return mentioned(block.name, instruction)
    if not block.lines:
        return False
    first = block.lines[0].strip()
    name = target(block.lines[0])
    imports = imported(block)
    if imports:
        words = [w for part in imports[1] for w in IDENT.findall(part)]
    elif name:
        words = IDENT.findall(name)
    elif first.endswith(":") or HEADING.match(first):
        words = IDENT.findall(first.lstrip("#"))
    else:
        return False
    return any(not keyword.iskeyword(w) and mentioned(w, instruction) for w in words)


def owners(blocks: list[Block]) -> list[int]:
    """For each block, the block whose naming covers it: itself, or in prose its section heading."""
    out: list[int] = []
    prose = not names(blocks)
    section: int | None = None
    for k, b in enumerate(blocks):
        if prose and HEADING.match(b.lines[0] if b.lines else ""):
            section = k
        out.append(section if prose and section is not None else k)
    return out


def unasked_losses(old: list[str], new: list[str], instruction: str) -> tuple[int, bool]:
    """Lines the output drops with nothing written in their place, in blocks the instruction does
    not name: how many non-blank ones were cut off at the start or end of the file, and whether a
    whole top-level statement went anywhere (a definition's own lines may shrink in an edit; a
    statement that vanishes was deleted)."""
    edge: set[int] = set()
    lost: set[int] = set()
    loose: set[int] = set()  # rewritten in place without a counterpart: lost only if the output still needs it
    # Two line alignments, and what either finds lost: blank lines as anchors keep a trailing blank run of the
    # output from hiding what it cut off; without them, two imports cannot pass for a rewrite of the
    # `def answer():` and its body that the output opens with (it matched the blank lines after them).
    for junk in (None, is_blank):
        ops = difflib.SequenceMatcher(junk, old, new, autojunk=False).get_opcodes()
        for n, (tag, i1, i2, j1, j2) in enumerate(ops):
            if tag in ("delete", "replace") and (j2 - j1) * 3 < (i2 - i1):
                gone = {k for k in range(i1, i2) if not is_blank(old[k])}
                lost |= gone
                if n in (0, len(ops) - 1):
                    edge |= gone
            elif tag == "replace" and junk is None:  # rewritten in place, but a line with no counterpart is gone
                loose |= unmatched(old[i1:i2], new[j1:j2], i1)
    blocks = split_blocks(old, 0)
    owner = owners(blocks)
    written = Counter(b.text for b in split_blocks(new, 0))
    had = Counter(b.text for b in blocks)
    count, whole = 0, False
    start = 0
    needed = dangling(new)
    for k, b in enumerate(blocks):
        content = [start + n for n, line in enumerate(b.lines) if not is_blank(line)]
        start += len(b.lines) + len(b.blank)
        moved = b.name is None and written[b.text] >= had[b.text]  # written elsewhere, not lost
        if not content or moved or named_by(blocks[owner[k]], instruction):
            continue
        count += sum(1 for n in content if n in edge)
        whole = whole or (b.name is None and all(n in lost for n in content))
        whole = whole or (b.name is None and all(n in lost | loose for n in content) and bool(needed(b)))
    return count, whole


def defines(block: Block) -> set[str]:
    """The names a top-level statement defines: what an import binds, an assignment's targets."""
    imports = imported(block)
    if imports:
        return {p.split(" as ")[-1].strip().split(".")[0] for p in imports[1]}
    name = target(block.lines[0]) if block.lines else None
    return {n for n in (name or "").split(",") if n and "." not in n}


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


PAIRING_LIMIT = 5_000  # line pairs compared in one rewritten stretch (a 400-line rewrite took 15 s unbounded)


def line_likeness(a: str, b: str) -> float:
    """difflib's ratio of two lines' text, 0 where its cheap upper bounds already fall below 0.6."""
    sm = difflib.SequenceMatcher(None, a.strip(), b.strip(), autojunk=False)
    return sm.ratio() if sm.real_quick_ratio() >= 0.6 and sm.quick_ratio() >= 0.6 else 0.0


def unmatched(old: list[str], new: list[str], offset: int) -> set[int]:
    """Indices (from `offset`) of the non-blank old lines of a rewritten stretch left without a counterpart
    (`paired`). So `Z = 3` beside `Y = 2` → `Y = 5` is gone (only one line came back for two), where `Y = 5`
    alone would match both."""
    if len(old) * len(new) > PAIRING_LIMIT:
        return set()  # a rewrite of this size is the model's whole text: judged as before, not line by line
    kept = paired(old, new, line_likeness, 0.6)
    return {offset + i for i, line in enumerate(old) if not is_blank(line) and i not in kept}


def paired(old: list[str], new: list[str], alike, least: float) -> set[int]:
    """The indices of the non-blank old lines that have a counterpart among the new ones: each new line stands
    for at most one old line it is `least` alike at least (`alike(old_line, new_line)`), the most alike pairs
    first."""
    pairs = sorted(((alike(a, b), i, j) for i, a in enumerate(old) if not is_blank(a)
                    for j, b in enumerate(new) if not is_blank(b)), reverse=True)
    used_old: set[int] = set()
    used_new: set[int] = set()
    for ratio, i, j in pairs:
        if ratio < least:
            break
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
    return used_old


def is_fragment(old: list[str], new: list[str], instruction: str) -> bool:
    if not old:
        return False
    if missing_names(old, new, instruction) or missing_members(old, new, instruction, sparse=True):
        return True
    count, whole_block = unasked_losses(old, new, instruction)
    nonblank = sum(1 for line in old if not is_blank(line))
    return whole_block or count > max(2, nonblank // 10)


def identical(old: list[Block], new: list[Block], latest: bool) -> dict[int, int]:
    """Pairs of identical blocks (new index → old index): the in-order matching that keeps the
    most lines (a weighted longest common subsequence), each at its earliest old place, or its
    latest with `latest`. Unlike SequenceMatcher's longest-run-first, a repeated one-line
    statement cannot pull the matching across the rest of the fragment."""
    n, m = len(old), len(new)
    if latest:
        return {m - 1 - j: n - 1 - i for j, i in identical(old[::-1], new[::-1], False).items()}
    best = [[0] * (m + 1) for _ in range(n + 1)]  # best[i][j]: lines matched within old[i:], new[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = max(best[i + 1][j], best[i][j + 1])
            if old[i].text == new[j].text:
                best[i][j] = max(best[i][j], len(old[i].lines) + best[i + 1][j + 1])
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if old[i].text == new[j].text and best[i][j] == len(old[i].lines) + best[i + 1][j + 1]:
            pairs[j] = i
            i, j = i + 1, j + 1
        elif best[i + 1][j] == best[i][j]:
            i += 1
        else:
            j += 1
    return pairs


def align(old: list[Block], new: list[Block], latest: bool) -> dict[int, int]:
    """Pair new blocks with old ones, in order (new index → old index). Identical blocks are anchors (`identical`);
    between two anchors a new block replaces an old definition of the same name (the same
    decorators first), else a statement it is a changed version of. Among several equal candidates
    the first is taken, or the last with `latest`: `merge_blocks` compares both to find real
    ambiguity."""
    n, m = len(old), len(new)
    pairs = identical(old, new, latest)
    used = set(pairs.values())
    anchors = [(-1, -1)] + sorted((j, i) for j, i in pairs.items()) + [(m, n)]
    for (j1, i1), (j2, i2) in zip(anchors[:-1], anchors[1:], strict=True):
        interior = j1 >= 0 and j2 < m
        lo, hi = min(i1, i2), max(i1, i2)  # a reordered anchor still bounds a gap
        gap_new = list(range(j1 + 1, j2))
        for j in reversed(gap_new) if latest else gap_new:
            nb = new[j]
            cands = [i for i in range(lo + 1, hi) if i not in used
                     and ((nb.name and old[i].name == nb.name) or same_statement(old[i], nb, interior))]
            if nb.name:
                cands = [i for i in cands if signature(old[i]) == signature(nb)] or cands
            else:  # `Y = 5` replaces `Y = 2`, not a `Z = 3` that is merely alike
                cands = [i for i in cands if head(old[i]) == head(nb)] or cands
            if not cands and nb.name:  # moved: the one unpaired old definition of that name, anywhere
                cands = [i for i, b in enumerate(old) if b.name == nb.name and i not in used]
                if len(cands) > 1:
                    raise EditError(f"cannot place the model's partial output: {nb.name} occurs {len(cands)} "
                                    "times in the file and the output does not say which one it replaces; "
                                    "nothing written")
            if cands:
                i = cands[-1] if latest else cands[0]
                pairs[j] = i
                used.add(i)
                if latest:
                    hi = i
                else:
                    lo = i
    return pairs


MOVING = re.compile(r"\b(?:mov(?:e|es|ed|ing)|reorder\w*|re-order\w*|rearrang\w*|swap\w*|sort\w*|alphabeti\w*)\b|"
                    r"\b(?:put|place)\b.*\b(?:above|below|before|after|first|last)\b", re.I | re.S)


def moves(old: list[Block], new: list[Block], pairs: dict[int, int], instruction: str) -> dict[int, int]:
    """The blocks the output moves (new index → old index): when the instruction asks for a move and the
    output shows old blocks in another order than the file's, those outside the longest run in the file's
    order go where the output puts them ("move c above a", written as c then a, moves c). Of runs equally
    long, the one that leaves in place what the instruction names last is taken: the first name is the one
    moved. Without such words a reordering is the model's own and the file's order stays."""
    order = sorted(pairs)
    if not MOVING.search(instruction) or all(pairs[a] < pairs[b] for a, b in zip(order, order[1:], strict=False)):
        return {}

    def weight(j: int) -> float:  # a block's lines; the name the instruction mentions first weighs a little less
        spot = re.search(rf"(?<![\w$]){re.escape(new[j].name)}(?![\w$])", instruction) if new[j].name else None
        return len(new[j].lines) - (0.5 / (1 + spot.start()) if spot else 0.0)

    best: dict[int, tuple[float, list[int]]] = {}  # the heaviest increasing run ending at each new block
    for k, j in enumerate(order):
        before = [best[a] for a in order[:k] if pairs[a] < pairs[j]]
        total, run = max(before, default=(0.0, []))
        best[j] = (total + weight(j), run + [j])
    stay = set(max(best.values())[1])
    return {j: pairs[j] for j in order if j not in stay}


def build(old: list[Block], new: list[Block], pairs: dict[int, int], instruction: str, where: str,
          drop: set[int]) -> list[Block]:
    """The merged blocks: old blocks in order, each paired one replaced by its new version, new
    blocks inserted after the block the preceding new block replaced; `drop` (old indices) goes when
    nothing replaces it and the output has no definition of its name (a getter stays when only the
    setter of the same name is shown)."""
    shown = set(names(new))
    moved = moves(old, new, pairs, instruction)  # new index → the old block it takes from its place
    pairs = {j: i for j, i in pairs.items() if j not in moved}
    inserts: dict[int, list[int]] = {}  # old index → new blocks after it (-1: at the top)
    previous: int | None = None
    for j in range(len(new)):
        if j in pairs:
            previous = pairs[j]
            continue
        if previous is None:
            following = min((pairs[k] for k in pairs if k > j), default=0)
            inserts.setdefault(following - 1, []).append(j)
        else:
            inserts.setdefault(previous, []).append(j)
    replaced = {i: j for j, i in pairs.items()}
    gone = set(moved.values())

    def placed(j: int) -> Block:  # a block the output adds, or one it moved here (merged with its old version)
        return merge_pair(old[moved[j]], new[j], instruction, where) if j in moved else new[j]

    out: list[Block] = []
    for ins in inserts.get(-1, []):
        out.append(Block(new[ins].name, placed(ins).lines, new[ins].blank))
    for i, b in enumerate(old):
        after = inserts.get(i, [])
        if i in gone or (i in drop and i not in replaced and not (b.name and b.name in shown)):
            if i == len(old) - 1 and out:  # the file's last block went: the block now last ends as it did
                out[-1] = Block(out[-1].name, out[-1].lines, b.blank)
        elif i in replaced:
            nb = new[replaced[i]]
            merged = merge_pair(b, nb, instruction, where) if b.name else Block(None, nb.lines, b.blank)
            if after:  # the fragment's own spacing up to what it adds
                merged = Block(merged.name, merged.lines, nb.blank)
            out.append(merged)
        else:
            out.append(b)
        kept_next = i + 1 < len(old) and i + 1 not in replaced  # an old block the output left out comes next
        for k, j in enumerate(after):
            last = k == len(after) - 1
            if last and i in replaced:  # the gap before the next block: the original's when that block is old
                blank = b.blank if kept_next else (b.blank or new[j].blank)
            else:
                blank = new[j].blank
            out.append(Block(new[j].name, placed(j).lines, blank))
    return out


def merge_blocks(old: list[Block], new: list[Block], instruction: str, where: str,
                 drop: set[int] | None = None) -> list[Block]:
    """Merge fragment blocks `new` into `old` (see `align`); refuse when the result depends on which
    of two identical blocks an output block is taken to be."""
    early, late = align(old, new, latest=False), align(old, new, latest=True)
    if not early:
        raise EditError(f"cannot place the model's partial output in {where}: it shares no definition "
                        "or statement with it; nothing written")
    drop = drop or set()
    result = build(old, new, early, instruction, where, drop)
    if early != late and joined(result) != joined(build(old, new, late, instruction, where, drop)):
        j = next(j for j in range(len(new)) if early.get(j) != late.get(j))
        same = sum(1 for b in old if b.text == new[j].text or (new[j].name and b.name == new[j].name))
        what = new[j].name or "a statement"
        times = f" occurs {same} times in {where}" if same > 1 else f" matches several places in {where}"
        raise EditError(f"cannot place the model's partial output: {what}{times} and where it goes depends "
                        "on which one is meant; nothing written")
    return result


def kept_decorators(decorators: list[str], instruction: str, name: str | None, signature_line: str | None) -> list[str]:
    """The decorators (lines above a definition) that stay when the output shows the definition without any:
    all but those the instruction asks to remove by name, any case ("remove `@login_required`", "drop the
    cache", "make Api not injectable": `removal`), all of them for the word "decorator" in one clause with the
    definition's name ("drop fib's decorators"), and a `@staticmethod` or `@classmethod` that the new
    signature (`signature_line`, when the definition line changed) decides against. A name merely mentioned
    ("make the total property round") keeps it. A fragment leaves out what it does not change, and `@dataclass`
    or `@app.route("/")` dropped by a merge would change what the code does with exit 0."""
    n = re.escape(name or "")
    if name and re.search(rf"decorat\w*{SPAN}{{0,20}}?(?<![\w$]){n}(?![\w$])|(?<![\w$]){n}(?![\w$]){SPAN}{{0,20}}?"
                          r"decorat", instruction, re.I):
        return []
    groups: list[list[str]] = []  # a decorator with its continuation lines (`@app.route(`, `"/x",`, `)`)
    for line in decorators:
        if DECORATOR.match(line) or not groups:
            groups.append([])
        groups[-1].append(line)
    first = re.search(r"\(\s*(\w+)", signature_line or "")
    kept: list[str] = []
    for group in groups:
        m = DECORATOR_NAME.match(group[0])
        word = m.group(1) if m else ""
        after = rf"(?=\s*(?:[.;,!?)]|$|{re.escape(name or '')}\b|decorator))"  # the clause ends, or the def's name
        asked = bool(word) and (removal(word, instruction, parts="decorator") == "asked" or re.search(
            rf"\b(?:not|no longer|without|un)[\s-]*(?:an?\s+|the\s+)?{re.escape(word)}\b{after}", instruction,
            re.I) is not None)
        kind = first.group(1) if first else ""  # none on a signature wrapped after `(`: nothing to go by
        if signature_line and kind and (word == "staticmethod" and kind in ("self", "cls")
                                        or word == "classmethod" and kind != "cls"):
            asked = True  # the new signature decides: an instance method now, or no class parameter
        if not asked:
            kept += group
    return kept


def merge_pair(old: Block, new: Block, instruction: str, where: str) -> Block:
    """The new version of a definition. A function is replaced whole (a helper the model inlined
    goes with the old body). A class has its body merged with the old body, so members the output
    does not show (a class shown with one method) stay; a method the instruction names and the
    output lacks goes ("remove `A.f`")."""
    top, top_new = header_size(old), header_size(new)
    reshaped = old.lines[top - 1].strip() != new.lines[top_new - 1].strip()  # the definition's own line changed
    if top > 1 and top_new == 1:  # shown bare: its decorators stay, but those the instruction speaks of
        kept = kept_decorators(old.lines[:top - 1], instruction, old.name, new.lines[0] if reshaped else None)
        new = Block(new.name, kept + new.lines, new.blank)
        top_new += len(kept)
    if old.text == new.text:
        return old
    blank = old.blank  # keep the original spacing after the block
    inner = child_indent(old)
    if not CONTAINER.match(old.lines[top - 1]) or inner is None or child_indent(new) != inner:
        return Block(new.name, new.lines, blank)
    methods = braced(old)
    old_end = len(old.lines) - (closing(old.lines, top) if methods else 0)
    new_end = len(new.lines) - (closing(new.lines, top_new) if methods else 0)
    old_body = members(old.lines[top:old_end], inner, methods)
    new_body = members(new.lines[top_new:new_end], inner, methods)
    drop = {k for k, b in enumerate(old_body) if b.name and asks_removal(b.name, instruction)}
    body = merge_blocks(old_body, new_body, instruction, f"{where}:{old.name}", drop)
    lines = new.lines[:top_new] + joined(body)
    while lines and is_blank(lines[-1]):
        lines.pop()
    if methods:  # the class's end, whichever member the output showed last (a member alone has none)
        lines += new.lines[new_end:] if new_end < len(new.lines) else old.lines[old_end:]
    return Block(new.name, lines, blank)


def likest(blocks: list[Block], places: list[int], new: list[str], base: int, wanted: set[str]) -> list[int]:
    """The one place whose member of that name reads much like the fragment ([] when none stands out): a
    constructor that three classes define is told by its body. Only a clear margin counts (two `area()` bodies
    a line long are alike whichever the edit was meant for)."""
    text = "".join(new)
    scores = []
    for i in places:
        mine = [b.text for b in members(blocks[i].lines[header_size(blocks[i]):], base, True) if b.name in wanted]
        scores.append((max((difflib.SequenceMatcher(None, m, text, autojunk=False).ratio() for m in mine),
                           default=0.0), i))
    scores.sort(reverse=True)
    return [scores[0][1]] if scores[0][0] >= 0.5 and scores[0][0] - scores[1][0] >= 0.25 else []


def telling(blocks: list[Block], places: list[int], new: list[str], base: int, wanted: set[str]) -> list[int]:
    """The one place whose member of that name has names of its own that the fragment uses ([] when not exactly
    one): a lone `toString()` that reads `this.s` belongs to the class whose `toString` does, not to the one
    whose reads `this.r`. Names only the edit brings in count for none (a new `console.log`). Not between
    a class and one that extends it: a subclass uses its parent's names without defining them."""
    labels = {labelled(blocks[i]) for i in places} - {None}
    for i in places:
        header = blocks[i].lines[header_size(blocks[i]) - 1]
        if any(mentioned(str(label), header.split(str(labelled(blocks[i])), 1)[-1]) for label in labels):
            return []
    words = [set(IDENT.findall("".join(b.text for b in members(blocks[i].lines[header_size(blocks[i]):], base, True)
                                        if b.name in wanted))) for i in places]
    used = set(IDENT.findall("".join(new))) & set().union(*words)  # not the edit's new words: any class may have those
    own = [i for k, i in enumerate(places)
           if used & (words[k] - set().union(*(w for n, w in enumerate(words) if n != k)))]
    if len(own) != 1:
        return []
    written = set(IDENT.findall("".join(new)))
    if any(words[k] <= written for k, i in enumerate(places) if i != own[0]):
        return []  # another one could have been edited into this (its names and the new ones): no telling
    return own


def labelled(block: Block) -> str | None:
    """What a block is called: its definition's name, an assignment's target (`const api = {`), or the name after
    `class` (`export abstract class Repo {`)."""
    if block.name or not block.lines:
        return block.name
    m = re.search(r"\bclass\s+([A-Za-z_$][\w$]*)", block.lines[0])
    return target(block.lines[0]) or (m.group(1) if m else None)


def merge_code(old: list[str], new: list[str], instruction: str, drop: set[int] | None = None) -> list[str] | None:
    """Merge by blocks; None when the text has no definitions to go by. `drop`: indices of old
    top-level blocks that go when the output has nothing in their place."""
    base = min((indent_of(line) for line in new if not is_blank(line)), default=0)
    old_blocks = split_blocks(old, 0)
    first = next((k for k, line in enumerate(new) if not is_blank(line)), None)
    if base == 0 and first is not None and indent_of(new[first]) > 0:
        # The output starts inside a class (its last methods, then the rest of the file): the methods go into
        # their class, then the rest is merged at the top level (taken whole, the methods were added twice).
        c = next(k for k, line in enumerate(new) if not is_blank(line) and indent_of(line) == 0)
        k = next((k for k in range(c, len(new)) if not is_blank(new[k]) and not CLOSER.match(new[k])), len(new))
        inner = merge_code(old, new[:c], instruction, drop)
        if inner is None:
            return None
        return merge_code(inner, new[k:], instruction, drop) if k < len(new) else inner
    if base == 0:
        if not names(old_blocks):
            return None
        return joined(merge_blocks(old_blocks, split_blocks(new, 0), instruction, "the file", drop))
    # An indented fragment (a method alone): find the one definition whose body holds its names.
    if first is not None and (indent_of(new[first]) > base or CLOSER.match(new[first])):
        raise EditError("cannot place the model's partial output: it starts in the middle of a definition, so "
                        "where that part goes cannot be told; nothing written")
    new_names = set(names(members(new, base, methods=True)))
    if not new_names:
        return None
    parents = [i for i, b in enumerate(old_blocks) if child_indent(b) == base
               and new_names & set(names(members(b.lines[header_size(b):], base, braced(b))))]
    # Blocks that define such a member too, where the merge cannot go by names (an object literal's `get(url) {`,
    # an `abstract class`): never a wrong parent's by default.
    others = [i for i, b in enumerate(old_blocks) if i not in parents and any(
        indent_of(line) == base and (m := DEF.match(line) or METHOD.match(line)) and m.group(1) in new_names
        for line in b.lines)]
    places = parents + others
    if len(places) > 1:  # the same method in two classes: the instruction, or the method's own first line, says which
        named = [i for i in places if (label := labelled(old_blocks[i])) and mentioned(label, instruction)]
        opening = next((line for line in new if indent_of(line) == base and (DEF.match(line) or METHOD.match(line))),
                       "")
        same = [i for i in places if opening in old_blocks[i].lines]
        chosen = named if len(named) == 1 else same if not named and len(same) == 1 else []
        if not chosen and not named:
            chosen = (likest(old_blocks, places, new, base, new_names)
                      or telling(old_blocks, places, new, base, new_names))
        if not chosen:
            owners_ = " and ".join(labelled(old_blocks[i]) or "a block" for i in sorted(places))
            raise EditError(f"cannot place the model's partial output: {', '.join(sorted(new_names))} is defined "
                            f"in {owners_} and the instruction names {'several' if named else 'neither'}; "
                            "nothing written")
        if chosen[0] not in parents:
            return None  # not a class: placed by the text it matches (`merge_region`)
        parents = chosen
    if not parents:
        return None
    i = parents[0]
    parent = old_blocks[i]
    wrapped = Block(parent.name, parent.lines[:header_size(parent)] + new, parent.blank)
    old_blocks[i] = merge_pair(parent, wrapped, instruction, "the file")
    return joined(old_blocks)


def regions(old: list[str], new: list[str], offsets: list[int] | None) -> list[tuple[float, int, int]]:
    """Candidate places for a prose fragment: (similarity, start, end) of the old lines it would
    replace, from its earliest and its latest alignment with the whole file (`offsets` None) or
    with the neighbourhood of each given offset (old line - fragment line of a shared line)."""
    content = sum(1 for x in new if not is_blank(x))
    slack = 3 + len(new) // 4
    found: list[tuple[float, int, int]] = []
    windows = [(0, len(old))] if offsets is None else [
        (max(0, d - slack), min(len(old), d + len(new) + slack)) for d in offsets]
    for lo, hi in windows:
        window = old[lo:hi]
        for latest in (False, True):
            w, f = (window[::-1], new[::-1]) if latest else (window, new)
            sm = difflib.SequenceMatcher(None, w, f, autojunk=False)
            blocks = [(mb.a, mb.b, mb.size) for mb in sm.get_matching_blocks()
                      if mb.size and any(not is_blank(x) for x in f[mb.b:mb.b + mb.size])]
            if latest:
                blocks = [(len(w) - a - s, len(f) - b - s, s) for a, b, s in blocks[::-1]]
            matched = sum(sum(1 for x in new[b:b + s] if not is_blank(x)) for _, b, s in blocks)
            if not blocks or matched * 2 < content:
                continue
            (a0, b0, _), (a1, b1, s1) = blocks[0], blocks[-1]
            start = max(0, lo + a0 - b0)
            end = min(len(old), lo + a1 + s1 + (len(new) - b1 - s1))
            found.append((0.0, start, end))
    if offsets is not None:  # several places: score each by how alike its text is to the fragment
        found = [(difflib.SequenceMatcher(None, "".join(old[s:e]), "".join(new), autojunk=False).ratio(), s, e)
                 for _, s, e in set(found)]
    return found


def merge_region(old: list[str], new: list[str]) -> list[str]:
    """Replace the region of `old` that the fragment matches best; refuse when too little matches,
    or when two different places match it equally well (a repeated heading and nothing else).

    The earliest and the latest alignment with the whole file settle most fragments at once; only
    when they disagree is each place the fragment could go scored by text similarity."""
    found = regions(old, new, None)
    if len({(s, e) for _, s, e in found}) > 1:
        offsets = sorted({a - b for b, line in enumerate(new) if not is_blank(line)
                          for a, other in enumerate(old) if other == line})
        found = regions(old, new, offsets)
    if not found:
        raise EditError("cannot place the model's partial output: too little of it matches the file; nothing written")
    best = max(score for score, _, _ in found)
    places = {(start, end) for score, start, end in found if score >= best - 1e-9}
    results = {tuple(old[:s] + new + old[e:]) for s, e in places}
    if len(results) > 1:
        raise EditError("cannot place the model's partial output: it matches several places in the file equally "
                        "well; nothing written")
    start, end = min(places)
    lost = dropped(old[start:end], new)
    if lost:
        raise EditError(f"cannot place the model's partial output: where it matches best it would delete "
                        f"{lost[0].strip()!r}, which it does not show; nothing written")
    return list(results.pop())


def dropped(old: list[str], new: list[str]) -> list[str]:
    """The lines of `old` that open something (a definition, a method, a braced block, a Markdown heading) at the
    fragment's own indentation or less and have no counterpart in `new`. A region is only the best guess of where
    a fragment goes: a definition between two lines it matched, which it never showed (the next method of a class,
    found between its first line and a later `}`), would be deleted by that guess, not by the model. Lines it
    rewrote inside what it shows (a body simplified, a section shortened) are its edit."""
    base = min((indent_of(line) for line in new if not is_blank(line) and not CLOSER.match(line)), default=0)
    if len(old) * len(new) > PAIRING_LIMIT:
        return []
    kept = paired(old, new, line_likeness, 0.6)
    return [line for i, line in enumerate(old) if i not in kept and not is_blank(line) and indent_of(line) <= base
            and (DEF.match(line) or METHOD.match(line) or HEADING.match(line)
                 or (line.split("//")[0].rstrip().endswith("{") and not CLOSER.match(line)))]


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
    if not is_fragment(old, new, instruction):
        gone = missing_members(old, new, instruction)
        if gone:  # a merge would put them back and may undo the edit (a class made a dataclass): say so instead
            where = f"{path}: " if path else ""
            raise EditError(f"{where}the output drops {', '.join(gone[:3])}{' and more' if len(gone) > 3 else ''}, "
                            "which the instruction does not ask to remove; nothing written (ask for it, or "
                            "--allow-deletions)")
        return WholeFile(new_text, complete=True, merged=False, lines=new)
    try:
        merged = merge_code(old, new, instruction)
        if merged is None:
            merged = merge_region(old, new)
        if missing_names(old, merged, instruction):
            raise EditError("the model wrote part of the file and it could not be merged safely; nothing written")
        had = set(names(split_blocks(old, 0)))
        added = sorted(set(names(split_blocks(merged, 0))) - had)
        stays = [n for n in had if mentioned(n, instruction)]  # named by a rename, and merged back
        if added and stays and RENAMING.search(instruction):  # the renamed definitions beside the old ones
            raise EditError(f"the model wrote only part of the file for a rename, with new definitions ("
                            f"{', '.join(added[:3])}) beside the old ones and their uses unchanged; nothing written")
    except EditError as exc:
        if path is None:
            raise
        raise EditError(f"{path}: {exc}") from None
    text = "".join(merged)  # merged blocks may join a last line that had no newline: split the text anew
    return WholeFile(text, complete=False, merged=True, lines=split_lines(text))


PYTHON = (".py", ".pyi", ".pyw")


def still_parses(path: str, old_text: str, new_text: str) -> None:
    """Refuse an edit that turns a Python file that parses into one that does not.

    A result cut short inside a definition (the model closed its block early), a line of the model's own
    prose among the code, or half a statement merged in all parse no longer; written, they break the user's
    module with exit 0. A file that did not parse before (newer syntax than this Python, a file mid-edit)
    is not judged."""
    if not path.endswith(PYTHON):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for an invalid escape: the file's own, not ours
        try:
            ast.parse(old_text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        try:
            ast.parse(new_text)
        except (SyntaxError, ValueError) as exc:
            where = f"line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
            version = f"Python {sys.version_info.major}.{sys.version_info.minor}"  # newer syntax fails in an older one
            why = f"{where}{getattr(exc, 'msg', exc)}"
            raise EditError(f"{path}: the edited file is no longer valid {version} ({why}); nothing written") from None
        except (RecursionError, MemoryError):
            return
