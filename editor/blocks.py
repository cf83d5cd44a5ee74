"""Text cut into blocks (a statement with everything nested under it) and what the merge reads from them.

Definitions (`DEF`, and a braced class's keyword-less `METHOD`), containers whose body is a list of members,
decorators, imports, assignments and Markdown headings are told by regular expressions over lines, not by a
parser: one vocabulary serves Python, the C family, JavaScript and TypeScript, Go, Rust, PHP and prose, and
a file that does not parse (the model's output mid-edit) is still read. Lines are paired by likeness
(`paired`) where a rewritten stretch is compared line by line.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import keyword
import re
from collections import Counter
from dataclasses import dataclass

# What may come before a definition's keyword: `export default`, Rust's `pub(crate)`, modifiers of Java, C#,
# Kotlin, TypeScript and PHP (`public abstract class`, `public function`), Python's `async`.
MODIFIERS = (r"^[ \t]*(?:export\s+(?:default\s+)?)?(?:pub(?:\([^)]*\))?\s+)?"
             r"(?:(?:public|private|protected|internal|abstract|final|sealed|static|open|data|partial|async|local|"
             r"fileprivate|mutating|nonmutating|override|convenience|required)\s+)*")  # ... and Swift's

# The name is followed by what a definition goes on with (a parameter list, a base, `{`, `:`, the line's end):
# "public interface that other modules use" in a README, or C's `static struct node *find(...)`, is none.
DEF = re.compile(
    MODIFIERS + r"(?:(?:def|class|function\*?|fn|func|interface|struct|enum|trait|impl|namespace|mod|type|"
    r"extension|object)\s+"  # Swift's `extension Temperature {` (a probe, session 38, asked for one of its
    # methods), Kotlin's and Scala's `object Registry {`; a `companion object {` is named `object`, a
    # `companion object Factory {` by its name
    r"|companion\s+(?=object\s*\{)|companion\s+object\s+(?=[A-Za-z_]\w*\s*[:{])"
    r"|impl<(?:[^<>]|<[^<>]*>)*>\s*"  # Rust's `impl<'a> Data<'a> {`, `impl<T: Into<String>> From<T> for X {`
    # Ruby's `module Throttle` (`Net::HTTP`), TypeScript's `module Shapes {`: a capitalised name that ends the line,
    # not Haskell's `module Main where` or Verilog's `module counter(`, which hold no members
    r"|module\s+(?=(?:[A-Z]\w*::)*[A-Z]\w*\s*\{?\s*$))"
    r"(?:[A-Za-z_]\w*::)*"  # a path's last part names it: `impl std::str::FromStr for Style` is FromStr, not `std`
    r"(?!(?:extends|implements)\b)([A-Za-z_$][\w$]*(?:[.\\:][A-Za-z_$][\w$]*)*[?!]?)"  # `A.B`, `App\Http`, Lua's `T:m`
    # (and Ruby's `def allow?(id)`, `def save!`)
    r"(?=\s*(?:[<({:;=\[@]|$|(?:extends|implements|where|for|final|"
    r"permits|private|protected|internal|public|constructor)\b))"
)

# A method in a braced class body (`  size() {`, `  static async load(url): Promise<X> {`, a constructor, and a typed
# one after an access word or Kotlin's `fun`: `public int size() {`, `public async Task<T> GetAsync(int id) {`,
# `override fun size(): Int {`): named only as a member of a class whose header opens a brace, never elsewhere
# (object literals, PHP `foreach`, C macros and Kotlin `repeat(3) {` look the same). C++ members, which no access
# word precedes (`int size() const {`), are not named: their preprocessor lines and nested types defeat the merge.
_KEYWORDS = "if|for|foreach|while|switch|catch|with|function|return|else|do|try|new|await|typeof|elseif|synchronized"
_NAME_OK = rf"(?!(?:{_KEYWORDS})\b)"
_TYPE_OK = rf"(?!(?:{_KEYWORDS}|throw|case|using|lock|fixed|yield|delete|fun)\b)"
_TYPED = (r"(?:(?:public|private|protected|internal)\s+(?:(?:static|final|abstract|synchronized|virtual|override|"
          r"sealed|async|extern|unsafe|open|suspend|operator|inline|new|readonly|default|native|partial)\s+)*"
          rf"(?:<[^()]*>\s+)?(?:{_TYPE_OK}[\w$.]+(?:<[^()]*>)?(?:\[\])*\??\s+){{0,2}}"
          r"|(?:(?:public|private|protected|internal|override|open|suspend|operator|inline|abstract|final)\s+)*fun\s+"
          r"(?:<[^()]*>\s+)?(?:[\w$.]+\.)?)")
# A typed member no access word precedes: C++'s `int size() const {`, `const std::string& name() const {`,
# `explicit Counter(int n) : n_(n) {`, `[[nodiscard]] bool empty() const noexcept {`, `template <class T> void f(T)`;
# Java's package-private `int size() {`; C#'s private-by-default `void Run()` (Allman). Before (session 40), no
# method of a C++ class was ever focused: the whole header was shown for one method.
_BARE_TYPED = (r"(?:template\s*<[^()]*>\s*)?(?:\[\[[^\]]*\]\]\s*)?"
               r"(?:(?:static|final|virtual|inline|explicit|constexpr|consteval|friend|synchronized|abstract|async|"
               r"extern|unsafe|override|sealed|native|default|volatile|mutable)\s+)*"
               rf"(?:{_TYPE_OK}[A-Za-z_][\w:.]*(?:<[^()]*>)?(?:\[\])*\??(?:\s*[*&]+\s*|\s+)){{1,4}}?(?!func\b)")
# after the parameters, C++'s qualifiers, trailing return type and a constructor's initializers
_QUALIFIERS = r"(?:\s*(?:const|noexcept(?:\([^()]*\))?|override|final|volatile|&&?))*(?:\s*->\s*[^{;=]+?)?"
# Parameters may hold one level of parentheses: a default that is a call (`decoder: JSONDecoder = JSONDecoder()`,
# `now = Date.now()`; a probe, session 36: the member read as dropped and a correct edit refused)
_METHOD_HEAD = (rf"^[ \t]+(?:{_TYPED}|{_BARE_TYPED}|(?:(?:static|async|get|set|public|private|protected|readonly|"
                rf"override)\s+)*)\*?#?{_NAME_OK}(~?[A-Za-z_$][\w$]*)(?:<[^()]*>)?\s*\((?:[^()]|\([^()]*\))*\)"
                rf"{_QUALIFIERS}\s*(?:throws\s+[\w$.,\s]+?)?(?::\s*[^{{=;]+)?")
METHOD = re.compile(_METHOD_HEAD + r"\{\s*(?://.*)?$")  # (`int size() const {  // cached`)
METHOD_ALLMAN = re.compile(_METHOD_HEAD + r"\s*(?://.*)?$")  # C#'s and Allman's `{` on the next line
# An expression-bodied member: Kotlin's `fun isDone(id: String): Boolean = id in done` (its body may go on below),
# C#'s `public decimal Total() => Quantity * UnitPrice;` (a probe, session 38: "Remove the isDone method" saw the
# whole file, the member unnamed)
METHOD_EXPR = re.compile(_METHOD_HEAD + r"\s*=>?(?!=)")

DEFINE = re.compile(r"#\s*define\b")
PREPROCESSOR = re.compile(r"#\s*(?:if|ifdef|ifndef|elif|else|endif|define|undef|pragma|include|error|warning|line)\b")
# A C or C++ function's first line: a type (words, pointers, templates), the name, its parameters, no `;` or `=`.
C_FUNCTION = re.compile(
    r"^(?!(?:return|raise|assert|await|yield|throw|new|delete|goto|sizeof|typedef|using|namespace|template|print|if|"
    r"else|while|for|switch|case|do|not|and|or|in|is|lambda|import|from|except|with|elif|del|echo|export|"
    r"declare|call|create|select|class)\b)"
    r"(?:[A-Za-z_]\w*(?:<[^()]*>)?(?:::[A-Za-z_]\w*(?:<[^()]*>)?)*[\s*&]+)+?"  # `std::vector<std::string> R::f()`
    r"\**&?((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\([^;=]*$",
    re.I)
C_TYPE_LINE = re.compile(r"^(?!(?:return|else|do|case|default|public|private|protected|import|from|package|use|"
                         r"require|include|global|nonlocal|pass|del|assert|raise|yield|await|async|def|class|print)\b)"
                         r"[A-Za-z_][\w:]*(?:<[^()]*>)?(?:[ \t]+[*&]*[A-Za-z_][\w:]*(?:<[^()]*>)?)*[ \t*&]*"
                         r"(?://.*)?$")
# ^ `static void XMLCALL` alone, or C++'s `std::vector<int>`, `const Foo &` (GNU's style: the name on the next line)
C_NAME_LINE = re.compile(r"^\**[A-Za-z_][\w:~]*\s*\([^;\"'=]*$")  # a signature: no string, `;` or `=` in it
GO_METHOD = re.compile(r"^func\s+\([^)]*\)\s+([A-Za-z_]\w*)\s*[(\[]")  # `func (s *Server) Start(ctx) error {`
NAMESPACE = re.compile(r"[ \t]*(?:export\s+)?(?:declare\s+)?namespace\s")
# Definitions whose body is a list of members: shown with one member, the others are kept.
CONTAINER = re.compile(MODIFIERS + r"(?:(?:class|interface|struct|enum|trait|impl|namespace|module|extension|object)\s"
                                   r"|impl<|companion\s+object\b)")

DECORATOR = re.compile(r"^[ \t]*@")
TEMPLATE = re.compile(r"^[ \t]*template\s*<.*>\s*(?://.*)?$")  # C++'s `template <typename T>` over its definition
RUST_ATTRIBUTE = re.compile(r"^[ \t]*#\[[^\n]*\][ \t]*$")  # `#[derive(Debug)]`, not the file's own `#![...]`
# A member's attribute on a line of its own, a note on it as its comments are: Rust's `#[must_use]`, C#'s
# `[Obsolete("use AddItem")]`, `[HttpGet("{id}")]` (a probe, session 40: a method shown without them and its `///`
# above, "Update the doc comment of Rect::perimeter" changed nothing, and "Remove the Obsolete attribute" was refused)
ATTRIBUTE = re.compile(r"^[ \t]+(?:#\[[^\n]*\]|\[[A-Z][\w.]*(?:\(.*\))?(?:\s*,\s*[A-Z][\w.]*(?:\(.*\))?)*\])[ \t]*"
                       r"(?://.*)?$")

ACCESS = re.compile(r"^(?:public|private|protected)(?:\s+(?:slots|Q_SLOTS))?\s*:\s*(?://.*)?$")

DECORATOR_NAME = re.compile(r"^[ \t]*@(?:[\w$]+\s*\.\s*)*([\w$]+)")  # `@functools.cache` → cache

CLOSER = re.compile(r"^[ \t]*[}\])]")
# The lines that go on with a shell (or Ruby) statement at its own indentation: shown alone, `else` ... `fi` made
# no sense to the model (git's scripts, session 43)
GOES_ON = re.compile(r"^(?:then|do|else|elif\b(?!.*:\s*$).*|elsif\b.*|;;)\s*(?:#.*)?$")
CASE = re.compile(r"^case\b.*\bin\s*(?:#.*)?$")  # `case "$x" in` ... `esac`: its arms start nothing
# A keyword that closes a body at its opener's indent (Lua's and Ruby's `end`, the shell's `fi`, `done`, `esac`):
# the block's last line, not a statement of its own (a probe, session 35: `local function clamp` removed as asked
# left its `end` behind, read as a statement lost, and the edit was undone)
END_LINE = re.compile(r"^[ \t]*(?:end|fi|done|esac)\b[\s),;]*$")
# A line comment (`# note`, `// note`, `/// doc`), not `#include`, `#[derive]` or a shebang.
# `# note`, `#note` (acme.sh's `#Usage: ...`), `// note`; not C's or C#'s directives, a shebang, a Rust attribute or
# a CSS rule for an id (`#logo { float: left; }`, `#nav {`)
LINE_COMMENT = re.compile(r"^[ \t]*(?:#(?![!\[])(?!\s*(?:include|define|if|ifdef|ifndef|elif|else|endif|undef|"
                          r"pragma|error|warning|line|region|endregion|nullable)\b)(?![\w-]+[^\n{}]*\{[^{}]*\}?\s*$)|//)")
# What the comment that opens a file says when it is the file's own, not its first definition's.
HEADER = re.compile(r"copyright|licen[cs]e|spdx|@file|@module|@license|eslint|-\*-|coding[:=]", re.I)

# An assignment or a declaration (`x = 1`, `x: int = 1`, `x: int`, `const X = 1`): group 1 is the target.
ASSIGN = re.compile(r"^[ \t]*(?:(?:export\s+)?(?:const|let|var)\s+)?([A-Za-z_$][\w$.]*(?:\s*,\s*[A-Za-z_$][\w$.]*)*)"
                    r"\s*(?::[^=]*)?(?:=(?!=)|$)")

IMPORT = re.compile(r"^(?:from\s+(\S+)\s+)?import\s+(.*)$", re.S)
# An import line of the languages the editor meets (Python, JavaScript, Java, Rust's `use`, C's `#include`, C#'s
# `using`, Ruby's `require`): focus shows them with the definitions (a probe, session 35, showed the model a Rust
# struct without the `use` lines above it), and a removal that leaves one unused took it out as asked. Whole
# statements only: a docstring's "use for GPU training." is no Rust `use`
IMPORT_LINE = re.compile(r"^(?:import|from)\s+\S|^(?:pub(?:\([\w:]+\))?\s+)?use\s+[\w:{}*,\s]+;|^#\s*include\s*[<\"]"
                         r"|^using\s+(?:static\s+)?[\w.=\s]+;|^require(?:_relative)?[\s(]+['\"]")

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


def indent_of(line: str) -> int:
    """Columns of leading whitespace, a tab reaching the next multiple of 8 as Python, git and editors read it. A
    fuzz (session 41): GNU's style (libstdc++, gcc) indents by two spaces and writes each 8 columns as a tab, and a
    tab counted as one column put `\treturn x;` (column 8) before a member at column 2: every class body was cut
    at the wrong lines."""
    lead = line[:len(line) - len(line.lstrip(" \t"))]
    return len(lead.expandtabs(8)) if "\t" in lead else len(lead)


def is_blank(line: str) -> bool:
    return not line.strip()


def blank_tail(lines: list[str]) -> int:
    """How many lines at the end are blank."""
    n = 0
    while n < len(lines) and is_blank(lines[-1 - n]):
        n += 1
    return n


# A string or character literal within one line ("a{", 'b', `c`): its braces are text, not blocks
LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)\'|`[^`\n]*`')


def bracket_depth(line: str) -> int:
    """How many round and square brackets a line leaves open (negative: closes); strings are not told apart."""
    return line.count("(") + line.count("[") - line.count(")") - line.count("]")


def brace_delta(lines: list[str]) -> int:
    """How many more `{` than `}` the lines hold, literals within a line aside. Line by line on purpose: a scanner
    of the whole file misread raw strings (r"\\", `\\`, R"(...)"), regex literals and CSS URLs, and then every
    brace after them (a review, session 27: 7 asked edits refused); here a misread stays within its line."""
    return sum(text.count("{") - text.count("}") for text in (LITERAL.sub("", line) for line in lines))


def split_blocks(lines: list[str], indent: int) -> list[Block]:
    """Cut lines into blocks that start at a non-blank line indented exactly `indent`.

    Deeper lines, closing brackets at that level and a definition right after its decorators stay
    in the current block. Lines before the first block start (shallower text) form an unnamed block.
    """
    blocks: list[Block] = []
    inside = in_strings(lines)  # a multi-line string's lines start nothing (a module docstring's
    # `fnmatchcase(FILENAME, PATTERN) ...` was a block of its own, shown as a caller: a probe, session 37)
    for k, line in enumerate(lines):
        if k in inside and blocks:
            block = blocks[-1]
            block.lines.extend(block.blank + [line])
            block.blank = []
            continue
        starts = (not is_blank(line) and indent_of(line) <= indent and not CLOSER.match(line)
                  and not (END_LINE.match(line) and blocks and blocks[-1].lines and not blocks[-1].blank)
                  and line.strip() != "{"  # a brace on its own line (PHP's PSR-12, C#, Allman) opens the last one
                  and not (indent == 0 and ACCESS.match(line)))  # C++ `public:` in column 0 is inside its class
        if starts and blocks and blocks[-1].lines and ACCESS.match(line.strip()) and indent_of(line) == indent:
            last = blocks[-1].lines[-1]  # a nested C++ class's `public:` at its own indentation (LLVM's style)
            starts = not (indent_of(last) > indent or re.sub(r"\s*//.*", "", last).rstrip().endswith("{"))
        if starts and blocks and blocks[-1].lines and PREPROCESSOR.match(line):
            last = blocks[-1].lines[-1]  # C's `#if` in column 0 inside an open body (`{`, deeper lines) is of it
            # ... but a `#define` whose continued lines have ended is no body: two macros apart are two blocks
            done = DEFINE.match(blocks[-1].lines[0]) and not last.rstrip().endswith("\\")
            starts = bool(done) or not (indent_of(last) > indent or last.rstrip().endswith(("{", "(", ",", "\\"))
                                        and not LINE_COMMENT.match(last))  # `// class X {` in a comment opens none
        if starts and blocks and blocks[-1].lines and not blocks[-1].blank:
            last = blocks[-1]
            if bare_decorator(last.lines[-1]) and indent_of(last.lines[-1]) == indent:
                starts = False  # `@decorator` then `def f`: one block named f
            elif len(last.lines) == 1 and indent_of(last.lines[0]) == indent == indent_of(line) \
                    and C_TYPE_LINE.match(last.lines[0].strip()) and C_NAME_LINE.match(line.strip()):
                starts = False  # GNU style: `static void XMLCALL` then `endElement(void *data) {`; a member's too
                # (`  std::vector<int>` then `  items() const`: session 41's fuzz saw its type line a member alone)
        if starts and blocks and blocks[-1].lines and indent_of(line) == indent and (
                GOES_ON.match(line.strip()) or CASE.match(blocks[-1].lines[0].strip()) and sum(
                    1 if CASE.match(x.strip()) else -(x.strip() == "esac") for x in blocks[-1].lines) > 0):
            starts = False  # a shell statement's `then`, `do`, `else` and the arms of its `case`, and Ruby's `else`
        if not starts and blocks and blocks[-1].lines and indent_of(line) == indent and line.lstrip().startswith("}") \
                and indent_of(blocks[-1].lines[0]) == indent and CLOSER.match(blocks[-1].lines[-1]) \
                and indent_of(blocks[-1].lines[-1]) == indent and brace_delta(blocks[-1].lines) <= 0:
            starts = True  # C++'s `}  // namespace` after a function it does not close (a probe, session 40: shown
            # with the function, the model saw a namespace's end without its start)
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
            m = DEF.match(line)  # GNU's style indents a class under its `template <...>` line
            if m and (indent_of(line) == indent or len(block.lines) > 1 and all(map(TEMPLATE.match, block.lines[:-1]))):
                block.name = m.group(1)
    for block in blocks:  # C++'s `namespace a {` over unindented code holds nothing: a line, not a definition
        if block.name and NAMESPACE.match(block.lines[0]) and child_indent(block) is None:
            block.name = None
        elif block.name is None and indent == 0 and block.lines:
            block.name = c_function(block)
    return blocks


STRING_OPENS = re.compile(r"(?:^|[^\w`'\"\\])\s*[rRbBuUfF]{0,2}(\"\"\"|''')")


def in_strings(lines: list[str]) -> set[int]:
    """The indices of the lines between the first and the last of a triple-quoted string that closes: a string left
    open to the end (the model's output cut short, a docstring's closing line lost) holds nothing, so the file's
    blocks stay, and a closing line at the margin is a block of its own, which a merge can put back."""
    odd = {q: [k for k, line in enumerate(lines) if line.count(q) % 2] for q in ('"' * 3, "'" * 3)}
    odds = set(odd['"' * 3]) | set(odd["'" * 3])
    inside: set[int] = set()
    k = 0
    while k < len(lines):
        quote = opened_string(lines[k]) if k in odds else None
        at = bisect.bisect_right(odd[quote], k) if quote else 0
        if quote and at < len(odd[quote]):  # the next line that holds an odd number of them closes it
            end = odd[quote][at]
            inside.update(range(k + 1, end))  # not its closing line: lost, it is a block of its own to put back
            k = end
        k += 1
    return inside


def opened_string(line: str) -> str | None:
    """The triple quote of a string the line opens and leaves open: one whose quotes follow no word, quote or
    backtick (a docstring; after `SQL = ` or `+ rf`); a Markdown line naming them in backticks opens none."""
    m = STRING_OPENS.search(line)
    return m[1] if m and line[m.start(1):].count(m[1]) % 2 else None


def c_function(block: Block) -> str | None:
    """The name a C, C++, Go or shell function defines at the top level (`static int def(FILE *source, FILE *dest)`
    then `{` ... `}`, `int Box::size() const {`, Go's `func (s *Server) Start() error {`, `usage() {`), else None:
    told by its braced body, so a call (`main()`), a declaration (`int f(void);`) or a line of prose is none."""
    top = 1 if len(block.lines) > 1 and TEMPLATE.match(block.lines[0]) else 0
    first = block.lines[top]
    if len(block.lines) > top + 1 and C_TYPE_LINE.match(first):  # the type on a line of its own
        first = first.rstrip() + " " + block.lines[top + 1]
    m = C_FUNCTION.match(first) or GO_METHOD.match(first) or CONSTRUCTOR.match(first) or SHELL_FUNCTION.match(first)
    last = next((line for line in reversed(block.lines) if not is_blank(line)), "")
    opens = first.rstrip().endswith("{") or any(line.strip() == "{" for line in block.lines[1:4]) or bool(
        CONSTRUCTOR.match(first)) and any(line.rstrip().endswith("{") for line in block.lines[1:8])  # initializers
    if not m or not opens or indent_of(last) != 0 or not last.lstrip().startswith("}"):
        return None
    return m.group(2) if m.re is CONSTRUCTOR else m.group(1) if m.re is SHELL_FUNCTION else \
        m.group(1).rsplit("::", 1)[-1]


# A shell function: `valid_tool() {`, `use_ext_cmd () {`, `init_browser_path()` over its `{` (a probe, session 42:
# git's scripts had no function named, and a rename showed the whole file)
SHELL_FUNCTION = re.compile(r"^([A-Za-z_][\w.:-]*)\s*\(\s*\)\s*\{?\s*(?:#.*)?$")


# C++'s constructor or destructor outside its class: `Registry::Registry(int n) : n_(n) {`, `A::graph::graph(`,
# `Foo<T>::~Foo()`; no return type, so no `C_FUNCTION` (a fuzz, session 42: `A::graph::graph` named `A`, and an
# instruction naming any of A's methods took it too)
CONSTRUCTOR = re.compile(r"^(?:[A-Za-z_]\w*(?:<[^()]*>)?::)*(?P<cls>[A-Za-z_]\w*)(?:<[^()]*>)?::(~?(?P=cls))\s*\(")


def bare_decorator(line: str) -> bool:
    """A line that is a decorator and nothing else (`@property`, `@app.route("/")`): the definition under it
    belongs to it. A decorated field (TypeScript's `@Input() userId: string;`) is a member of its own. A Rust
    attribute on a line of its own (`#[cfg(test)]` over `mod tests`, `#[derive(Debug)]`) is one too: apart, a
    removal of the item it marks looked like a statement of its own lost (session 28)."""
    if RUST_ATTRIBUTE.match(line):  # at the top level only: a field's `#[serde(...)]` merged as its own member before
        return not line[:1].isspace()
    if TEMPLATE.match(line):
        return True
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


# A constant whose value is a function: `const check = (url) => {`, `export const run = async function (`
FUNCTION_CONST = re.compile(r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=\s*(?:async\s+)?"
                            r"(?:function\b|\([^()]*\)\s*(?::[^=]*)?=>|[\w$]+\s*=>)")


def defined_names(blocks: list[Block]) -> list[str]:
    """The names the blocks define: their definitions', and a constant's whose value is a function, which JavaScript
    writes for one as often (a probe, session 42: "convert generateDirListing to an async arrow function assigned to
    a const" was refused, the function read as gone from the output)."""
    consts = (FUNCTION_CONST.match(b.lines[0]) if b.lines and not b.name else None for b in blocks)
    return [n for b, m in zip(blocks, consts, strict=True) if (n := b.name or (m[1] if m else None))]


def child_indent(block: Block) -> int | None:
    """Indentation of the body of a block (its first deeper non-blank line), if any."""
    if not block.lines:  # the blank lines a file starts with
        return None
    base = indent_of(block.lines[0])
    top, end = header_size(block), header_end(block)
    start = end if end > top else 1  # past a header split over lines (`class C\n    : public Base {`)
    braces = any(line.rstrip().endswith("{") for line in block.lines[:max(2, start)])  # a C++ class's `public:`
    # is no member: Google's style indents it one space, its members two (a probe, session 40: all one member)
    body = (line for line in block.lines[max(1, start):] if not is_blank(line))
    for line in body:
        if indent_of(line) > base and not (braces and ACCESS.match(line.strip())):
            break
    else:
        return None
    first = before = line
    if braces:  # a first member one column deeper than the next ones (`   use ApiProxyAccess;` then `  /**` in a PHP
        # class: 31 of a fuzz's wrong merges, session 41): the next member that starts after a statement's end
        for line in itertools.islice(body, 12):
            if base < indent_of(line) < indent_of(first) and before.rstrip().endswith((";", "}", "{", "*/")):
                return indent_of(line)
            before = line
    return indent_of(first)


def member_head(line: str) -> re.Match | None:
    """A braced class member's definition line: `size() {`, or an expression-bodied one (`fun f() = ...`)."""
    return METHOD.match(line) or METHOD_EXPR.match(line)


def header_size(block: Block) -> int:
    """Lines up to and including the definition line (decorators come first); for a named block the line
    that defines its name (a method `size() {` too)."""
    for k, line in enumerate(block.lines):
        m = DEF.match(line) or (member_head(line) if block.name else None)
        if m and block.name in (None, m.group(1)):
            return k + 1
    return 1


def header_end(block: Block) -> int:
    """Lines up to and including the one that opens a named class's body where its header goes on over more lines
    (`class SmallVector\n    : public Base<T> {`, Java's `extends`/`implements` lines, Kotlin's constructor); else
    `header_size`. A fuzz, session 41: such a class read as unbraced, its `: public` line as its first member, so
    it was shown whole and a member written back with the class's first line alone replaced the whole class."""
    top = header_size(block)
    if not block.name or top > len(block.lines):
        return top
    head = block.lines[top - 1]
    if not CONTAINER.match(head) or head.rstrip().endswith(("{", ";", ":")):
        return top
    before, depth = head.strip(), bracket_depth(head)
    for k in range(top, min(len(block.lines), top + 8)):
        line = block.lines[k].strip()
        if not line or not (HEADER_GOES_ON.match(line) or before.endswith((",", "(", "<", ":"))) \
                or (indent_of(block.lines[k]) <= indent_of(head) and not line.startswith((")", ":", ","))):
            return top  # not its header's next line: a member under a header whose `{` was lost
        depth += bracket_depth(line)
        if line.endswith("{") or line.endswith(":") and depth == 0 and "(" in head:
            return k + 1  # a Python class's bases over lines end at `):` (platform's `uname_result(`, whose
            # cut-down view kept its first line alone: a fuzz, session 44)
        if line.endswith((";", "}")):
            return top
        if block.lines[k + 1:k + 2] and block.lines[k + 1].strip() == "{":
            return k + 2  # then Allman's `{` (GNU's style)
        before = line
    return top


# How a class header's next line goes on: C++'s `: public Base`, Java's and TypeScript's `extends`/`implements`,
# Rust's and Swift's `where`, Scala's `with`, the rest of a list the line above left open
HEADER_GOES_ON = re.compile(r"(?:[:,)(<]|extends\b|implements\b|where\b|with\b|permits\b)")


def braced(block: Block) -> bool:
    """A class whose header opens a brace (JavaScript, TypeScript, Java, C++): its methods need no keyword
    (`size() {`), and its closing brace is its last line."""
    top = header_size(block)
    header = block.lines[top - 1] if block.lines else ""
    after = next((line for line in block.lines[top:] if not is_blank(line)), "")
    end = header_end(block)
    return bool(CONTAINER.match(header)) and (header.rstrip().endswith("{") or after.strip() == "{"
                                              or end > top and block.lines[end - 1].rstrip().endswith("{"))


def members(lines: list[str], indent: int, methods: bool) -> list[Block]:
    """A class body cut into its members at `indent`; with `methods` (a braced class) a member such as
    `size() {` or `@Input() get size() {` is named too."""
    blocks = split_blocks(lines, indent)
    for b in blocks if methods else []:
        k = next((k for k, line in enumerate(b.lines) if not DECORATOR.match(line) and not TEMPLATE.match(line)),
                 len(b.lines))
        first = b.lines[k] if k < len(b.lines) else ""
        if b.name is None and k + 2 < len(b.lines) and C_TYPE_LINE.match(first.strip()) \
                and indent_of(b.lines[k + 1]) == indent:  # GNU's type line above the member's name line
            k, first = k + 1, b.lines[k + 1]
        m = member_head(first) if b.name is None and indent_of(first) == indent else None
        if m is None and b.name is None and indent_of(first) == indent and k + 1 < len(b.lines) \
                and b.lines[k + 1].strip() == "{":
            m = METHOD_ALLMAN.match(first)
        if m:
            b.name = m.group(1)
    return blocks


def class_members(block: Block) -> list[Block] | None:
    """A named class's (struct's, `impl`'s, namespace's) body cut into its members; None for any other block. The
    one reading of "a class and its members" that focus, drift and the whole-file checks share."""
    if not block.name or not block.lines:
        return None
    inner, top = child_indent(block), header_size(block)
    if inner is None or not CONTAINER.match(block.lines[top - 1]):
        return None
    return members(block.lines[header_end(block):], inner, braced(block))


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


def ending(block: Block) -> int:
    """How many lines end a class: its closing brace(s) (`closing`) or, in Ruby and Lua, its `end` at the header's
    indentation (a probe, session 38: a Ruby class cut down for focus lost its `end`, and the model's own was
    merged in after the one method it was shown, closing the class there)."""
    top = header_size(block)
    if braced(block):
        return closing(block.lines, top)
    last = block.lines[-1] if len(block.lines) > top else ""
    return 1 if END_LINE.match(last) and indent_of(last) == indent_of(block.lines[top - 1]) else 0


def opening(block: Block) -> int:
    """Lines up to and including the one that opens a class's body: its header, and Allman's `{` on a line of its
    own (C#, PHP: a class shown cut down without it read as no class at all)."""
    top = header_end(block)
    k = next((k for k in range(top, len(block.lines)) if not is_blank(block.lines[k])), None)
    return k + 1 if k is not None and block.lines[k].strip() == "{" else top


def defining_line(block: Block) -> str:
    """The line that defines a block's name (after its decorators), stripped: tells a C++ class from its forward
    declaration (`class DenseMapIterator;`), which `signature` does not."""
    return block.lines[header_size(block) - 1].strip() if block.lines else ""


def signature(block: Block) -> tuple:
    """A definition's decorators, keywords and name: tells a property's getter from its setter (`@x.setter`,
    JavaScript's `set x(v) {`), `@overload` stubs from their implementation, and a Rust `struct S` from its
    `impl S`."""
    top = header_size(block)
    header = block.lines[top - 1] if block.lines else ""
    m = DEF.match(header) or (member_head(header) if block.name else None)
    keywords = tuple(w for w in header[:m.start(1)].split() if w not in ("export", "async")) if m else ()
    return (block.name, tuple(x.strip() for x in block.lines[:top - 1]), keywords)


def params(block: Block) -> str:
    """A definition's parameter list as its line writes it (spacing aside): tells overloads apart (`add(int k)`,
    `add(String s)`); "" when the line does not close it."""
    header = block.lines[header_size(block) - 1] if block.lines else ""
    m = re.search(r"\(([^()]*)\)", header[header.find(block.name) if block.name and block.name in header else 0:])
    return " ".join(m.group(1).split()) if m else ""


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


# A typed declaration's name: `private static final int MAX_POINTS = 1000;`, `private const decimal TaxRate = 0.2m;`,
# `const val MAX = 3`, `private val limit: Int = 5` (modifiers and a type, generic or not, before it; Kotlin's and
# TypeScript's type after it)
# (C++'s `static constexpr std::size_t kMaxNames = 256;`, `const char* name_;`)
FIELD = re.compile(r"^[ \t]*(?:[\w$]+(?:::[\w$]+)*(?:<[^=]*>)?(?:\[\])*\??[\s*&]+)+([A-Za-z_$][\w$]*)\s*"
                   r"(?::\s*[^=;{]+)?"
                   r"(?:=(?![=>])|;|\{\s*(?:get|set|init)\b)")  # or none: `private int count;`, `string Sku { get; }`


# A property (C#'s `public int Count => _items.Count;`, `public int Count { get { ... } }`, Kotlin's `val count: Int
# get() = ...`): a probe (session 40) made a method one as asked and was refused, the method read as dropped;
# focused, the property was merged beside the method, `Count` declared twice
PROPERTY = re.compile(r"^[ \t]*(?:[\w$.<>\[\],?]+\s+)+([A-Za-z_]\w*)\s*(?::\s*[\w.<>?]+\s*)?"
                      r"(=>|\{\s*(?:get|set|init)\b|$)")
ACCESSOR = re.compile(r"^[ \t]*(?:(?:public|private|protected|internal)\s+)?(?:get|set|init)\b")


def property_name(lines: list[str]) -> str | None:
    """The name a property declares (`PROPERTY`), else None: on a line of its own (`public int Count`, `val count:
    Int`) only with `{` and an accessor, or Kotlin's `get()`, below it (a docstring's line ends in a word too)."""
    m = PROPERTY.match(lines[0]) if lines else None
    if not m:
        return None
    if m.group(2):
        return m.group(1)
    rest = [line for line in lines[1:3] if line.strip() != "{"]
    return m.group(1) if rest and ACCESSOR.match(rest[0]) else None


def field_name(line: str) -> str | None:
    """The name an assignment or a typed declaration on this line gives a value to."""
    m = FIELD.match(line)
    return target(line) or (m.group(1) if m and not keyword.iskeyword(m.group(1)) and not any(
        keyword.iskeyword(w) and w not in ("global", "nonlocal") for w in line.split()[:1]) else None)


TRAILING_COMMENT = re.compile(r"\s+(?://|#)[^\"'`]*$")  # a comment after code, no quote in it


def head(block: Block) -> str:
    """What a statement is about: the name an assignment or a declaration gives a value to (a class's `private
    static final int MAX = 1000;` changed to 2000 is the same field: a member focused alone was merged back beside
    its old line), else its first line (an enum member's trailing comma, which it gains when one is added after it,
    aside)."""
    if not block.lines:  # the blank lines a file starts with
        return ""
    first = TRAILING_COMMENT.sub("", block.lines[0].strip())  # `dev; // the device`: `dev;`
    name = field_name(first) or field_name(first.rstrip(",;"))  # `int count;` by its `;`; `Green,` without its comma
    return "=" + name if name else first.rstrip(",;")


def import_names(block: Block) -> set[str]:
    """The names an import statement binds (Python's `import a.b as c`, `from m import x, y`; JavaScript's
    `import d, { a, b as c } from "m"`), empty for anything else, for a `from __future__` import (it binds no name
    the code uses, yet the file may need it) and for one whose names cannot be read: a review (session 28) found
    every ES import taken for unused, since it read `{ a` and `b } from "m"` as names, and another (session 34)
    found an ES import never counted as defining its names, so a merge could drop one still in use."""
    text = " ".join(line.split("#", 1)[0].strip() for line in block.lines)
    if re.match(r"from\s+__future__\b", text):
        return set()
    js = re.match(r"import\s+(?:type\s+)?(.+?)\s+from\s+['\"]", text)
    if js:
        parts = re.split(r"[{},]", js[1])
        names = {p.split(" as ")[-1].strip().removeprefix("* as ").strip() for p in parts if p.strip()}
    elif imports := imported(block):
        names = {p.split(" as ")[-1].strip().split(".")[0] for p in imports[1]}
    else:
        return set()
    return names if names and all(IDENT.fullmatch(n) for n in names) else set()


# JavaScript's destructuring declaration: `const { a, b: c = 1 } = require("m")`, `let [x, ...rest] = pair`
DESTRUCTURED = re.compile(r"^\s*(?:export\s+)?(?:const|let|var)\s*[{\[]([^{}\[\]]*)[}\]]\s*=")


def defines(block: Block) -> set[str]:
    """The names a top-level statement defines: what an import binds, an assignment's targets (a destructuring
    declaration's names too: a fuzz, session 35, had `const { a } = require(...)` dropped while `a` was in use)."""
    if imported(block):
        return import_names(block)
    if block.lines and (m := DESTRUCTURED.match(block.lines[0])):
        parts = (part.split(":")[-1].split("=")[0].strip().removeprefix("...") for part in m[1].split(","))
        return {p for p in parts if IDENT.fullmatch(p)}
    name = target(block.lines[0]) if block.lines else None
    return {n for n in (name or "").split(",") if n and "." not in n}


PAIRING_LIMIT = 5_000  # line pairs compared in one rewritten stretch (a 400-line rewrite took 15 s unbounded)


LONG_LINE = 2_000  # characters: past this, two lines' likeness is the share of their four-character pieces


def line_likeness(a: str, b: str) -> float:
    """difflib's ratio of two lines' text, 0 where its cheap upper bounds already fall below 0.6. For lines longer
    than `LONG_LINE` (minified code, a data line), whose ratio costs the square of the length (a helper measured a
    one-character edit of a 100 KB minified JavaScript file at 217 s of checks, session 30), the share of their
    four-character pieces in common: a one-character edit keeps nearly all of them, two unrelated lines of the
    same characters (hex data) almost none, where the bound on shared characters called those alike (a review)."""
    a, b = a.strip(), b.strip()
    if max(len(a), len(b)) > LONG_LINE:
        pieces_a, pieces_b = _pieces(a), _pieces(b)
        total = sum(pieces_a.values()) + sum(pieces_b.values())
        return 2 * sum((pieces_a & pieces_b).values()) / total if total else 1.0
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < 0.6 or sm.quick_ratio() < 0.6:
        return 0.0
    return sm.ratio()


def _pieces(text: str, size: int = 4) -> Counter:
    return Counter(text[k:k + size] for k in range(max(1, len(text) - size + 1)))


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


def labelled(block: Block) -> str | None:
    """What a block is called: its definition's name, an assignment's target (`const api = {`), or the name after
    `class` (`export abstract class Repo {`)."""
    if block.name or not block.lines:
        return block.name
    m = re.search(r"\bclass\s+([A-Za-z_$][\w$]*)", block.lines[0])
    return target(block.lines[0]) or (m.group(1) if m else None)


def notes_above(blocks: list[Block], i: int) -> int:
    """The index of the first comment block right above block `i` (no blank line between), `i` when none: a
    comment on a definition (`# a helper`, a JSDoc `/** ... */`, a licence's `/*` ... `*/` whose lines a split
    cuts apart) goes where the definition goes. Half a block comment is never taken: a definition put above
    the other half would be commented out."""
    k = i
    while k > 0 and not blocks[k - 1].blank and blocks[k - 1].lines and blocks[k - 1].name is None:
        lines = blocks[k - 1].lines
        if all(LINE_COMMENT.match(line) or ATTRIBUTE.match(line) for line in lines):
            if k - 1 == 0 and HEADER.search("".join(lines)):
                break
            k -= 1
            continue
        if not lines[-1].rstrip().endswith("*/"):
            break
        j = k - 1  # the block that opens the comment, through blocks with no blank line between
        while j > 0 and not blocks[j].lines[0].lstrip().startswith("/*") and not blocks[j - 1].blank \
                and blocks[j - 1].name is None and blocks[j - 1].lines:
            j -= 1
        if not blocks[j].lines[0].lstrip().startswith("/*") or (j == 0 and HEADER.search("".join(joined(blocks[:k])))):
            break
        k = j
    return k
