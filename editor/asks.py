"""What an instruction asks for, read from its words: whether it names a definition (`mentioned`), asks
for one to go (`removal`), renames (`RENAMING`) or moves (`MOVING`).

A merge deletes or moves the user's code only where the instruction asks for that in so many words. A mere
mention is never a request: "make tick stop the timer" names the method `stop` too, and a merge that took
it for one deleted it.
"""

from __future__ import annotations

import re
from typing import NamedTuple


def mentioned(name: str, instruction: str) -> bool:
    """Whether the instruction has `name` as a word of its own (`stop` in "make tick stop", not in `stopped`)."""
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", instruction) is not None


# A verb's endings, not a name's: "remove", "Removes", "REMOVED", but not `removeLine` or `remove_item` (a probe,
# session 41: "Make OrderService.removeLine throw ..." read as asking to remove IllegalStateException)
W = r"(?-i:[a-z]*|[A-Z]*)"
# Verbs after which a name goes away (removed, or renamed, inlined, merged, split, moved elsewhere); words after
# a name that say it should go; phrases before one that say it is not needed; words that only hint at removal.
# AWAY: the verbs after which lines of the file may go (a rename or a swap keeps them, under other names or places).
# TAKES_OUT: those that only take lines out (a section "removed" goes; one "moved" or "merged" stays in some form).
TAKES_OUT = rf"remov{W}|delet{W}|drop{W}|get(?:ting)? rid of|eliminat{W}|(?:take|taking|strip{W}|cut{W}) out"
AWAY = (TAKES_OUT + rf"|inlin{W}|replac{W}|merg{W}|mov{W}|fold{W}|combin{W}|consolidat{W}|split{W}|"
        rf"deprecat{W}|purg{W}|prun{W}|discard{W}|ditch{W}|kill{W}|nuke{W}|eras{W}|retir{W}|throw{W} away")
GOES = AWAY + rf"|renam{W}|swap{W}"
# Words that ask for lines added; for lines of the file reworked, beyond taking some out; for lines kept but put
# elsewhere or under other names (drift and focus read an instruction's asks with them)
ADDING = rf"add{W}|insert{W}|append{W}|introduc{W}|includ{W}|log{W}|annotat{W}|document{W}|writ{W}"
REWORKS = (rf"chang{W}|replac{W}|rewrit{W}|refactor{W}|fix{W}|correct{W}|updat{W}|convert{W}|simplif{W}|clean{W}|"
           rf"restructur{W}|reorgani[sz]{W}|mak{W}|us(?:e|ing)|turn{W}|switch{W}|instead|wrap{W}|split{W}|extract{W}|"
           rf"sort{W}|format{W}|modern{W}")
RESHAPES = rf"renam{W}|swap{W}|mov{W}|merg{W}|combin{W}|inlin{W}"

# What an instruction writes as code: a backticked span, a name with `_`, `.`, a digit or an inner capital
# (`use_cache`, `Sorter.run`, `logV2`, `SortedList`), or a capitalised word inside a sentence ("the Sorter class")
CODE_WORDS = re.compile(r"`[^`\n]*`|[\w$]*(?:[_$\d]|[a-z][A-Z])[\w$.]*(?:\(\))?|[\w$]+\.[\w$.]+(?:\(\))?|"
                        r"(?<![.!?:;\n-]\s)(?<!^)(?<=\s)[A-Z][\w$]*")


def plain(instruction: str) -> str:
    """The instruction's own words, its code taken out: a class called `Sorter` or `LogWriter` asks for no sorting
    or logging (a review, session 37, found "remove the Sorter class" read as a rework, so its lines went unchecked).
    The first word of a sentence stays ("Sort the imports")."""
    return CODE_WORDS.sub(" ", instruction)

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

PREPOSITIONS = {"to", "into", "in", "from", "of", "with", "inside", "within", "by", "for", "on", "at", "as", "than",
                "onto", "via"}
# Words that make the name the object of something else: "the call to `validate`", "from `save`", "to `bar`".
OBJECT_OF = PREPOSITIONS | {"calls", "call", "calling", "uses", "use", "using", "called"}

FILLER = {"the", "a", "an", "its", "their", "this", "that", "method", "function", "helper", "class", "member", "field",
          "attribute", "property", "all", "every", "each"}  # "remove all error_log calls" (a probe, session 37)

CLAUSE = re.compile(r"[.;!?\n](?![\w$`(])")  # a sentence or clause ends (a dot inside `A.f` or `f.py` does not)

SPAN = r"(?:[^.;:!?\n]|\.(?=[\w$`]))"  # a run of text within one clause


# What a class's constructor is called, language by language, and the words that name it
CONSTRUCTORS = {"__init__", "__new__", "__post_init__", "__construct", "constructor", "initialize", "new", "init"}
CONSTRUCTOR_WORD = re.compile(r"\b(?:constructors?|initiali[sz]ers?|ctors?)\b", re.I)


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
    took it for one deleted it. Nor is a move within the file ("move x above y", "swap x and y"), nor a name
    that is an everyday word unless quoted as code (a JavaScript `get from()` in "move the check from a to b")."""
    asked, pair = placement(instruction), swap(instruction)
    if (asked and asked.name == name) or (pair and name in pair):
        return None
    if name in CONSTRUCTORS and name != "constructor" and CONSTRUCTOR_WORD.search(instruction):
        said = removal("constructor", CONSTRUCTOR_WORD.sub("constructor", instruction), parts)
        if said == "asked":  # "remove ... the constructor": PHP's `__construct`, Python's `__init__` (a probe,
            return said  # session 36: a correct removal refused as dropping `UserController.__construct`)
    verdict = None
    instruction = re.sub(r"\b(?:as well as|along with|together with)\b", "and", instruction, flags=re.I)
    ends = [c.end() for c in CLAUSE.finditer(instruction)]
    plain = name.lower() in PREPOSITIONS | PRONOUNS | ARTICLES
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}(?![\w$])", instruction):
        if plain and not re.match(r"[`'\"]", instruction[m.start() - 1:m.start()] or " ") and \
                not instruction.startswith("()", m.end()):
            continue  # "from" in "move the check from a to b" is a word, not the member `from`
        before = instruction[max((e for e in ends if e <= m.start()), default=0):m.start()]
        after = instruction[m.end():min((e - 1 for e in ends if e > m.end()), default=len(instruction))]
        if re.fullmatch(r"\s*(?:[-*\u2022]|\d+[.)])?\s*[`'\"]?", before):  # an item of a list: its heading says
            above = instruction[:m.start() - len(before)].rstrip().split("\n")
            heading = next((line for line in reversed(above) if not ITEM.match(line)), "")
            if heading.rstrip().endswith(":") and re.search(rf"\b(?:{GOES})\b", heading, re.I):
                return "asked"  # "Remove these functions:\n- foo\n- bar"
        if re.match(r"(?:\.|::|->|#)[A-Za-z_$]", after):
            continue  # "the LOG.info call": a member of it, not it (a probe, session 38: the `LOG` field went)
        if name.lower() in KIND_WORDS and not re.match(r"[`'\"]", instruction[m.start() - 1:m.start()] or " ") \
                and re.match(rf"\s+[`'\"]?{NAME}", after) and not re.match(r"\s+(?:to|and|or|as|into|from)\b", after):
            continue  # "Rename the method url to href": what url is, not a member `method` (a fuzz, session 43: a
            # JavaScript `Request`'s field `method` taken for asked away)
        part = PART.match(after) if parts else None
        if parts == "decorator" and part and "decorator" in part.group(0).lower():
            part = None  # "the cache decorator" is the decorator itself
        if part or POSSESSIVE.match(after) or re.match(r"[`'\"]?\s+(?:method|function|class|constructor)'s\b", after) \
                or re.search(r"[(\[\u2014]|\s-\s", before):
            continue  # "the `validate()` call", "the `debug` parameter", "route's check", "(baz stays)": not it
        if re.match(rf"{QUOTES}(?:isn't|is not|aren't|are not) needed\b", after, re.I):
            return "asked"
        words = [w.lower() for w in re.findall(r"[A-Za-z_$'][\w$']*", before)]
        while words and words[-1] in FILLER:
            words.pop()
        tail = " ".join(words[-4:]) + " "
        if re.search(rf"\b(?:{GOES}|{NEEDLESS}|the name of|name)\s+$", tail, re.I):
            return "asked"  # right after the verb: "get rid of stop", "remove the stop method", "we don't need foo"
        if re.match(rf"{QUOTES}(?:(?:a|an)\s+(?:[\w-]+\s+){{0,3}}name\b|(?:should|must|could|will|is to|to) be "
                    rf"(?:called|named|renamed)\b|(?:is|are|was|has become|seems|looks|(?:can|should|must|may) be|now)"
                    rf"\s+(?:\w+\s+)?(?:{GONE})\b|(?:{GONE})\b|"
                    # "`foo`: remove it", not "In load_config, remove the retry loop" (session 41: read as load_config
                    # asked away, and a right edit told it had left load_config in place)
                    r"[:,\u2013-]+\s*(?:please\s+)?(?:remove|delete|drop)(?:\s+(?:it|this|that|them))?\s*(?:[.!;,)]|$)|"
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
        if verb and re.search(r"(?:\band|,)\s+(?:also\s+)?(?:the|its)\s+[`'\"]?$", before, re.I):
            return "asked"  # "Remove the discount field from Cart and the applyDiscount() method" (a probe, session 36)
        colon = before.rfind(":")
        if colon >= 0 and re.search(rf"\b(?:{AWAY})\b", before[:colon], re.I) and not re.search(
                rf"\b(?:{'|'.join(OBJECT_OF | STOPS)})\b", before[colon:], re.I):
            return "asked"  # "Remove the AuditLog dependency entirely: the property, the constructor, ..." (a probe)
        if re.search(rf"\b(?:{HINTS})\b", before + " " + after, re.I):
            verdict = "unclear"
    return verdict


def asks_removal(name: str, instruction: str) -> bool:
    """`removal(name, instruction) == "asked"`."""
    return removal(name, instruction) == "asked"


# "move x above y", "put `x()` right after the `y` function", "move x to the end": a definition, a side and a place.
_KIND = r"(?:(?:function|method|class|helper|definition|def|block|section)s?\s+)?"
_NAME = r"[`'\"]?([A-Za-z_$][\w$]*)[`'\"]?(?:\(\))?[`'\"]?"
PLACEMENT = re.compile(rf"\b(?:move|put|place|relocate)\s+(?:the\s+)?{_KIND}{_NAME}\s+{_KIND}(?:so\s+(?:that\s+)?it\s+"
                       rf"(?:comes|is|sits)\s+|to\s+(?:go|sit|come)\s+|(?:right|just|directly|immediately)\s+)?"
                       rf"(?:(above|before|below|after|under|beneath|ahead\s+of)\s+(?:the\s+)?{_KIND}{_NAME}|"
                       rf"(?:to|at)\s+the\s+(top|bottom|end|beginning|start)\b(?:\s+of\s+(?:the\s+)?{_KIND}{_NAME})?)",
                       re.I)
# A place in another file: "move x to the end of utils.py", "... above load in `io.py`", "into a new module".
ELSEWHERE = re.compile(r"\b(?:in|of|into|to)\s+(?:the\s+)?(?:[`'\"]?[\w/-]+\.[A-Za-z]{1,5}\b|"
                       r"(?:an)?other\s+(?:file|module)|(?:a\s+)?(?:new|separate|different)\s+(?:file|module))", re.I)
# "swap x and y", "swap the order of `x` and `y`": two definitions that change places.
SWAP = re.compile(rf"\bswap\s+(?:the\s+)?(?:(?:order|places|positions)\s+of\s+(?:the\s+)?)?{_KIND}{_NAME}\s+and\s+"
                  rf"(?:the\s+)?{_KIND}{_NAME}", re.I)
# Words that ask for an order without naming what goes where ("reorder the methods", "sort the functions"): the
# output's order is taken. Other words of moving ("move the check from f to g", "put a guard in f before the
# loop") say nothing of where definitions go, and the file's order stays.
REORDERING = re.compile(r"\b(?:reorder\w*|re-order\w*|rearrang\w*|alphabeti\w*)\b|"
                        r"\bsort\w*\s+(?:the\s+)?(?:\w+\s+)?(?:functions|methods|classes|definitions|members|sections)\b",
                        re.I)
PRONOUNS = {"it", "this", "that", "them", "these", "those", "everything", "all", "one", "which"}
# The words for what a name is, which stand before it: "the method url"
KIND_WORDS = {"method", "function", "class", "helper", "field", "property", "variable", "constant", "type", "struct",
              "module", "attribute", "member", "getter", "setter", "macro", "enum", "interface", "trait"}
# ... and articles: "Rename the method readable" took `the` for asked away, and with it a class's comment line
# `# if found, transition to the next state.` (a fuzz, session 43; refused as losing a line not shown)
ARTICLES = {"the", "a", "an"}


class Place(NamedTuple):
    """Where the instruction asks one definition to go (`placement`)."""

    name: str  # the definition that moves
    side: str  # "before" or "after" `anchor`; "first" or "last" (in its file or class)
    anchor: str | None  # the definition it goes next to
    within: str | None  # "to the end of `within`": the file or class it ends up in (a definition's name: inside it)


def placement(instruction: str) -> Place | None:
    """Where the instruction asks one definition to go: "move x above y", "put `x()` right after the `y`
    function", "move x to the top" (of its file or class). None for a place in another file ("move x to the end
    of utils.py"): that is a removal from this one."""
    m = PLACEMENT.search(instruction)
    if not m or m.group(1).lower() in PRONOUNS:
        return None
    clause = instruction[m.start():next((c.end() for c in CLAUSE.finditer(instruction, m.end())), len(instruction))]
    if ELSEWHERE.search(clause):
        return None
    if m.group(4):
        return Place(m.group(1), "first" if m.group(4).lower() in ("top", "beginning", "start") else "last", None,
                     m.group(5))
    if m.group(1) == m.group(3) or m.group(3).lower() in PRONOUNS:
        return None
    side = m.group(2).lower()
    return Place(m.group(1), "before" if side in ("above", "before") or side.startswith("ahead") else "after",
                 m.group(3), None)


def swap(instruction: str) -> tuple[str, str] | None:
    """The two definitions "swap x and y" asks to change places."""
    m = SWAP.search(instruction)
    if not m or m.group(1) == m.group(2) or {m.group(1).lower(), m.group(2).lower()} & PRONOUNS:
        return None
    return m.group(1), m.group(2)


# A definition added under a name the file has ("add an `add(long)` overload"): the output's one replaces none.
OVERLOAD = re.compile(r"\boverload", re.I)


# "add a method remaining() to ...", "add a function `rgb_to_hex`", "add a clear() method": the name asked for
_ADDED = (re.compile(r"\badd(?:s|ing)?\s+(?:a|an|the)\s+(?:new\s+)?(?:test\s+|static\s+|class\s+|async\s+)?"
                     r"(?:method|function|class|property|helper|classmethod|staticmethod)\s+(?:called\s+|named\s+)?"
                     r"[`'\"]?([A-Za-z_]\w*)", re.I),
          re.compile(r"\badd(?:s|ing)?\s+(?:a|an)\s+(?:new\s+)?[`'\"]?([A-Za-z_]\w*)[`'\"]?(?:\([^)]*\))?[`'\"]?\s+"
                     r"(?:method|function|class|property|helper)\b", re.I))


def asked_definitions(instruction: str) -> list[str]:
    """The names of definitions the instruction asks to add ("add a method remaining() to the Chunk class")."""
    names = [m.group(1) for pattern in _ADDED for m in pattern.finditer(instruction)]
    return list(dict.fromkeys(n for n in names if n.lower() not in NOT_A_NAME))


# Words after "add a function" that begin what it does, not its name: "add a function that parses the version"
# (a probe, session 34: "the instruction asks for that, which the edit does not define")
NOT_A_NAME = {"new", "method", "function", "class", "test", "that", "which", "to", "for", "in", "on", "of", "with",
              "and", "or", "so", "the", "a", "an", "this", "it", "here", "there", "after", "before", "above", "below",
              "next", "near", "where", "when", "whose", "called", "named", "returning", "taking", "like", "similar",
              # "add a class docstring to scheduler", "a class attribute": what it adds to the class (a probe,
              # session 39: "the instruction asks for docstring")
              "docstring", "docstrings", "comment", "comments", "attribute", "attributes", "variable", "field",
              "constant", "decorator", "level", "annotation", "annotations"}


NAME = r"[A-Za-z_$][\w$]*"
# "rename (the function) `parse()` to `parse_args()`", "rename X as Y", "rename X → Y", "rename X -> Y"
# "rename the function foo to bar", "rename the Bucket type to bucket", "rename the members table to patrons": a kind
# word before the name (lower case) or after it, the name taken first (a probe, session 35: `type` was taken for
# the name of "the Bucket type", and a complete rename noted as left half done)
KINDS = (r"type|struct|table|class|function|method|variable|field|column|constant|interface|enum|module|key|"
         r"property|parameter|argument|trait|view|index")
RENAME = re.compile(rf"\brenam\w*\s+(?:(?:the|a|its)\s+)?(?:(?-i:[a-z]+)\s+){{0,2}}?[`'\"]?(?:{NAME}(?:\.|::))?"
                    rf"({NAME})(?:\(\))?[`'\"]?"  # "the static helper align_up", "Version._cmp" (a probe, session 42)
                    rf"(?:\s+(?:{KINDS}))?(?:\s+in\s+[\w./-]+\.\w+)?"  # "rename filter in fnmatch.py to filter_names"
                    rf"\s+(?:to|as|into|->|\u2192)\s+[`'\"]?(?:{NAME}(?:\.|::))?({NAME})(?:\(\))?[`'\"]?", re.I)
NOT_NAMES = {"function", "method", "class", "variable", "field", "parameter", "argument", "constant", "module",
             "file", "it", "this", "that", "them", "all", "each", "type", "struct", "table", "column"}  # "rename the
# method to something clearer"


def renames(instruction: str) -> list[tuple[str, str]]:
    """The (old, new) names the instruction asks to rename, in order; none when it asks no rename in these words."""
    pairs = [(m.group(1), m.group(2)) for m in RENAME.finditer(instruction)]
    return [(old, new) for old, new in dict.fromkeys(pairs) if old != new and old.lower() not in NOT_NAMES]
