"""What the instruction asks for by name that the edit did not do: notes for the user, not refusals.

A rename done in part. Asked to "rename the function rb_count to rb_size everywhere, including its call sites"
in a header and its .c file, the bundled model renamed the declaration and the definition and left a call in
another function as it was, so the code no longer linked, exit 0 with nothing said (a real probe, 2026-11). Only
uses of the kind the edit renamed elsewhere count: renaming the function `parse` turns bare `parse(...)` into
`parse_args(...)`, so a bare `parse` left is a miss, while `ast.parse(...)` is another object's attribute. Whole
comment lines are left out: the old name in a comment breaks nothing.

A removal not made. Asked to "remove the lodash dependency" (and add a script), or to "remove the tomli
dependency", the model did the rest and kept the item, exit 0 with nothing said (the same probe, 3 of 3 removals
skipped): a user cannot tell done from half done. A name counts when the instruction asks for it to go in so
many words (`asks.removal`) and it looks like code or a name, not an everyday word: quoted, or with `_`, a digit,
`()` or an inner capital, or unknown to the spell checker ("tomli", "lodash"; not "note", which "delete the
note" names too loosely to count).

The edit stands either way: a name kept on purpose, an alias for old callers, is the user's call.
"""

from __future__ import annotations

import re

from editllm.editor.align import line_opcodes
from editllm.editor.asks import AWAY, NAME, W, removal, renames
from editllm.editor.merge import renamed_text
from editllm.editor.wholefile import COMMENT_LINE, SHELL_FUNCTION, headed

RECEIVER = re.compile(rf"({NAME})\s*\.\s*$")  # the name an attribute is looked up on: `json` in `json.load`
IMPORTED = re.compile(rf"^\s*(?:import\s+({NAME})|from\s+\S+\s+import\s+(.+))", re.M)
# "in mean, rename total to acc", "rename x to y inside parse": the definition a rename is kept to
SCOPE = re.compile(rf"\b(?:in|inside|within)\s+(?:the\s+)?(?:function\s+|method\s+)?[`'\"]?({NAME})(?:\(\))?[`'\"]?"
                   rf"(?:\s+(?:function|method))?\s*(?:,|:|$|\s+(?:rename|only))", re.I)


# A string on one line, and the f-string prefix before it
STRING = re.compile(r"""([fF]?)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")


def prose_masked(line: str) -> str:
    """The line with the words of its strings blanked: a string of words is text ("-t: quote tabs" names no function
    `quote`: a probe, session 42, was told a rename left it undone), while one without spaces may name code
    (`"quote"` in `__all__`, `mock.patch("codec.quote")`) and an f-string's braces hold code."""
    def mask(m: re.Match) -> str:
        body = m.group(2)[1:-1]
        if not re.search(r"\s", body):
            return m.group(0)
        if m.group(1):  # keep what the braces hold
            body = "".join(part if k % 2 else re.sub(r"\S", " ", part)
                           for k, part in enumerate(re.split(r"(\{[^{}]*\})", body)))
        else:
            body = " " * len(body)
        return m.group(1) + m.group(2)[0] + body + m.group(2)[-1]
    return STRING.sub(mask, line)


def _uses(text: str, name: str) -> dict[str, list[int]]:
    """The 1-based lines where `name` is used as a word outside comment lines and the text of strings
    (`prose_masked`), by kind: bare, or as an attribute of a named receiver (`attribute self`, `attribute json`;
    `attribute ` where no name precedes the dot)."""
    found: dict[str, list[int]] = {}
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    for n, line in enumerate(text.split("\n"), 1):
        if COMMENT_LINE.match(line):
            continue
        line = prose_masked(line)
        for m in word.finditer(line):
            before = line[:m.start()]
            if before.rstrip().endswith("."):
                receiver = RECEIVER.search(before)
                kind = f"attribute {receiver.group(1) if receiver else ''}"
            else:
                kind = "bare"
            found.setdefault(kind, []).append(n)
    return found


def _modules(text: str) -> set[str]:
    """The names a Python file imports (`json`, `os`, `load` of `from json import load`): a module's function is
    not the method the edit renamed (`json.load` beside `self.load` renamed `self.fetch`)."""
    out: set[str] = set()
    for m in IMPORTED.finditer(text):
        if m.group(1):
            out.add(m.group(1))
        else:
            out |= {p.split(" as ")[-1].strip(" ()") for p in m.group(2).split(",")}
    return out


def _scope(text: str, name: str) -> range | None:
    """The 1-based lines of the definition `name` in `text` (its header and the lines indented under it, or up to
    its closing brace's indentation), or None when the text defines no such function."""
    lines = text.split("\n")
    header = re.compile(rf"^(\s*)(?:[\w<>\[\],*&:]+\s+)*(?:def|function|fn|func|sub)?\s*{re.escape(name)}\s*\(")
    for k, line in enumerate(lines):
        m = header.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent, end = len(m.group(1)), k + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
                                    or lines[end].strip()[:1] in ")}]"):
            end += 1
        return range(k + 1, end + 1)
    return None


def left_unrenamed(old_text: str, new_text: str, instruction: str) -> list[tuple[str, str, list[int]]]:
    """(old, new, lines) for each rename the instruction asks for where the edited text still uses the old name
    in a way (bare, or as an attribute of the same receiver) that the edit renamed elsewhere, in this text: the
    lines of those uses. An attribute of an imported module is another object's (`json.load`); a line that names
    both is an alias kept for old callers (`parse = parse_args`); a rename kept to one definition ("in mean, rename
    total to acc") looks only there (a review, session 28: all three noted wrongly)."""
    if old_text == new_text:
        return []
    out = []
    modules = _modules(old_text)
    scope = SCOPE.search(instruction)
    for old, new in renames(instruction):
        before, after, still = _uses(old_text, new), _uses(new_text, new), _uses(new_text, old)
        renamed = {kind for kind in after if len(after[kind]) > len(before.get(kind, []))}
        if renamed & {kind for kind in after if kind.startswith("attribute")}:  # a method or field renamed
            renamed |= {kind for kind in still if kind.startswith("attribute") and kind[10:] not in modules}
        within = _scope(new_text, scope.group(1)) if scope else None
        text = new_text.split("\n")
        left = sorted(n for kind in renamed for n in still.get(kind, [])
                      if not re.search(rf"(?<![\w$]){re.escape(new)}(?![\w$])", text[n - 1])
                      and (within is None or n in within))
        if left:
            out.append((old, new, left))
    return out


def beyond_rename(old_text: str, new_text: str, instruction: str, only: bool) -> list[int]:
    """1-based lines of the edited text that are neither a line of the file nor one renamed as asked, when the
    instruction asks for the rename alone (`only`: `focus.renamed`): a probe (session 42) renamed `rgb_to_hsv` "in
    colorsys.py and in palette.py (the import and every call)", and the model also wrote `# Import and every call in
    palette.py` and `from colorsys import rgb_to_hsv_triple` into colorsys.py itself, exit 0 and no word."""
    if not only or old_text == new_text:
        return []
    have: dict[str, int] = {}
    swaps = renames(instruction)
    for line in old_text.split("\n"):
        for form in {line.strip(), renamed_text(line, swaps).strip()}:
            have[form] = have.get(form, 0) + 1
    out = []
    for n, line in enumerate(new_text.split("\n"), 1):
        if (key := line.strip()) and have.get(key, 0) > 0:
            have[key] -= 1
        elif key:
            out.append(n)
    return out


def beyond_rename_note(path: str, lines: list[int]) -> str:
    """The note for the lines a rename alone does not explain (`beyond_rename`)."""
    return (f"{path}: note: the instruction asks only for a rename, but the edit also writes line"
            f"{'s' if len(lines) > 1 else ''} {listed(lines)}, which rename nothing of the file; check "
            f"{'they belong' if len(lines) > 1 else 'it belongs'}")


def listed(lines: list[int]) -> str:
    """1-based line numbers as a note lists them: the first five and how many more."""
    return ", ".join(map(str, lines[:5])) + (f" and {len(lines) - 5} more" if len(lines) > 5 else "")


def leftover_note(path: str, old: str, new: str, lines: list[int]) -> str:
    """The note for one half-done rename."""
    where = listed(lines)
    return (f"{path}: note: the instruction renames {old} to {new}, but the edit still uses {old} on line"
            f"{'s' if len(lines) > 1 else ''} {where}")


# Words that ask for something to go and nothing else (not rename, move, merge, split: the name may stay then)
DELETION = re.compile(rf"\b(?:remov{W}|delet{W}|drop{W}|get(?:ting)? rid of|eliminat{W}|"
                      rf"(?:take|taking|strip{W}|cut{W}) out|purg{W}|discard{W}|ditch{W}|eras{W}|"
                      rf"no longer (?:need|use){W})\b", re.I)
# A kind of thing next to a word makes it a name: "the function parse", "the parse method", "the six dependency"
KIND = (r"(?:functions?|methods?|class(?:es)?|helpers?|variables?|constants?|dependenc(?:y|ies)|packages?|modules?|"
        r"targets?|scripts?|sections?|entries|entry|commands?|services?|jobs?|steps?|hooks?|plugins?)")
TOKEN = re.compile(r"([`'\"]?)([A-Za-z_$][\w$-]*[\w$])(\(\))?\1")
# Words before a kind word that say which thing, not its name: "the function", "this helper", "each method"
DETERMINERS = {"the", "a", "an", "this", "that", "these", "those", "its", "their", "our", "my", "your", "each", "every",
               "any", "some", "all", "both", "no", "unused"}


def _code_like(instruction: str, m: re.Match) -> bool:
    """Whether a word of the instruction names something in the file rather than being an everyday word."""
    quoted, name, call = m.groups()
    if not (quoted or call) and name.lower() in DETERMINERS and (
            name.islower() or re.search(r"(?:^|[.!?:;]\s*)$", instruction[:m.start()])):
        return False  # "delete the function f": "the" names nothing; "remove class Unused" names a class
    named = re.search(rf"\b{KIND}\s+$", instruction[:m.start()], re.I) or \
        re.match(rf"\s+{KIND}\b", instruction[m.end():], re.I)
    if quoted or call or named or re.search(r"[_\d$]|[a-z][A-Z]", name):
        return True
    from editllm.editor.spelling import checker

    spell = checker()
    return spell is not None and len(name) >= 3 and not spell.known([name.lower()])


DOES = re.compile(rf"\b(?:that|which|who)\s+(?:\w+\s+)?(?:{AWAY}|clears?|empties|resets?)\b[^.;]*", re.I)


def kept_removals(old_text: str, new_text: str, instruction: str) -> list[str]:
    """The names the instruction asks to remove that the edited text still holds as often as the file did. What a
    thing the edit adds does at run time is no removal: "add a Clear completed button that removes the done todos"
    (a probe, session 35, was told the edit left `todos` in place)."""
    instruction = DOES.sub(" ", instruction)
    if not DELETION.search(instruction):
        return []
    kept = []
    for m in TOKEN.finditer(instruction):
        name = m.group(2)
        if name in kept or not _code_like(instruction, m) or removal(name, instruction) != "asked":
            continue
        word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
        holding = [line for line in old_text.split("\n") if word.search(line) and not COMMENT_LINE.match(line)]
        now = [line for line in new_text.split("\n") if word.search(line) and not COMMENT_LINE.match(line)]
        if holding and len(now) >= len(holding) and _untouched(old_text, new_text, word):
            kept.append(name)
    return kept


# An instruction that asks for every one of a thing to go ("the console.log calls", "all TODOs", "every print"), and a
# place that narrows it ("from parse", "in main": the rest stay)
EVERY = re.compile(r"\b(?:all|every|each|any)\b|\b(?:calls|statements|lines|uses|usages|invocations|occurrences|"
                   r"references|instances|prints|logs)\b", re.I)
DOTTED = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?![\w$])")
NARROWED = re.compile(r"\b(?:from|in|inside|within|under|of)\s+(?!(?:the|this)\s+(?:file|code|module|class)\b)"
                      r"(?:the\s+|its\s+)?[`'\"]?[\w$.:/-]+", re.I)


def partly_kept(old_text: str, new_text: str, instruction: str) -> list[tuple[str, list[int]]]:
    """(name, 1-based lines of the edited text) for each name the instruction asks every use of to go that the edit
    took out of some lines and left, untouched, on others: a probe (session 37) asked to "Remove the
    Console.WriteLine calls" of a C# class and "the error_log calls" of a PHP one, and the model took out the first
    of two each time, exit 0 without a word (`kept_removals` speaks only when none went)."""
    instruction = DOES.sub(" ", instruction)
    if not DELETION.search(instruction) or not EVERY.search(instruction) or NARROWED.search(instruction):
        return []
    old, new = old_text.split("\n"), new_text.split("\n")
    moved = {}  # each old line left as it was: where it is now
    for op, i1, i2, j1, _ in line_opcodes(old, new):
        if op == "equal":
            moved.update({i1 + d: j1 + d for d in range(i2 - i1)})
    out: list[tuple[str, list[int]]] = []
    dotted = {d: d.replace(".", "_") for d in DOTTED.findall(instruction)}  # `Console.WriteLine`, `fmt.Println`
    for d, flat in dotted.items():
        instruction = instruction.replace(d, flat)
    names = {flat: d for d, flat in dotted.items()}
    for m in TOKEN.finditer(instruction):
        name = names.get(m.group(2), m.group(2))
        if name in [n for n, _ in out] or not (_code_like(instruction, m) or name in dotted) \
                or removal(m.group(2), instruction, False) != "asked":
            continue
        word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
        holding = [k for k, line in enumerate(old) if word.search(line) and not COMMENT_LINE.match(line)]
        left = [moved[k] + 1 for k in holding if k in moved]
        if left and len(left) < len(holding):
            out.append((name, left))
    return out


def partly_kept_note(path: str, name: str, lines: list[int]) -> str:
    """The note for a removal made of some uses and not of the others."""
    where = listed(lines)
    return (f"{path}: note: the instruction asks to remove every {name}, but the edit leaves line"
            f"{'s' if len(lines) > 1 else ''} {where}")


def _untouched(old_text: str, new_text: str, word: re.Pattern) -> bool:
    """Whether every line of the file holding `word` is still where it was, unchanged: a line the edit moved or
    rewrote was acted on ("remove pytest-cov from the runtime dependencies and add it to the dev extra")."""
    old, new = old_text.split("\n"), new_text.split("\n")
    equal = {k for op, i1, i2, _, _ in line_opcodes(old, new)
             if op == "equal" for k in range(i1, i2)}
    return all(k in equal for k, line in enumerate(old) if word.search(line))


def kept_note(path: str, names: list[str]) -> str:
    """The note for removals not made."""
    return f"{path}: note: the instruction asks to remove {', '.join(names)}, which the edit leaves in place"


SOURCED = re.compile(r"^\s*(?:\.|source)\s+\S", re.M)  # a shell script that reads another one's functions
ONE_LINE_FUNCTION = re.compile(r"^\s*(?:function\s+)?([\w:.-]+)\s*\(\s*\)\s*\{.*\}\s*$", re.M)  # `f() { ...; }`
QUOTED = re.compile(r"'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"")  # a shell word in quotes is text (`echo "build done"`)


def still_used(old_text: str, new_text: str, instruction: str) -> list[tuple[str, list[int]]]:
    """(name, lines) for each definition the instruction asks to remove that the edit removed while other lines of
    the text still use it: a real probe (session 28) removing `withTmp` from a JavaScript module left
    `module.exports.withTmp = withTmp`, which throws when the module loads. Python's undefined names are
    `editor.undefined`'s to find; this reads definitions by their headers (`blocks.DEF`) in any language. A shell
    function is noted however it went: a real-model probe (session 29) asked for a new helper and got it written
    over `_Technitium_account()`, which two functions still call, exit 0."""
    from editllm.editor.blocks import DEF, split_blocks
    from editllm.editor.source import split_lines

    if old_text == new_text:
        return []
    before, after = split_blocks(split_lines(old_text), 0), split_blocks(split_lines(new_text), 0)
    out = _methods_still_called(before, after, new_text, instruction)
    shell = {word for b in before if SHELL_FUNCTION.match(b.lines[0].strip() if b.lines else "") for word in headed(b)}
    named = {b.name for b in before if b.name}
    if shell and SOURCED.search(new_text):
        named, shell = named - shell, set()  # "move it into lib.sh and source it": defined where this text cannot see
    defined_before = named | shell | constants(before)
    defined_after = {b.name for b in after if b.name} | {word for b in after for word in headed(b)} | \
        set(ONE_LINE_FUNCTION.findall(new_text)) | constants(after)
    for name in sorted(defined_before - defined_after - {name for name, _ in out}):
        if removal(name, instruction) != "asked" and name not in shell:
            continue
        word = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
        lines = [n for n, line in enumerate(new_text.split("\n"), 1)
                 if word.search(QUOTED.sub("", line) if name in shell else line) and not COMMENT_LINE.match(line)
                 and not DEF.match(line) and not SHELL_FUNCTION.match(line.strip())]
        if lines:
            out.append((name, lines))
    return out


def constants(blocks: list) -> set[str]:
    """The names top-level assignments bind (`const DEBUG = ...`, `export const sleep = (ms) => ...`): a probe
    (session 38) removed DEBUG and left two reads of it in a TypeScript file, exit 0 without a word."""
    from editllm.editor.blocks import defines, imported

    return {name for b in blocks if not b.name and b.lines and not imported(b) for name in defines(b)}


# A member function a return type precedes and `{` (or its body) follows, C++'s too (`double& at(size_t r) const {`,
# `size_t rows() const { return rows_; }`), which blocks leaves unnamed: not a call statement (`c.print();`)
TYPED_MEMBER = re.compile(r"^[ \t]+(?!(?:return|if|for|while|switch|else|new|delete|throw|case)\b)"
                          r"(?:[\w:<>,]+[\s*&]+)+(~?[A-Za-z_]\w*)\s*\([^;]*\)\s*(?:const\s*)?(?:override\s*)?"
                          r"(?:noexcept\s*)?(?:\{.*)?$")


def _methods_still_called(before: list, after: list, new_text: str, instruction: str) -> list[tuple[str, list[int]]]:
    """(name, lines) for each method of a class the instruction asks to remove that no class of the edited text has
    any more while a line still calls it (`c.print();`, `$this->save(`, a bare `totalUnits()`): a real probe (session
    37) removed `Matrix::print` and left `c.print();` in `main`, which no longer compiles, exit 0 (only top-level
    definitions were read)."""
    from editllm.editor.blocks import DEF, METHOD, class_members

    def methods(blocks: list) -> dict[str, str]:
        found = {}
        for b in blocks:
            for m in class_members(b) or []:
                first = next((line for line in m.lines if line.strip()), "")
                typed = TYPED_MEMBER.match(first) if m.name is None else None  # C++'s `Matrix transpose() const {`
                if m.name or typed:
                    found[m.name or typed[1]] = b.name
        return found

    had, has = methods(before), methods(after)
    out = []
    for name in sorted(set(had) - set(has) - {b.name for b in after if b.name}):
        if removal(name, instruction) != "asked":
            continue
        call = re.compile(rf"(?<![\w$]){re.escape(name)}\s*\((?![^()]*\)\s*\{{)")  # not `load() {` (a definition)
        lines = [n for n, line in enumerate(new_text.split("\n"), 1)
                 if any(_own_call(c.string[:c.start()], had[name], name) for c in call.finditer(QUOTED.sub('""', line)))
                 and not COMMENT_LINE.match(line) and not DEF.match(line.strip()) and not METHOD.match(line)
                 and not TYPED_MEMBER.match(line)]
        if lines:
            out.append((name, lines))
    return out


# Method names every library has (`map.get(`, `stream.end(`, `emitter.emit(`): a call of one on another object than
# `this` is no call of the class's own (a fuzz over npm's classes, session 37)
LIBRARY_METHODS = {"get", "set", "has", "add", "delete", "remove", "clear", "insert", "push", "pop", "shift", "end",
                   "emit", "on", "off", "once", "load", "save", "close", "open", "run", "start", "stop", "write",
                   "read", "send", "copy", "search", "find", "filter", "map", "keys", "values", "entries", "refresh",
                   "update", "reset", "toJSON", "toString", "equals", "hashCode", "compareTo", "size", "length", "next"}
OWN_RECEIVER = re.compile(r"(?:\bthis|\bself|\$this|\bMe)\s*(?:\.|->|::|\?\.)\s*#?$|@$")


def _own_call(before: str, owner: str, name: str) -> bool:
    """Whether a call whose line reads `before` up to the name may be the removed method's: a bare call or one on
    `this`, or on an object, unless the chain goes through another class (`key_1.Key.fromJSON(`, `System.out.print(`,
    `super.end(`) or the name is one every library has (`this.store.get(`)."""
    before = before[-200:]  # the receiver's chain, not a minified line's every call before it
    if OWN_RECEIVER.search(before) or not re.search(r"(?:\.|->|::|\?\.)\s*#?$", before):
        return True
    chain = re.search(r"[\w$#]+(?:\([^()]*\))?(?:\s*(?:\.|->|::|\?\.)\s*#?[\w$]+(?:\([^()]*\))?)*\s*(?:\.|->|::|\?\.)"
                      r"\s*#?$", before)
    classes = {w for w in re.findall(r"(?<![\w$#])[A-Z][\w$]*", chain[0] if chain else "")} - {owner}
    return name not in LIBRARY_METHODS and not classes


def still_used_note(path: str, name: str, lines: list[int]) -> str:
    """The note for a removed definition the text still uses."""
    where = listed(lines)
    return (f"{path}: note: the edit removes {name}, but line{'s' if len(lines) > 1 else ''} {where} still "
            f"use{'' if len(lines) > 1 else 's'} it")
