"""editor/unfinished.py: a rename done in part, or a removal not made, is pointed out on stderr; the edit stands."""

from __future__ import annotations

import pytest
from editllm.editor.asks import renames
from editllm.editor.unfinished import kept_removals, left_unrenamed, still_used
from test_file_conventions import run

C = ("#include \"ringbuf.h\"\n\n/* rb_count is the number of bytes stored. */\nsize_t rb_count(const ringbuf_t *rb)\n"
     "{\n    return rb->len;\n}\n\nvoid rb_drain(ringbuf_t *rb)\n{\n    while (rb_count(rb) > 0)\n"
     "        rb_pop(rb);\n}\n")
ASK = "Rename the function rb_count to rb_size everywhere, including its call sites."


def test_the_renames_an_instruction_asks_for():
    assert renames(ASK) == [("rb_count", "rb_size")]
    assert renames("rename parse() to parse_args()") == [("parse", "parse_args")]
    assert renames("Rename `foo` as `bar`, and rename x -> y") == [("foo", "bar"), ("x", "y")]
    assert renames("Rename the method to something clearer") == []  # no old name given
    assert renames("add a parameter to parse") == []
    # a kind word after the name (a probe, session 35: "the Bucket type" was read as a rename of `type`)
    assert renames("rename the Bucket type to bucket") == [("Bucket", "bucket")]
    assert renames("rename the members table to patrons") == [("members", "patrons")]
    assert renames("rename the APP variable to BINARY") == [("APP", "BINARY")]
    # two words before the name, and an owner's name before it (a probe, session 42: "the static helper align_up"
    # read as no rename, and the whole file shown)
    assert renames("Rename the static helper align_up to round_up") == [("align_up", "round_up")]
    assert renames("Rename Version._cmp to Version._compare") == [("_cmp", "_compare")]
    assert renames("rename Ring::count to size") == [("count", "size")]


def test_a_word_of_a_string_is_no_use_of_the_old_name():
    """A probe (session 42) renamed the function `quote` and every call, and was told the edit still used `quote`
    in `print("-t: quote tabs")`. A string of words is text; a string that is one name, or an f-string's braces,
    may hold code, and still count."""
    ask = "Rename the function quote to quote_byte and update its call sites."
    old = ("__all__ = ['quote']\n\n\ndef quote(c):\n    return c\n\n\ndef main():\n"
           "    print(\"-t: quote tabs\")\n    print(f\"{quote(1)} is a quote\")\n")
    done = old.replace("def quote(", "def quote_byte(").replace("{quote(1)}", "{quote_byte(1)}").replace(
        "['quote']", "['quote_byte']")
    assert left_unrenamed(old, done, ask) == []
    assert left_unrenamed(old, done.replace("{quote_byte(1)}", "{quote(1)}"), ask) == [("quote", "quote_byte", [10])]
    assert left_unrenamed(old, done.replace("['quote_byte']", "['quote']"), ask) == [("quote", "quote_byte", [1])]


def test_a_call_site_left_with_the_old_name_is_found_and_comments_are_not():
    """A real probe (session 27): the declaration and the definition were renamed, a call in rb_drain was not, so
    the code no longer linked; exit 0 with nothing said."""
    half = C.replace("size_t rb_count(", "size_t rb_size(")
    assert left_unrenamed(C, half, ASK) == [("rb_count", "rb_size", [11])]  # not the comment on line 3
    assert left_unrenamed(C, C.replace("rb_count(", "rb_size("), ASK) == []  # done everywhere
    assert left_unrenamed(C, C, ASK) == []  # no edit: nothing to say


def test_only_uses_of_the_kind_the_edit_renamed_count():
    """Renaming the function `parse` renames bare uses: `ast.parse` is another object's attribute."""
    old = "import ast\n\n\ndef parse(s):\n    return ast.parse(s)\n\n\nprint(parse('x'))\n"
    new = old.replace("def parse(", "def parse_args(").replace("print(parse(", "print(parse_args(")
    assert left_unrenamed(old, new, "rename parse() to parse_args()") == []
    method = "class P:\n    def run(self):\n        return 1\n\n\nP().run()\nP().run()\n"
    half = method.replace("P().run()\nP().run()", "P().start()\nP().run()").replace("def run(", "def start(")
    assert left_unrenamed(method, half, "rename the method run to start") == [("run", "start", [7])]


def test_a_module_function_an_alias_or_a_use_outside_the_asked_scope_is_not_a_miss():
    """A review (session 28) found three notes wrong: `json.load` after the method `load` was renamed, the old
    name kept as an alias as asked, and a local renamed "in mean" only; a miss beside each is still noted."""
    store = ("import json\n\n\nclass Store:\n    def load(self):\n        with open(self.path) as f:\n"
             "            return json.load(f)\n\n    def get(self, key):\n        return self.load()[key]\n")
    renamed = store.replace("def load(", "def fetch(").replace("self.load()", "self.fetch()")
    assert left_unrenamed(store, renamed, "rename the method load to fetch") == []
    caller = store + "\n\nprint(Store().load())\n"
    assert left_unrenamed(caller, renamed + "\n\nprint(Store().load())\n", "rename the method load to fetch") == [
        ("load", "fetch", [13])]  # a call on another receiver, not a module: missed
    parse = "def parse(argv):\n    return argv\n\n\ndef main(argv):\n    return parse(argv)\n"
    alias = parse.replace("def parse(", "def parse_args(").replace("\n\n\ndef main",
                                                                  "\n\n\nparse = parse_args\n\n\ndef main")
    assert left_unrenamed(parse, alias.replace("return parse(", "return parse_args("),
                          "rename parse to parse_args, keeping the old name as an alias") == []
    assert left_unrenamed(parse, alias, "rename parse to parse_args, keeping the old name as an alias") == [
        ("parse", "parse_args", [9])]
    two = ("def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n\n\n"
           "def add(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n")
    scoped = two.replace("total", "acc", 3)
    assert left_unrenamed(two, scoped, "in mean, rename total to acc") == []
    assert left_unrenamed(two, two.replace("total", "acc", 2), "in mean, rename total to acc") == [
        ("total", "acc", [5])]


def test_a_removal_moved_elsewhere_or_left_in_a_comment_is_no_kept_removal():
    """A review (session 28): "remove pytest-cov from the runtime dependencies and add it to the dev extra" moved
    the line, and a call replaced by a comment that names it, were both noted as removals not made."""
    toml = ('[project]\ndependencies = [\n    "requests",\n    "pytest-cov",\n]\n\n'
            '[project.optional-dependencies]\ndev = [\n    "ruff",\n]\n')
    moved = toml.replace('    "pytest-cov",\n', "", 1).replace('    "ruff",\n', '    "ruff",\n    "pytest-cov",\n')
    ask = "remove pytest-cov from the runtime dependencies and add it to the dev extra"
    assert kept_removals(toml, moved, ask) == []
    assert kept_removals(toml, toml.replace('"ruff"', '"ruff>=0.5"'), ask) == ["pytest-cov"]
    run_ = "def run(cfg):\n    old_setup(cfg)\n    start(cfg)\n"
    commented = run_.replace("    old_setup(cfg)\n", "    # old_setup() is gone: start() sets it up now\n")
    assert kept_removals(run_, commented, "delete old_setup() from run") == []


PACKAGE = '{\n  "scripts": {\n    "lint": "eslint js/"\n  },\n  "dependencies": {\n    "lodash": "^4.17.21",\n' \
          '    "react": "^18.2.0"\n  }\n}\n'
SCRIPT = 'Add a "format": "prettier --write js/" script after lint, and remove the lodash dependency.'


def test_a_removal_the_edit_did_not_make_is_found():
    """A real probe (session 27): asked to add a script and remove the lodash dependency, the model added the
    script only, exit 0 with nothing said; two more removals went the same way."""
    added = PACKAGE.replace('"eslint js/"\n', '"eslint js/",\n    "format": "prettier --write js/"\n')
    assert kept_removals(PACKAGE, added, SCRIPT) == ["lodash"]
    assert kept_removals(PACKAGE, added.replace('    "lodash": "^4.17.21",\n', ""), SCRIPT) == []
    code = "def parse(s):\n    print(s)\n    return s\n\n\nparse('x')\n"
    assert kept_removals(code, code.replace("    print(s)\n", ""), "remove the parse function") == ["parse"]
    assert kept_removals(code, "", "remove the parse function") == []
    assert kept_removals(code, code.replace("    print(s)\n", ""), "remove the print calls from parse") == []
    assert kept_removals(code, code, "remove the parse note") == []  # an everyday word, named as nothing in code
    # "the" before a kind word says which thing, it names none (a probe, session 34: "asks to remove the, _format...")
    prose = "def _format(v):\n    \"\"\"Format the version.\"\"\"\n    return v\n"
    assert kept_removals(prose, prose, "Delete the function _format; it is no longer needed.") == ["_format"]
    assert kept_removals(code, code, "add a parse function") == []  # no removal asked
    # what an added thing does is no removal (a probe, session 35); what a removed one does is not either
    todo = "const todos = [];\n\nfunction App() {\n  return todos.length;\n}\n"
    added = todo.replace("  return", "  const clear = () => todos.splice(0);\n  return")
    assert kept_removals(todo, added, "add a Clear completed button that removes the done todos") == []
    assert kept_removals(code, code, "remove the parse function that deletes temp files") == ["parse"]
    # a capitalised name that is a determiner's word is a name mid-sentence (a review, session 34)
    unused = "class Unused:\n    pass\n\n\nclass Used:\n    pass\n"
    assert kept_removals(unused, unused, "remove class Unused") == ["Unused"]


def test_the_cli_notes_a_half_done_rename_and_still_writes_the_diff(tmp_path, model):
    (tmp_path / "ringbuf.c").write_text(C)
    model["text"] = C.replace("size_t rb_count(", "size_t rb_size(") + "```\n"
    res = run(tmp_path, "fix", "ringbuf.c", ASK)
    assert res.exit_code == 0 and "+size_t rb_size(const ringbuf_t *rb)" in res.stdout
    assert "ringbuf.c: note: the instruction renames rb_count to rb_size, but the edit still uses rb_count on " \
        "line 11\n" in res.stderr
    assert "removes rb_count" not in res.stderr  # said once (a probe, session 42: "the edit removes" it too)
    model["text"] = C.replace("rb_count(", "rb_size(") + "```\n"
    res = run(tmp_path, "fix", "ringbuf.c", ASK)
    assert res.exit_code == 0 and "still uses" not in res.stderr


def test_the_cli_notes_a_removal_not_made(tmp_path, model):
    (tmp_path / "package.json").write_text(PACKAGE)
    model["text"] = PACKAGE.replace('"eslint js/"\n', '"eslint js/",\n    "format": "prettier --write js/"\n') + "```\n"
    res = run(tmp_path, "fix", "package.json", SCRIPT)
    assert res.exit_code == 0 and '+    "format": "prettier --write js/"' in res.stdout
    assert "package.json: note: the instruction asks to remove lodash, which the edit leaves in place\n" in res.stderr


def test_a_removed_definition_still_used_is_noted():
    """A real-model probe (session 28): removing `withTmp` from a JavaScript module left
    `module.exports.withTmp = withTmp`, which throws when the module loads."""
    from editllm.editor.unfinished import still_used

    js = ("function keep() {}\n\nfunction withTmp(cb) {\n  return cb()\n}\n\nmodule.exports.keep = keep\n"
          "module.exports.withTmp = withTmp\n")
    removed = js.replace("function withTmp(cb) {\n  return cb()\n}\n\n", "")
    assert still_used(js, removed, "Remove the withTmp function") == [("withTmp", [4])]
    tidy = removed.replace("module.exports.withTmp = withTmp\n", "")
    assert still_used(js, tidy, "Remove the withTmp function") == []
    assert still_used(js, removed, "Fix the keep function") == []  # not asked to go
    assert still_used(js, js, "Remove the withTmp function") == []  # not removed: kept_removals speaks then


def test_a_shell_function_the_edit_removes_unasked_while_lines_still_call_it_is_noted():
    """A real-model probe (session 29): "wrap the repeated _get call in a helper function _technitium_api" had the
    helper written over `_Technitium_account()`, which both functions still call; exit 0 and no word of it."""
    old = ("dns_add() {\n  _account\n  _get \"$url/add\"\n}\n\n"
           "_account() {\n  Server=\"${Server:-$(_readconf Server)}\"\n}\n")
    new = ("dns_add() {\n  _account\n  _api \"$url/add\"\n}\n\n"
           "_api() {\n  _get \"$1\"\n}\n")
    assert still_used(old, new, "wrap the _get call in a helper function _api") == [("_account", [2])]
    assert still_used(old, new.replace("  _account\n", ""), "wrap the _get call in a helper _api") == []
    # a review: a function made one line, moved to a sourced file, or named in a string is no call left behind
    script = 'log_msg() {\n  echo "$1"\n}\nbuild() {\n  make\n}\nlog_msg hi\nbuild\n'
    one_line = script.replace('log_msg() {\n  echo "$1"\n}\n', 'log_msg() { echo "$1"; }\n')
    assert still_used(script, one_line, "make log_msg one line") == []
    sourced = script.replace('log_msg() {\n  echo "$1"\n}\n', ". ./lib.sh\n")
    assert still_used(script, sourced, "move log_msg into lib.sh and source it") == []
    inlined = script.replace("build() {\n  make\n}\n", "").replace("build\n", 'make\necho "build done"\n')
    assert still_used(script, inlined, "inline build") == []


CPP = """class Matrix {
public:
    Matrix(size_t rows) : rows_(rows) {}

    size_t rows() const { return rows_; }

    void print() const {
        std::cout << rows_ << std::endl;
    }

private:
    size_t rows_;
};

int main() {
    Matrix c(2);
    c.print();
    std::cout << c.rows();
}
"""


def test_a_removed_method_still_called_is_noted():
    """A real-model probe (session 37): "Remove the print method and its uses in main" took `Matrix::print` out and
    left `c.print();`, which no longer compiles, exit 0: only top-level definitions were read. C++'s members, which
    `blocks` leaves unnamed, count too."""
    removed = CPP.replace("    void print() const {\n        std::cout << rows_ << std::endl;\n    }\n\n", "")
    assert still_used(CPP, removed, "Remove the print method and its uses in main") == [("print", [13])]
    assert still_used(CPP, removed.replace("    c.print();\n", ""), "Remove the print method") == []
    assert still_used(CPP, removed, "Make rows() inline") == []  # not asked to go
    java = ("public class Stock {\n    public int total() {\n        return 1;\n    }\n\n"
            "    public String summary() {\n        return \"n=\" + total();\n    }\n}\n")
    gone = java.replace("    public int total() {\n        return 1;\n    }\n\n", "")
    assert still_used(java, gone, "Remove the total method") == [("total", [3])]


def test_a_call_of_another_class_or_library_method_is_not_the_removed_one():
    """A fuzz over 164 method removals in npm's classes (session 37): another class's static method of the name
    (`key_1.Key.fromJSON(`, `System.out.print(`), `super`'s, a library's everyday name on another object
    (`this.store.get(`) and an object literal's own method (`load() { }`) are not uses of the removed one."""
    js = ("class Store {\n  get(k) {\n    return this.map.get(k)\n  }\n\n  fromJSON(o) {\n    return o\n  }\n}\n\n"
          "const a = Key.fromJSON(x)\nconst b = file_1.MetaFile.fromJSON(y)\nconst h = { fromJSON() { } }\n"
          "store.get(1)\nsuper.get(2)\n")
    gone = js.replace("  get(k) {\n    return this.map.get(k)\n  }\n\n", "")
    assert still_used(js, gone, "Remove the get method") == []
    gone = js.replace("\n\n  fromJSON(o) {\n    return o\n  }\n", "\n")
    assert still_used(js, gone, "Remove the fromJSON method") == []
    assert still_used(js, gone + "this.fromJSON(z)\nstore.fromJSON(z)\nStore.fromJSON(z)\n",
                      "Remove the fromJSON method") == [("fromJSON", [12, 13, 14])]


CSHARP = """public class OrderProcessor
{
    public void Process(Order o)
    {
        Console.WriteLine("processing " + o.Id);
        Save(o);
    }

    public string Receipt()
    {
        Console.WriteLine("building receipt");
        return "ok";
    }
}
"""


def test_a_removal_of_every_use_made_of_some_is_noted():
    """A real-model probe (session 37): "Remove the Console.WriteLine calls" and "Remove the error_log calls" each
    took out the first of two and left the second, exit 0 without a word (`kept_removals` speaks when none went)."""
    from editllm.editor.unfinished import partly_kept, partly_kept_note

    half = CSHARP.replace('        Console.WriteLine("processing " + o.Id);\n', "")
    assert partly_kept(CSHARP, half, "Remove the Console.WriteLine calls") == [("Console.WriteLine", [10])]
    assert partly_kept_note("a.cs", "Console.WriteLine", [10]) == \
        "a.cs: note: the instruction asks to remove every Console.WriteLine, but the edit leaves line 10"
    both = half.replace('        Console.WriteLine("building receipt");\n', "")
    assert partly_kept(CSHARP, both, "Remove the Console.WriteLine calls") == []
    assert partly_kept(CSHARP, half, "Remove the Console.WriteLine call from Process") == []  # a place narrows it
    assert partly_kept(CSHARP, half, "Remove the first Console.WriteLine") == []  # one, not every
    assert partly_kept(CSHARP, CSHARP, "Remove the Console.WriteLine calls") == []  # none went: kept_removals'
    php = "<?php\nerror_log(\"a\");\n$x = 1;\nerror_log(\"b\");\n"
    assert partly_kept(php, php.replace('error_log("a");\n', ""), "Remove all error_log calls") == [("error_log", [3])]


def test_the_session_notes_a_removal_made_of_some_uses_and_a_method_still_called(tmp_path, monkeypatch, scripted_lm):
    from editllm.api.session import EditSession

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.cs").write_text(CSHARP)
    (tmp_path / "m.cpp").write_text(CPP)
    half = CSHARP.replace('        Console.WriteLine("processing " + o.Id);\n', "")
    removed = CPP.replace("    void print() const {\n        std::cout << rows_ << std::endl;\n    }\n\n", "")
    notes: list[str] = []
    EditSession(scripted_lm(half + "```\n"), focus=False, log=notes.append).edit(
        ["a.cs"], "Remove the Console.WriteLine calls")
    EditSession(scripted_lm(removed + "```\n"), focus=False, log=notes.append).edit(
        ["m.cpp"], "Remove the print method and its uses in main")
    assert "a.cs: note: the instruction asks to remove every Console.WriteLine, but the edit leaves line 10" in notes
    assert "m.cpp: note: the edit removes print, but line 13 still uses it" in notes, notes


def test_a_constant_removed_while_still_read_is_noted():
    """A probe (session 38): "Remove DEBUG and the code that reads it" took the TypeScript constant out and left two
    reads of it, exit 0 without a word (Python's are `editor.undefined`'s)."""
    from editllm.editor.merge import removes_member
    from editllm.editor.unfinished import still_used

    old = "const DEBUG = true\n\nexport const get = async (u) => {\n  if (DEBUG) log(u)\n  return u\n}\n"
    new = "export const get = async (u) => {\n  if (DEBUG) log(u)\n  return u\n}\n"
    assert still_used(old, new, "Remove DEBUG and the code that reads it.") == [("DEBUG", [2])]
    assert still_used(old, new.replace("  if (DEBUG) log(u)\n", ""), "Remove DEBUG and the code that reads it.") == []
    assert not removes_member("__init__", "Remove the __init__ method's MAX_SIDES check in Polygon.__init__")


@pytest.mark.parametrize("method", ["removeLine", "remove_line", "dropLine"])
def test_a_method_named_like_a_removal_asks_nothing_away(method):
    """A probe (session 41): "Make OrderService.removeLine throw IllegalStateException when the service is closed,
    as addLine does" read `removeLine` as the verb remove, and the right edit was told that the instruction asks to
    remove IllegalStateException. A name's `remove` is no verb; the word is."""
    java = (f"class OrderService {{\n    void addLine() {{\n        if (closed) {{\n"
            f"            throw new IllegalStateException(\"closed\");\n        }}\n    }}\n\n"
            f"    boolean {method}() {{\n        return true;\n    }}\n}}\n")
    guard = "        if (closed) {\n            throw new IllegalStateException(\"closed\");\n        }\n"
    guarded = java.replace("        return true;\n", guard + "        return true;\n")
    ask = f"Make OrderService.{method} throw IllegalStateException when the service is closed, as addLine does."
    assert kept_removals(java, guarded, ask) == []
    assert kept_removals(java, guarded, "Remove IllegalStateException from addLine.") == ["IllegalStateException"]


def test_lines_a_rename_alone_does_not_explain_are_noted():
    """A probe (session 42): asked only to rename `rgb_to_hsv` in two files, the model also wrote
    `from colorsys import rgb_to_hsv_triple` into colorsys.py itself, and in glob.py dropped the `fnmatch.` of the
    call it renamed; exit 0, no word. A line that is neither the file's nor one of them renamed is noted."""
    from editllm.editor.unfinished import beyond_rename, beyond_rename_note

    old = ('__all__ = ["rgb_to_hsv"]\n\n\ndef rgb_to_hsv(r, g, b):\n    return r, g, b\n\n\n'
           "def hsv_to_rgb(h, s, v):\n    return h, s, v\n")
    instruction = "rename rgb_to_hsv to rgb_to_hsv_triple (the import and every call)"
    right = old.replace("rgb_to_hsv", "rgb_to_hsv_triple")
    assert beyond_rename(old, right, instruction, True) == []
    assert beyond_rename(old, old.replace("def rgb_to_hsv(", "def rgb_to_hsv_triple("), instruction, True) == []
    junk = right.replace("\n\ndef hsv_to_rgb", "\n# and in palette.py\nfrom colorsys import rgb_to_hsv_triple\n\n"
                                             "def hsv_to_rgb")
    assert beyond_rename(old, junk, instruction, True) == [7, 8]
    assert beyond_rename(old, junk, instruction, False) == []  # more than a rename asked: not judged
    assert beyond_rename_note("colorsys.py", [7, 8]) == (
        "colorsys.py: note: the instruction asks only for a rename, but the edit also writes lines 7, 8, which "
        "rename nothing of the file; check they belong")
    call, bare = "    return fnmatch.filter(names, pattern)\n", "    return filter_names(names, pattern)\n"
    assert beyond_rename(call, bare, "rename filter to filter_names", True) == [1]
