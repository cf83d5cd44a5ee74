"""Names one file's edit removes that another file of the same edit still imports (`editor.crossfile`)."""

from __future__ import annotations

from editllm.editor import crossfile
from editllm.editor.crossfile import imports_from, js_imports, python_imports, still_imported_note
from editllm.editor.source import split_lines


def still_imported(edits: list[tuple[str, str, str]]) -> list:
    """`crossfile.still_imported` over (path, old text, new text)."""
    return crossfile.still_imported([(path, split_lines(old), new) for path, old, new in edits])

REGISTRY = "def path_key(p):\n    return str(p)\n\n\ndef canonical(p):\n    return p\n"
SINGLETON = "from ._registry import (\n    canonical,\n    path_key,\n)\n\n\nclass Lock:\n    key = path_key\n"


def test_a_moved_function_the_other_file_still_imports_is_noted():
    """Session 33's probe: asked to move path_key from _registry.py into _singleton.py and fix the import, the model
    deleted it from _registry.py and never defined it in _singleton.py, which still imported it; exit 0, no word."""
    moved_out = REGISTRY.split("\n\n\n", 1)[1]
    found = still_imported([("filelock/_registry.py", REGISTRY, moved_out),
                            ("filelock/_singleton.py", SINGLETON, SINGLETON)])
    assert found == [("filelock/_singleton.py", 3, "path_key", "filelock/_registry.py")]
    assert still_imported_note(*found[0]) == ("filelock/_singleton.py: note: line 3 imports path_key from "
                                              "filelock/_registry.py, whose edit removes it")
    # done right: the function defined where it went, the import fixed, or nothing removed: no note
    moved_in = SINGLETON.replace("    path_key,\n", "") + "\n\ndef path_key(p):\n    return str(p)\n"
    assert still_imported([("_registry.py", REGISTRY, moved_out), ("_singleton.py", SINGLETON, moved_in)]) == []
    defined_too = SINGLETON + "\n\ndef path_key(p):\n    return str(p)\n"
    assert still_imported([("_registry.py", REGISTRY, moved_out), ("_singleton.py", SINGLETON, defined_too)]) == []
    assert still_imported([("_registry.py", REGISTRY, REGISTRY), ("_singleton.py", SINGLETON, SINGLETON)]) == []
    # the same name from another module is not this file's
    other = SINGLETON.replace("._registry", ".paths")
    assert still_imported([("_registry.py", REGISTRY, moved_out), ("_singleton.py", other, other)]) == []


def test_a_renamed_javascript_export_still_imported_is_noted():
    old = "export function parseArgs(argv) {\n  return argv\n}\n"
    new = old.replace("parseArgs", "parseArgv")
    cli = "import { parseArgs } from './args.js'\n\nparseArgs(process.argv)\n"
    assert still_imported([("src/args.js", old, new), ("src/cli.js", cli, cli)]) == [
        ("src/cli.js", 1, "parseArgs", "src/args.js")]
    required = "const { parseArgs: parse } = require('./args')\n"
    assert still_imported([("args.js", old, new), ("cli.js", required, required)]) == [
        ("cli.js", 1, "parseArgs", "args.js")]


def test_imports_are_read_as_written():
    assert python_imports("from . import x\nfrom .a.b import (\n    c as d,\n    e,\n)\nimport os\n") == [
        (".", 1, "x"), (".a.b", 3, "c"), (".a.b", 4, "e")]
    assert python_imports("def broken(:\n") == []  # a file that does not parse is not read
    assert js_imports("import type {\n  T,\n  U as V\n} from '../types'\nimport x from './x'\n") == [
        ("../types", 1, "T"), ("../types", 1, "U")]
    assert imports_from("pkg/b.py", ".a", "pkg/a.py") and imports_from("b.py", "pkg.a", "pkg/a.py")
    assert imports_from("pkg/b.py", ".", "pkg/__init__.py") and imports_from("b.py", "pkg", "pkg/__init__.py")
    assert not imports_from("pkg/b.py", ".c", "pkg/a.py")
    assert imports_from("src/cli.ts", "./lib", "src/lib/index.ts") and imports_from("cli.ts", "./args.js", "args.ts")
    assert not imports_from("cli.ts", "./argsx", "args.ts")


def test_a_name_the_edit_keeps_offering_or_another_folders_file_is_no_note():
    """A review (session 34): a function turned into an alias, re-exported from where it went, or an `export const`,
    was noted as removed; and a file of another folder with the same name was taken for the imported one."""
    moved_out = REGISTRY.split("\n\n\n", 1)[1]
    for kept in (moved_out + "\n\npath_key = canonical\n", "from ._paths import path_key\n\n\n" + moved_out):
        assert still_imported([("_registry.py", REGISTRY, kept), ("_singleton.py", SINGLETON, SINGLETON)]) == []
    old = "export function parseArgs(argv) {\n  return argv\n}\n"
    cli = "import { parseArgs } from './args.js'\n\nparseArgs(process.argv)\n"
    for kept in ("export const parseArgs = (argv) => argv\n", "function parse(argv) {\n  return argv\n}\n\n"
                 "export { parse as parseArgs }\n"):
        assert still_imported([("src/args.js", old, kept), ("src/cli.js", cli, cli)]) == []
    moved_out_js = "export function other() {}\n"
    assert still_imported([("lib/args.js", old, moved_out_js), ("src/cli.js", cli, cli)]) == []
    assert still_imported([("a/_registry.py", REGISTRY, moved_out), ("b/_singleton.py", SINGLETON, SINGLETON)]) == []
    assert imports_from("pkg/sub/b.py", "..a", "pkg/a.py") and not imports_from("pkg/sub/b.py", ".a", "pkg/a.py")
    assert imports_from("src/ui/cli.ts", "../lib/args", "src/lib/args.ts")
    assert not imports_from("src/ui/cli.ts", "./args", "src/lib/args.ts")
    assert imports_from("b.py", "pkg.a", "src/pkg/a.py") and not imports_from("b.py", "pkg.a", "src/other/a.py")
