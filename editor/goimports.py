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

from editllm.editor.blocks import Block, joined, split_blocks
from editllm.editor.wholefile import GO_IMPORT, go_names

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
    stay alone under the comment above it, which a merged group would not keep)."""
    return is_go(lines) and not any(CGO.match(line) for line in lines)


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


def _used(name: str, code: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\.", code) is not None


def merge_imports(old: list[str], merged: list[str], wanted: list[Block]) -> list[str]:
    """`merged` (the file with the model's functions put back, its import declarations still the original's)
    with those declarations rewritten to the imports the model wrote, plus each original import it left out that
    the file still uses (or whose use cannot be seen: `_`, `.`), where it was, less each one the edit made unused."""
    old_blocks, blocks = split_blocks(old, 0), split_blocks(merged, 0)
    declared = [b for b in old_blocks if is_declaration(b)]
    old_specs = [(key, line) for key, line in _specs(declared) if key]
    code = "".join(joined([b for b in blocks if not is_declaration(b)]))
    before = "".join(joined([b for b in old_blocks if not is_declaration(b)]))
    # an import of the file whose last use the edit took out goes, though the output kept it (Go does not build
    # with it); judged only by a name the file used it by, so a package named unlike its path is never dropped
    stale = {key for key, _ in old_specs if key[0] not in ("_", ".")
             and any(_used(n, before) and not _used(n, code) for n in go_names(*key))}
    lines = [(key, line) for key, line in _specs(wanted) if key not in stale]
    if {key for key, _ in lines if key} == {key for key, _ in old_specs}:
        return merged  # the same imports, however the output wrote them: the file's declarations stay as they are
    have = {key for key, _ in lines if key}
    for k, (key, line) in enumerate(old_specs):
        alias, path = key
        unseen = alias in ("_", ".") or path == "C"  # used for what importing does, or without a name
        if key in have or not (unseen or any(_used(n, code) for n in go_names(alias, path))):
            continue
        kept = [old_specs[i][0] for i in range(k - 1, -1, -1) if old_specs[i][0] in have]  # after its old neighbour
        at = next((i + 1 for i, (spec, _) in enumerate(lines) if kept and spec == kept[0]), 0)
        lines.insert(at, (key, line))
        have.add(key)
    if not have:
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
