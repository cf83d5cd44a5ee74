"""Go's package clause and imports in a focused edit: shown to the model, merged back as a set.

Focus shows the model the named functions and the file's imports (`editor.focus`), but Go's imports are an
`import (...)` group that Python's import rules did not read: the model saw `func Load` alone, and asked to
"log the path in Load" wrote `log.Printf` into a file that does not import `log` (it does not build; shown the
whole file, it added `"log"` to the group). Shown the group, the model writes it back with what it adds. The
output's import declarations are not merged as statements (a changed group, read as a new one, was added beside
the old: `fmt` imported twice, which does not build); they are taken as the set the model wants, and the file's
own declarations are rewritten to it. An import the model left out that code it was not shown still uses is put
back, as are blank (`_`) and dot imports, whose uses cannot be seen: nothing the model did not see is lost.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from editllm.editor.blocks import Block, joined, split_blocks
from editllm.editor.wholefile import GO_IMPORT, GO_NOT_CODE, go_imports, go_names

PACKAGE = re.compile(r"^package\s+\w+\s*(?://.*)?$")  # Go's package clause (Java's ends in `;`, and has dots)
CGO = re.compile(r'^import\s+"C"')
DECLARATION = re.compile(r'^import\s*(?:\(\s*(?://.*)?$|(?:[\w.]+\s+)?")')  # `import (` or `import "fmt"`


def is_go(lines: list[str]) -> bool:
    """Whether the text is Go: its first line of code is a package clause (a build tag or comments above)."""
    comment = False
    for line in lines:
        s = line.strip()
        if comment:
            comment = "*/" not in s
        elif s.startswith("/*"):
            comment = "*/" not in s
        elif s and not s.startswith("//"):
            return bool(PACKAGE.match(s))
    return False


def handled(lines: list[str]) -> bool:
    """Whether a focused edit of this text shows and merges its Go imports: Go without cgo (whose `import "C"` must
    stay under the comment above it, alone or in a group, which a merged group would not keep)."""
    return is_go(lines) and not any(path == "C" for _, path in go_imports(lines))


def is_declaration(block: Block) -> bool:
    """A Go import declaration (a group with its lines, or one import on a line)."""
    return bool(block.lines) and DECLARATION.match(block.lines[0]) is not None


def is_header(block: Block) -> bool:
    """The package clause or an import declaration: what a focused Go edit shows above the functions."""
    return bool(block.lines) and (PACKAGE.match(block.lines[0].strip()) is not None or is_declaration(block))


def _specs(blocks: list[Block]) -> list[tuple[tuple[str | None, str] | None, str]]:
    """(import's (alias, path), or None for a comment or blank line; the line as a group writes it) of the lines
    of the declarations: a group's own lines as they are (its comments, the blank line between the standard
    library and the rest), one import on a line as a group's line."""
    out: list[tuple[tuple[str | None, str] | None, str]] = []
    for b in blocks:
        group = _grouped(b)
        for line in b.lines[1:-1] if group else b.lines:
            m = GO_IMPORT.match(line)
            if group:
                out.append(((m[1], m[2]) if m else None, line))
            elif m:
                out.append(((m[1], m[2]), "\t" + line.split("import", 1)[1].strip() + "\n"))
    return out


def _grouped(block: Block) -> bool:
    return block.lines[0].split("//")[0].rstrip().endswith("(")


def _tidy(lines: list[str]) -> list[str]:
    """A group's lines without a blank line at either end or two together (where an import the edit dropped was)."""
    out: list[str] = []
    for line in lines:
        if line.strip() or (out and out[-1].strip()):
            out.append(line)
    return out[:-1] if out and not out[-1].strip() else out


def split_output(lines: list[str]) -> tuple[list[str], list[Block] | None]:
    """The output without its package clause and import declarations, and those declarations (None when it
    wrote none: the file's imports then stay as they are)."""
    blocks = split_blocks(lines, 0)
    decls = [b for b in blocks if is_declaration(b)]
    rest = [b for b in blocks if not is_header(b)]
    return joined(rest), decls or None


def _same_name(a: tuple[str | None, str], b: tuple[str | None, str]) -> bool:
    """Whether two imports bring the same package in under the same name (which Go refuses): the same path, and
    names that may agree (`yaml "gopkg.in/yaml.v3"` and `"gopkg.in/yaml.v3"`), not `y` and `yaml`."""
    return a[1] == b[1] and bool(go_names(*a) & go_names(*b))


def _used(name: str, code: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\.", code) is not None


def merge_imports(old: list[str], merged: list[str], wanted: list[Block]) -> list[str]:
    """`merged` (the file with the model's functions put back, its import declarations still the original's)
    with those declarations rewritten to the imports the model wrote (each package once), plus each original import
    it left out that the file still uses (or whose use cannot be seen: `_`, `.`), where it was. One the edit made
    unused goes after the merge, with those of edits that wrote no imports (`fix_imports`)."""
    old_blocks, blocks = split_blocks(old, 0), split_blocks(merged, 0)
    declared = [b for b in old_blocks if is_declaration(b)]
    old_specs = [(key, line) for key, line in _specs(declared) if key]
    code = _code("".join(joined([b for b in blocks if not is_declaration(b)])))
    lines: list[tuple[tuple[str | None, str] | None, str]] = []
    for key, line in _specs(wanted):
        if key and any(_same_name(key, k) for k, _ in lines if k):
            continue  # a package written twice, or under its name as the file's alias: imported once
        lines.append((key, line))
    if {key for key, _ in lines if key} == {key for key, _ in old_specs}:
        return merged  # the same imports, however the output wrote them: the file's declarations stay as they are
    for k, (key, line) in enumerate(old_specs):
        alias, path = key
        unseen = alias in ("_", ".") or path == "C"  # used for what importing does, or without a name
        have = [spec for spec, _ in lines if spec]
        if any(_same_name(key, spec) for spec in have) or \
                not (unseen or any(_used(n, code) for n in go_names(alias, path))):
            continue  # the file's `y "gopkg.in/yaml.v3"`, still used as `y.`, stays beside the model's `yaml`
        kept = [old_specs[i][0] for i in range(k - 1, -1, -1) if old_specs[i][0] in have]  # its old neighbour
        at = next((i + 1 for i, (spec, _) in enumerate(lines) if kept and spec == kept[0]), 0)
        lines.insert(at, (key, line))
    if not any(spec for spec, _ in lines):
        return joined([b for b in blocks if not is_declaration(b)])
    grouped = any(_grouped(b) for b in wanted + declared)  # else one import a line, as the file and output write them
    text = ["import (\n", *_tidy([line for _, line in lines]), ")\n"] if grouped else \
        ["import " + line.strip() + "\n" for key, line in lines if key]
    first = next((k for k, b in enumerate(blocks) if is_declaration(b)), None)
    if first is None:  # the file imported nothing: after its package clause
        clause = next(k for k, b in enumerate(blocks) if b.lines and PACKAGE.match(b.lines[0].strip()))
        package = blocks[clause]
        return joined(blocks[:clause] + [Block(package.name, package.lines, package.blank or ["\n"]),
                                         Block(None, text, ["\n"])] + blocks[clause + 1:])
    out = [b for k, b in enumerate(blocks) if k == first or not is_declaration(b)]  # in the first one's place
    out[first] = Block(None, text, blocks[first].blank)
    return joined(out)


def _code(text: str) -> str:
    """Go code without its comments, strings and runes: where a package's use counts (a use the edit commented
    out is none, and Go does not build with the import that served it)."""
    return GO_NOT_CODE.sub(" ", text)


def _is_standard(path: str) -> bool:
    return "." not in path.split("/")[0]  # as goimports sorts them: a standard package's path has no domain


Mended = tuple[list[str], list[str], list[str]]  # the file's lines, the import paths added, those dropped


def fix_imports(path: str, old: str, new: list[str], folder: Path | None = None) -> Mended:
    """`new` (the edited Go file's lines) with its imports mended as goimports mends them on save, and the import
    paths added and dropped: an import whose every use the edit took out goes, and a standard package the edit
    newly uses without importing it is added. Go builds neither: asked to "remove the log.Println call", the model
    commented it out and left `"log"` imported; asked to "log the path in Load", it wrote `log.Printf` and left the
    group alone (9 of 47 real-model Go edits, session 30). `folder`: where the file lives, whose other Go files
    (the rest of its package) may declare the name (`var json = jsoniter.Config...`): then nothing is added, as
    goimports reads the package too. Other files come back as they are."""
    if not path.endswith(".go") or not is_go(new):
        return new, [], []
    end = _header_end(new)  # only the file's own declarations: an import line in a template string is text
    head, dropped = _drop_unused(old, new, new[:end])
    if head != new[:end] and head and not head[-1].strip() and end < len(new) and not new[end].strip():
        head = head[:-1]  # the last declaration went from between two blank lines
    lines, added = _add_standard(old, head + new[end:], len(head), folder, PurePosixPath(path).name)
    return (lines, added, dropped) if lines != new else (new, [], [])


def _header_end(lines: list[str]) -> int:
    """Where the package clause and the import declarations after it end (their comments and blank lines with
    them): Go allows imports nowhere else, and a line of a code generator's template may read `import "fmt"`."""
    first = next(k for k, line in enumerate(lines) if PACKAGE.match(line.strip())) + 1
    end, group, comment = first, False, False
    for k in range(first, len(lines)):
        line, s = lines[k], lines[k].strip()
        if group or comment:
            group = group and not s.startswith(")")
            comment = comment and "*/" not in s
            end = k + 1 if not (group or comment) and s.startswith(")") else end
        elif line.startswith("import"):
            group = s.split("//")[0].rstrip().endswith("(")
            end = k + 1
        elif s.startswith("/*"):
            comment = "*/" not in s
        elif s and not s.startswith("//"):
            break
    return end


def _drop_unused(old: str, new: list[str], head: list[str]) -> tuple[list[str], list[str]]:
    """`head` (the package clause and imports of `new`) without each import the file used by one of its names
    (`go_names`) and the edit no longer uses: a blank (`_`) or dot import, or cgo's "C", whose uses cannot be seen,
    stays, as does one the file never used by a name we can tell (a package named unlike its path). A group left
    empty goes, with the blank line after it. So does an import that repeats one above it under the same name
    (Go refuses both): a fragment's pasted group (a real-model probe, session 31: six of its imports twice)."""
    before, after = _code(old), _code("".join(new))
    out: list[str] = []
    dropped: list[str] = []
    group = None  # where the group being read starts in `out`
    gone = 0  # imports dropped from it
    blank = False  # a declaration went from between two blank lines: the second one goes too
    seen: list[tuple[str | None, str]] = []  # the imports kept so far
    for line in head:
        if blank and not line.strip():
            blank = False
            continue
        blank = False
        m = GO_IMPORT.match(line) if group is not None or line.startswith("import ") else None
        unused = m and m[1] not in ("_", ".") and m[2] != "C" and any(_used(n, before) for n in go_names(m[1], m[2])) \
            and not any(_used(n, after) for n in go_names(m[1], m[2]))
        again = m and m[2] != "C" and any(_same_name((m[1], m[2]), key) for key in seen)  # a second group pasted
        if unused or again:
            dropped += [m[2]] if unused and not again and m[2] not in dropped else []
            gone += group is not None
            blank = group is None and bool(out) and not out[-1].strip()
            continue
        seen += [(m[1], m[2])] if m else []
        if line.startswith("import (") and not line.split("//")[0].rstrip().endswith(")"):
            group, gone = len(out), 0
        elif group is not None and line.startswith(")"):
            if gone:
                out[group + 1:] = _tidy(out[group + 1:])
            if gone and not any(GO_IMPORT.match(x) for x in out[group + 1:]):
                del out[group:]  # `import ()` builds, but is nothing a person writes
                group, blank = None, bool(out) and not out[-1].strip()
                continue
            group = None
        out.append(line)
    return out, dropped


def _declared_beside(folder: Path, names: list[str], own: str) -> set[str]:
    """The names a Go file of `folder` other than `own` declares at its top level (`var log = logrus.New()`, a
    `var (...)` group's line, `func json()`): a package's files share those names."""
    out: set[str] = set()
    for other in sorted(folder.glob("*.go"))[:200] if folder.is_dir() else []:
        if other.name == own:
            continue
        try:
            text = other.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out |= {name for name in names  # `var log`, `func json(`, or `\tlog = ...` in a `var (` group
                if re.search(rf"^(?:(?:var|const|type|func)\s+{name}\b|\t{name}(?:[ \t]*=[^=]|[ \t]+[\w*\[]))", text,
                             re.M)}
    return out


def _add_standard(old: str, new: list[str], end: int, folder: Path | None = None,
                  own: str = "") -> tuple[list[str], list[str]]:
    """`new` with an import of each standard package the edit newly uses without importing it, and their paths;
    its declarations are read in `new[:end]` alone.
    Only the packages `undefined.GO_PACKAGES` names (a file seldom gives one of those names to anything else, and
    declaring it is read), each put where gofmt keeps it: sorted into the group's section of standard packages (a
    new section at the group's top when it has none), beside the file's one-import-a-line declarations, or after
    the package clause of a file without imports."""
    from editllm.editor.undefined import GO_PACKAGES, newly_unbound  # undefined reads wholefile, as this module does

    names = newly_unbound("x.go", old, "".join(new))
    if names and folder is not None:
        names = sorted(set(names) - _declared_beside(folder, names, own))
    paths = sorted(GO_PACKAGES[name] for name in names)
    if not paths:
        return new, []
    out = list(new)
    start = next((k for k, line in enumerate(out[:end]) if line.startswith("import (")
                  and not line.split("//")[0].rstrip().endswith(")")), None)  # not `import ()`
    if start is not None:
        close = next((k for k in range(start + 1, end) if out[k].startswith(")")), None)
        if close is None:
            return new, []
        specs = [(k, m[2]) for k in range(start + 1, close) if (m := GO_IMPORT.match(out[k]))]
        indent = re.match(r"[ \t]*", out[specs[0][0]])[0] if specs else "\t"
        sections: list[list[tuple[int, str]]] = [[]]  # the group's imports, in runs a blank line ends
        for k in range(start + 1, close):
            if not out[k].strip():
                sections.append([])
            sections[-1] += [(j, p) for j, p in specs if j == k]
        section = next((run for run in sections if any(_is_standard(p) for _, p in run)), None)
        if section:
            for p in reversed(paths):  # each before the first import of the section that sorts after it
                at = next((k for k, q in section if q > p), section[-1][0] + 1)
                out.insert(at, f'{indent}"{p}"\n')
        else:  # no standard section: one of its own, first (goimports' order)
            out[start + 1:start + 1] = [f'{indent}"{p}"\n' for p in paths] + (["\n"] if specs else [])
        return out, paths
    singles = [k for k, line in enumerate(out[:end]) if DECLARATION.match(line) and not CGO.match(line)]
    if singles:
        out[singles[-1] + 1:singles[-1] + 1] = [f'import "{p}"\n' for p in paths]
        return out, paths
    clause = next(k for k, line in enumerate(out) if PACKAGE.match(line.strip()))
    decl = [f'import "{paths[0]}"\n'] if len(paths) == 1 else ["import (\n", *(f'\t"{p}"\n' for p in paths), ")\n"]
    after = out[clause + 1:clause + 2]
    out[clause + 1:clause + 1] = ["\n", *decl] + ([] if after and not after[0].strip() else ["\n"])
    return out, paths
