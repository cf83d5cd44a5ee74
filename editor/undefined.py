"""Names a Python (or Go) edit starts to use that nothing in the file defines: a note for the user, not a refusal.

Asked to add type hints, the bundled model wrote `FrozenSet[str]` into a module that never imported it (a real-file
probe, 2026-11): the file still parses, so nothing else catches it, and it fails at import. The model may also
mean a name the user is about to add elsewhere, so the edit stands; the user is told which names to check. The
test over-counts what each scope can see (`unbound`), so a note names only what no binding could reach; a star
import turns it off.
"""

from __future__ import annotations

import ast
import builtins
import re

from editllm.editor.asks import asked_definitions
from editllm.editor.languages import LANGUAGES, PYTHON
from editllm.editor.source import python_tree
from editllm.editor.wholefile import GO_NOT_CODE, go_imports, go_names

KNOWN = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                              "__builtins__", "__path__", "__annotations__", "__dict__", "__class__", "__qualname__",
                              "__module__", "__debug__", "reveal_type", "__cached__",
                              "_", "WindowsError"}  # gettext.install's `_`; Windows' own exception on any system


FUNCTION = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
STAR = "*"  # what `_binds` returns for `from m import *`: anything may be bound


def _binds(node: ast.AST) -> set[str]:
    """The names one node binds: an assignment's target, a definition, a parameter, an import (`STAR` in it for a
    star import), a `global`, an exception handler's or a pattern's name."""
    if isinstance(node, ast.Name):
        return set() if isinstance(node.ctx, ast.Load) else {node.id}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {STAR if alias.name == STAR else (alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    if type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):  # Python 3.12's `def f[T]()`
        return {node.name}
    return set()


def _scope(node: ast.AST, into_functions: bool, into_classes: bool = True) -> set[str]:
    """What the code under `node` binds; a function or class met on the way binds its name, and its body counts
    only `into_functions` (`into_classes`); a `global` anywhere under it binds too (a function's scope holds its
    nested functions' names: an over-count, which is safe)."""
    bound = _binds(node)
    for child in ast.iter_child_nodes(node):
        if (isinstance(child, FUNCTION) and not into_functions) or (isinstance(child, ast.ClassDef)
                                                                   and not into_classes):
            bound |= _binds(child)
            bound |= {name for sub in ast.walk(child) if isinstance(sub, ast.Global) for name in sub.names}
        else:
            bound |= _scope(child, into_functions, into_classes)
    return bound


def unbound(text: str) -> set[str] | None:
    """Names the text reads where nothing it can see binds them; None when it does not parse or has a star
    import. A read inside a function sees what that function and the functions around it bind, and the
    module; in a class body, what the class binds too (not in its methods: `return LIMIT` for a class attribute
    fails); elsewhere, the module. The module's names are everything bound outside functions and classes, and
    every `global`; a function's, everything bound under it, its nested functions' too: an over-count, so a name
    is reported only when no binding could reach it. A name used in one function and
    bound only in another (`v` in `hls_to_rgb`, a probe's edit of colorsys.py) is reported; the first
    version, which counted any binding anywhere in the file, missed it."""
    tree = python_tree(text)
    if tree is None:
        return None
    module = _scope(tree, into_functions=False, into_classes=False)
    if any(STAR in _binds(node) for node in ast.walk(tree)):
        return None
    missing: set[str] = set()

    def visit(node: ast.AST, seen: set[str], around: set[str] | None = None) -> None:
        """`seen`: what the code at `node` sees; `around`: for a method, what its class body sees, where its
        decorators, defaults and annotations are evaluated."""
        if isinstance(node, FUNCTION):
            args = node.args
            outside = [*getattr(node, "decorator_list", []), *args.defaults, *(d for d in args.kw_defaults if d),
                       *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                                args.kwarg) if a is not None and a.annotation is not None),
                       *([node.returns] if getattr(node, "returns", None) else [])]
            for part in outside:
                visit(part, seen if around is None else around)
            inside = seen | _scope(node, into_functions=True)
            for part in node.body if isinstance(node.body, list) else [node.body]:
                visit(part, inside)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in seen:
            missing.add(node.id)
        if isinstance(node, ast.ClassDef):  # its body sees what it binds; its methods' bodies do not
            inner = seen | _scope(node, into_functions=False)
            for child in ast.iter_child_nodes(node):
                visit(child, seen, inner) if isinstance(child, FUNCTION) else visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, seen)

    visit(tree, module)
    return missing - KNOWN


# Go's standard packages whose names a file seldom gives a variable (not `path`, `bytes`, `url`, `rand`); `log`, the
# package "add logging" uses, is declared as a variable (`log := zap.S()`, `var log = ...`, a parameter) where a file
# has one, which the rule reads (no note over 2,098 Go files on the machine, golang/tools among them: session 30).
# Each with the import path `goimports.fix_imports` adds for it, as goimports does.
GO_PACKAGES = {"fmt": "fmt", "errors": "errors", "strings": "strings", "strconv": "strconv", "os": "os", "io": "io",
               "ioutil": "io/ioutil", "sync": "sync", "atomic": "sync/atomic", "context": "context", "http": "net/http",
               "json": "encoding/json", "filepath": "path/filepath", "regexp": "regexp", "bufio": "bufio",
               "reflect": "reflect", "utf8": "unicode/utf8", "unicode": "unicode", "math": "math", "time": "time",
               "exec": "os/exec", "signal": "os/signal", "log": "log", "slog": "log/slog", "sort": "sort",
               "slices": "slices", "maps": "maps", "hex": "encoding/hex", "base64": "encoding/base64",
               "binary": "encoding/binary", "sha256": "crypto/sha256", "cmp": "cmp", "csv": "encoding/csv",
               "gzip": "compress/gzip"}


def _go_unimported(text: str) -> set[str]:
    """The standard packages a Go file uses (`fmt.Errorf`) without importing them by that name."""
    named = {name for alias, path in go_imports(text.splitlines(keepends=True)) for name in go_names(alias, path)}
    code = GO_NOT_CODE.sub(" ", text)  # a package doc's examples aside
    used = set(re.findall(r"(?<![\w.])([a-z][a-z0-9]*)\.[A-Z]", code)) & GO_PACKAGES.keys()
    return {name for name in used - named  # declared as a variable: `json :=`, `var json`, a parameter, `var (` lines
            if not re.search(rf"\b{name}\s*(?::=|,[\w\s,]*:=)|\b(?:var|const)\s+{name}\b|[(,]\s*{name}\s+[*\w\[]"
                             rf"|[(,]\s*{name}\s*[,)]"  # `func handle(log, audit *zap.Logger)`, passed as a value
                             rf"|^[ \t]*{name}[ \t]*(?:=|[ \t]+[\w.*\[])", code, re.M)}


def newly_unbound(path: str, old: str, new: str) -> list[str]:
    """The names `new` reads and binds nowhere that `old` did not already read unbound (sorted); [] for files
    other than Python and Go, or when either text cannot be judged. In Go, the standard packages it uses without
    importing them: a real-model probe (session 29) had "wrap the errors" write `fmt.Errorf` and "add an error"
    write `errors.New` into files that imported neither, focused on the one function, exit 0 and no note."""
    if path.endswith(".go") and old != new:
        return sorted(_go_unimported(new) - _go_unimported(old))
    if not path.endswith(PYTHON) or old == new:
        return []
    before, after = unbound(old), unbound(new)
    if before is None or after is None:
        return []
    return sorted(after - before)


def defines(text: str, name: str) -> bool:
    """Whether a file's text defines `name` at a line's start (`def`, `class`, `function`, `func`, `fn`, `const`,
    `let`, `var`, or `name =`): another file of a multi-file edit may hold what the instruction asks for (a probe,
    session 37, was told a test file lacked `scheduler`, which sched.py defines)."""
    word = re.escape(name)
    return re.search(rf"^\s*(?:(?:async\s+)?def|class|function|func|fn|const|let|var)\s+{word}\b|^{word}\s*=", text,
                     re.M) is not None


def missing_asked(path: str, new: str, instruction: str) -> list[str]:
    """The definitions the instruction asks to add ("add a method remaining() to Chunk") that the edited Python
    text does not define anywhere; [] when it cannot be judged. A real probe: the model wrote a line about
    `remaining()` into the module docstring and no method, exit 0 with nothing said."""
    asked = asked_definitions(instruction)
    tree = python_tree(new) if asked and path.endswith(PYTHON) else None
    if tree is None:
        return []
    defined = {name for node in ast.walk(tree) for name in _binds(node)}  # `remaining = property(...)` too
    return [name for name in asked if name not in defined]


# "In parse_args, ...": the clause's subject, written as code (a `_`, `.`, `#`, `::`, a digit, an inner capital, `()`
# or backticks: not "In general," nor "In Python,")
SUBJECT = re.compile(r"(?:^|[.;!?]\s+)in\s+(?:the\s+)?(?:(?:function|method|class)\s+)?(`?)([A-Za-z_$#][\w$.#:]*?)"
                     r"\1(\(\))?(?:\s+(?:function|method|class))?\s*[,:]", re.I)


def absent_subjects(text: str, instruction: str) -> list[str]:
    """The names an instruction edits "in" ("In parse_args, add a check ...") that the file has nowhere: a probe
    (session 38) asked getopt.py, which has no parse_args, and the model edited two other functions and added a line
    that never runs, exit 0 without a word."""
    found = []
    for m in SUBJECT.finditer(instruction):
        name, code = m[2].rstrip(".:#"), bool(m[1] or m[3])
        if not (code or re.search(r"[_$#.\d]|::|[a-z][A-Z]", name)):
            continue
        parts = [p for p in re.split(r"\.|#|::", name) if p]
        if parts and "." + parts[-1].lower() in LANGUAGES:  # "In registry.cpp, ...": the file, not a name in it
            continue
        if parts and any(re.search(rf"(?<![\w$]){re.escape(p)}(?![\w$])", text) is None for p in parts):
            found.append(name)
    return found
