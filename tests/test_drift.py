"""Definitions an edit changes that nothing ties to what the instruction names (`editor.drift`): a note."""

from __future__ import annotations

import pytest
from editllm.editor.drift import drifted, drifted_note, dropped_lines, named

INDEX = """const lsStreamConcurrency = 5

function lsStream (cache) {
  return bucketEntries(cache, { concurrency: lsStreamConcurrency })
}

async function find (cache, key) {
  const entries = await bucketEntries(cache)
  return entries.reduce((latest, next) => next.key === key ? next : latest, null)
}

function bucketEntries (cache, opts) {
  return read(cache, opts)
}
"""


def test_a_definition_rewritten_beside_a_constant_change_is_noted():
    """Session 34's big-file probe: asked to change lsStreamConcurrency from 5 to 10, the model also rewrote `find()`
    (a change of behaviour), exit 0 and no word."""
    asked = "Change lsStreamConcurrency from 5 to 10."
    right = INDEX.replace("= 5", "= 10")
    drift = right.replace("const entries = await bucketEntries(cache)", "const entries = await lsStream(cache)")
    assert drifted("entry-index.js", INDEX, right, asked) == []
    assert drifted("entry-index.js", INDEX, drift, asked) == ["find"]
    assert drifted_note("entry-index.js", ["find"]) == ("entry-index.js: note: the edit also changes find, which the "
                                                      "instruction does not speak of; check it should change")
    # what a named thing uses is tied to it: a change there may be the fix (a bug told by its symptom)
    helper = right.replace("return read(cache, opts)", "return read(cache, { ...opts, fresh: true })")
    assert drifted("entry-index.js", INDEX, helper, asked) == []
    # naming the definition, or naming nothing of the file, is no drift
    assert drifted("entry-index.js", INDEX, drift, asked + " And use lsStream in find.") == []
    assert drifted("entry-index.js", INDEX, drift, "Modernise this file.") == []


def test_what_counts_as_named():
    text = "def day_of_year(d):\n    return 1\n\n\nclass Writer:\n    def pool(self):\n        A = []\n"
    assert named("day_of_year is off by one", text) == {"day_of_year"}
    assert named("In Writer.pool, add a docstring", text) == {"pool"}  # the method, not every method of Writer
    assert named("add a docstring to the pool method", text) == {"pool"}
    assert named("Use a list comprehension for `A`.", text) == {"A"}
    assert named("the pool is slow", text) == {"pool"}  # a definition of the file, however plain its name
    # ... but not as a clause's verb (a review, session 34: "add type hints" named a `def add`)
    assert named("pool the results. Then pool them again", text) == set()
    assert named("speed up pool", text) == {"pool"}
    assert named("the writer's output is a mess", text) == set()  # everyday words, "writer" no name here
    assert named("fix the class", text) == set() and named("a bug", text) == set()
    limit = "LIMIT = 5  # must stay small\ntimeout = 3\n"
    assert named("the timeout variable", limit) == {"timeout"}  # an assignment's target, next to a kind word
    assert named("Every function must have a docstring", limit) == set()  # a word after "function", no name


def test_a_rule_that_names_nothing_of_the_file_gives_no_note():
    """A pre-commit rule ("Every function must have a docstring") touches every function, none by name."""
    old = "# values must be checked\n\n\ndef f(x):\n    return x\n\n\ndef g(y):\n    return y\n"
    new = old.replace("):\n", '):\n    """Doc."""\n')
    assert drifted("m.py", old, new, "Every function must have a docstring.") == []


def test_prose_is_not_judged():
    old, new = "# Title\n\nSome text.\n", "# Title\n\nOther text.\n"
    assert drifted("README.md", old, new, "Fix `Title`") == []


WORKFLOW = """jobs:
  rustfmt:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Check formatting
        run: cargo fmt --check
  test:
    strategy:
      matrix:
        include:
          - build: arm
            target: armv7-unknown-linux-musleabihf
    steps:
      - name: Set up QEMU
        uses: docker/setup-qemu-action@v3
        with:
          platforms: arm
"""


def test_a_data_file_value_changed_under_keys_the_instruction_does_not_speak_of_is_noted():
    """Session 34's big-file probe: asked to add a timeout to ripgrep's rustfmt job, the model changed the armv7
    build target of another job's matrix (a broken build), exit 0."""
    asked = "In the rustfmt job, add timeout-minutes: 10 under runs-on."
    right = WORKFLOW.replace("    runs-on: ubuntu-latest\n", "    runs-on: ubuntu-latest\n    timeout-minutes: 10\n")
    wrong = right.replace("musleabihf", "musleabi")
    assert drifted("ci.yml", WORKFLOW, right, asked) == []
    assert drifted("ci.yml", WORKFLOW, wrong, asked) == ["jobs.test.strategy.matrix.include.target"]
    # a step taken out goes with its `with:` lines; a key named anywhere above a line ties it; nothing named: no note
    dropped = WORKFLOW.split("      - name: Set up QEMU")[0]
    assert drifted("ci.yml", WORKFLOW, dropped, "Drop the `Set up QEMU` step.") == []
    target = WORKFLOW.replace("musleabihf", "musleabi")
    assert drifted("ci.yml", WORKFLOW, target, "Fix the test job's target") == []
    assert drifted("ci.yml", WORKFLOW, wrong, "Fix the test job's target") == ["jobs.rustfmt.timeout-minutes"]
    assert drifted("ci.yml", WORKFLOW, WORKFLOW.replace("@v4", "@v5").replace("@v3", "@v4"), "bump every action") == []


def test_toml_keys_are_read_by_their_table():
    cargo = ('[package]\nname = "grep-pcre2"\nversion = "0.1.10"  #:version\nauthors = ["A"]\n'
             'description = """\nUse PCRE2.\n"""\n')
    one_line = cargo.replace('"""\nUse PCRE2.\n"""', '"Use PCRE2."')
    assert drifted("Cargo.toml", cargo, one_line, "Put the description on one line") == []
    # a probe (session 28): the same request also lost the release tooling's `#:version` marker
    assert drifted("Cargo.toml", cargo, one_line.replace("  #:version", ""), "Put the description on one line") == [
        "package.version"]


def test_ties_reach_down_a_long_call_chain():
    """The tie closure reads each definition once (a review, session 34: 5.7 s on a 5,000-deep chain, level by
    level): the end of a long chain from the named function is tied, a lone changed function is not."""
    n = 300
    old = "".join(f"def f{k}(x):\n    return f{k + 1}(x)\n\n\n" for k in range(n)) + f"def f{n}(x):\n    return x\n"
    old += "\n\ndef lone():\n    return 0\n"
    new = old.replace("    return x\n", "    return x + 1\n").replace("return 0", "return 1")
    assert drifted("a.py", old, new, "fix f0") == ["lone"]


def test_a_multiline_toml_value_and_a_yaml_list_item_are_read_whole():
    """A review (session 34): the lines of a TOML array were read as the table's own, so "sort the dependencies"
    was noted as changing `project`; a YAML step's `run:` line is named by the step's first line."""
    toml = '[project]\nname = "x"\ndependencies = [\n  "rich",\n  "attrs",\n]\n\n[tool.ruff]\nline-length = 100\n'
    arm = toml.replace('"rich",\n  "attrs"', '"attrs",\n  "rich"')
    assert drifted("pyproject.toml", toml, arm, "sort the dependencies") == []
    assert drifted("pyproject.toml", toml, arm.replace("100", "120"), "sort the dependencies") == [
        "tool.ruff.line-length"]
    run = WORKFLOW.replace("cargo fmt --check", "cargo fmt --all --check")
    assert drifted("ci.yml", WORKFLOW, run, "make the Check formatting step cover every crate") == []
    assert drifted("ci.yml", WORKFLOW, run, "In the test job, pin QEMU to v3.2") == ["jobs.rustfmt.steps.run"]


def test_a_line_an_addition_takes_out_is_noted():
    """A fuzz (session 35): a whole-file output put a new statement in the place of `exports.parsePatch =
    parsePatch;`, and a real-model distillation set has "add logging to redent" drop `from ._text import FoldedCase`:
    one line lost, below the deletion checks' runs of five, exit 0 and no word. An instruction that only asks for an
    addition has a line it takes out noted; a signature put on one line, a comment reworded, or any instruction that
    asks for a change is not judged."""
    from editllm.editor.drift import dropped_lines, dropped_note

    text = '"use strict";\nexports.parsePatch = parsePatch;\n\nfunction parsePatch(s) {\n  return s;\n}\n'
    lost = text.replace("exports.parsePatch = parsePatch;", "const VERSION = 2;")
    assert dropped_lines("parse.js", text, lost, "add a VERSION constant") == [1]
    assert dropped_note("parse.js", text, [1]) == (
        "parse.js: note: the edit also takes out line 2 ('exports.parsePatch = parsePatch;'), which the instruction, "
        "asking only for an addition, does not ask to go; check it should")
    added = text.replace("exports.parsePatch = parsePatch;", "exports.parsePatch = parsePatch;\nconst VERSION = 2;")
    assert dropped_lines("parse.js", text, added, "add a VERSION constant") == []
    assert dropped_lines("parse.js", text, lost, "replace the export with a VERSION constant") == []
    py = "def run_model(\n    model,\n    data,\n):\n    # run it\n    return model(data)\n"
    typed = "def run_model(model: Model, data: list) -> list:\n    # run the model\n    return model(data)\n"
    assert dropped_lines("m.py", py, typed, "add type annotations to run_model") == []


def test_the_session_notes_a_line_an_addition_takes_out(tmp_path, monkeypatch, scripted_lm):
    from editllm.api.session import EditSession

    monkeypatch.chdir(tmp_path)
    text = '"use strict";\nexports.parsePatch = parsePatch;\n\nfunction parsePatch(s) {\n  return s;\n}\n'
    (tmp_path / "parse.js").write_text(text)
    out = text.replace("exports.parsePatch = parsePatch;", "const VERSION = 2;")
    notes: list[str] = []
    EditSession(scripted_lm(out + "```\n"), focus=False, log=notes.append).edit(["parse.js"], "add a VERSION constant")
    assert any("takes out line 2 ('exports.parsePatch = parsePatch;')" in note for note in notes), notes


DOCKERFILE = '''FROM python:3.11-slim
WORKDIR /app
COPY . .

ENV PORT=8000

EXPOSE 8000

HEALTHCHECK --interval=30s \\
    CMD curl -fsS http://localhost:8000/healthz || exit 1

USER app
CMD ["gunicorn", "app:main"]
'''
HEALTHCHECK = "HEALTHCHECK --interval=30s \\\n    CMD curl -fsS http://localhost:8000/healthz || exit 1\n\n"
WITHOUT_HEALTHCHECK = DOCKERFILE.replace(HEALTHCHECK, "")


def test_a_line_a_removal_takes_out_beside_what_it_asks_to_go_is_noted():
    """A probe (session 35): "remove the HEALTHCHECK" also took out a Dockerfile's `EXPOSE 8000`, exit 0: any removal
    word turned the deletion checks off, and the lines check skipped a file no fence tag names. A line outside the
    blocks holding a word of what is to go is noted; an import only the removed code used, a line written twice,
    or a removal whose words no line holds ("the last query") are not."""
    from editllm.editor.drift import dropped_lines, dropped_note

    instruction = "remove the HEALTHCHECK"
    assert dropped_lines("Dockerfile", DOCKERFILE, WITHOUT_HEALTHCHECK, instruction) == []
    lost = WITHOUT_HEALTHCHECK.replace("EXPOSE 8000\n\n", "")
    assert dropped_lines("Dockerfile", DOCKERFILE, lost, instruction) == [6]
    assert dropped_note("Dockerfile", DOCKERFILE, [6], instruction) == (
        "Dockerfile: note: the edit also takes out line 7 ('EXPOSE 8000'), which the instruction does not ask to go; "
        "check it should")
    assert dropped_lines("Dockerfile", DOCKERFILE, lost, "remove the last step") == []  # no line holds its words
    assert dropped_lines("Dockerfile", DOCKERFILE, lost, "remove the HEALTHCHECK and simplify the rest") == []
    py = ("import math\nimport os\n\n\ndef clamp(x):\n    return math.floor(x)\n\n\n"
          "def main():\n    print(os.getcwd())\n    return 1\n")
    removed = "import os\n\n\ndef main():\n    print(os.getcwd())\n    return 1\n"
    assert dropped_lines("a.py", py, removed, "remove the clamp function") == []  # its import went with it
    assert dropped_lines("a.py", py, removed.replace("    print(os.getcwd())\n", ""), "remove clamp") == [9]
    twice = "def clamp(x):\n    return x\n\n\ndef keep(x):\n    return x\n"
    assert dropped_lines("b.py", twice, "def keep(x):\n    return x\n", "delete clamp") == []


def test_a_removal_written_as_commented_out_lines_takes_them_out(tmp_path, monkeypatch, scripted_lm):
    """The same probe: the model wrote the HEALTHCHECK back behind `# `. Asked for removal, the lines go (and the gap
    they leave stays one blank line), with a note; asked to comment it out, or commenting out lines no word of the
    instruction speaks of, the output stands."""
    from editllm.api.session import EditSession
    from editllm.editor.commented import uncomment_removals
    from editllm.editor.source import split_lines

    commented = DOCKERFILE.replace("HEALTHCHECK --interval", "# HEALTHCHECK --interval").replace(
        "    CMD curl", "#     CMD curl")
    old, new = split_lines(DOCKERFILE), split_lines(commented)
    assert uncomment_removals(old, new, "remove the HEALTHCHECK") == (split_lines(WITHOUT_HEALTHCHECK), [8, 9])
    assert uncomment_removals(old, new, "comment out the HEALTHCHECK") == (new, [])
    assert uncomment_removals(old, new, "remove the USER line") == (new, [])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    notes: list[str] = []
    session = EditSession(scripted_lm(commented + "```\n"), focus=False, log=notes.append)
    [edit] = session.edit(["Dockerfile"], "remove the HEALTHCHECK")
    assert edit.new_text == WITHOUT_HEALTHCHECK
    assert "Dockerfile: note: the model commented out lines 9-10 where the instruction asks for removal; taken out" \
        in notes, notes


def test_lines_between_two_of_a_removal_go_with_it():
    from editllm.editor.drift import dropped_lines

    text = ("FROM python AS builder\nWORKDIR /build\n\nCOPY requirements.txt ./\n"
            "RUN pip install -r requirements.txt\n\nRUN pip wheel --wheel-dir /build/wheels .\n\n"
            "FROM python AS runtime\nCOPY --from=builder /wheels /wheels\n")
    runtime = "FROM python AS runtime\nCOPY --from=builder /wheels /wheels\n"
    assert dropped_lines("Dockerfile", text, runtime, "remove the build stage") == []
    assert dropped_lines("Dockerfile", text, runtime.replace("FROM python AS runtime\n", ""),
                         "remove the build stage") == [8]


JAVA = '''package shop;

public class OrderService {
    private final Map<Long, Order> orders = new HashMap<>();

    public OrderService() {
    }

    public Order findOrder(long id) {
        return orders.get(id);
    }

    public boolean cancelOrder(long id) {
        return orders.remove(id) != null;
    }
}
'''


def test_a_member_of_a_class_the_edit_changes_unasked_is_noted():
    """A Java or C# file is one class: a method changed beside the one asked for went unnoted, the class as a whole
    mentioning the asked name. Members are judged each (`Class.member`); naming the class ties them all, and a tied
    member ties its class's constructor (a heldout case's "two carts share their items" is fixed in `__init__`)."""
    both = JAVA.replace("orders.get(id)", "orders.getOrDefault(id, null)").replace("!= null", "== null")
    assert drifted("OrderService.java", JAVA, both, "make findOrder return null for an unknown id") == [
        "OrderService.cancelOrder"]
    assert drifted("OrderService.java", JAVA, both, "in OrderService, make findOrder return null") == []
    py = ("class Cart:\n    def __init__(self, lines=[]):\n        self.lines = lines\n\n    def add(self, x):\n"
          "        self.lines.append(x)\n\n    def size(self):\n        return len(self.lines)\n")
    fixed = py.replace("lines=[]):\n        self.lines = lines", "lines=None):\n        self.lines = list(lines or [])")
    assert drifted("cart.py", py, fixed, "whatever I add to one cart shows up in the other") == []
    assert drifted("cart.py", py, fixed.replace("len(self.lines)", "len(self.lines) + 0"),
                   "whatever I add to one cart shows up in the other") == ["Cart.size"]


def test_a_member_whose_lost_lines_hold_a_word_of_the_instruction_is_not_noted():
    """A probe (session 36): "Remove the AuditLog dependency entirely: ... and every audit call" took
    `$this->audit->record(...)` out of `store`, noted as a change the instruction does not speak of (it names no
    `AuditLog` there). Lines taken out that hold a word of the instruction speak to it; lines added do not (logging
    added to a second method, asked for the first, says "log" too)."""
    php = ("<?php\nclass UserController\n{\n    public function __construct(private AuditLog $audit)\n    {\n    }\n\n"
           "    public function store($data)\n    {\n        $this->audit->record('user.created');\n"
           "        return $data;\n    }\n\n    public function show($id)\n    {\n        return $id;\n    }\n}\n")
    new = php.replace("    public function __construct(private AuditLog $audit)\n    {\n    }\n\n", "").replace(
        "        $this->audit->record('user.created');\n", "")
    assert drifted("c.php", php, new, "Remove the AuditLog dependency: the constructor and every audit call.") == []
    logged = JAVA.replace("return orders.get(id);", "log.debug(\"find\");\n        return orders.get(id);").replace(
        "return orders.remove(id) != null;", "log.debug(\"cancel\");\n        return orders.remove(id) != null;")
    assert drifted("OrderService.java", JAVA, logged, "add debug logging to findOrder") == ["OrderService.cancelOrder"]


def test_a_narrating_comment_beside_the_lines_a_removal_commented_out_goes_with_them():
    """A probe (session 36): asked to remove a Swift enum case, the model wrote `// Remove the badStatus case` and
    the `throw` of it behind `//`. Both go; a narrating comment alone (nothing commented out) stays."""
    from editllm.editor.commented import uncomment_removals
    from editllm.editor.source import split_lines

    old = split_lines("func f(code: Int) throws {\n    if code != 200 {\n        throw E.badStatus(code)\n    }\n}\n")
    new = split_lines("func f(code: Int) throws {\n    if code != 200 {\n        // Remove the badStatus case\n"
                      "        // throw E.badStatus(code)\n    }\n}\n")
    assert uncomment_removals(old, new, "Remove the badStatus case from E.") == (
        split_lines("func f(code: Int) throws {\n    if code != 200 {\n    }\n}\n"), [2])
    alone = split_lines("func f(code: Int) throws {\n    if code != 200 {\n        // Removed the badStatus case\n"
                        "    }\n}\n")
    assert uncomment_removals(old, alone, "Remove the badStatus case from E.") == (alone, [])


def test_what_a_removal_names_ends_with_its_clause_and_leaves_out_where_from():
    """The second probe: "Remove the prune_backups call from main and disable the restart_service step" counted `main`
    and `restart_service` as asked away; the model's commented-out `restart_service` (the "disable") and `main "$@"`
    were taken out, and the script no longer ran."""
    from editllm.editor.commented import uncomment_removals
    from editllm.editor.drift import removal_words
    from editllm.editor.source import split_lines

    assert removal_words("Remove the prune_backups call from main and disable the restart_service step.") == {
        "prune_backups", "call"}
    assert removal_words("Remove X from C and the Y() method") == {"x", "y"}
    old = split_lines('main() {\n  prune_backups\n  restart_service\n}\n\nmain "$@"\n')
    new = split_lines('main() {\n  # restart_service\n}\n\nmain "$@"\n')
    instruction = "Remove the prune_backups call from main and disable the restart_service step."
    assert uncomment_removals(old, new, instruction) == (new, [])


def test_a_go_import_the_removal_left_unused_is_not_noted():
    """The second probe: "Remove the handleStats method and its route." had `goimports.fix_imports` drop the unused
    `"encoding/json"` (with its own note) and the removal note call that line an unasked loss."""
    from editllm.editor.drift import dropped_lines

    old = ('package s\n\nimport (\n\t"encoding/json"\n\t"net/http"\n)\n\nfunc handleStats(w http.ResponseWriter) {\n'
           '\tjson.NewEncoder(w).Encode(1)\n}\n\nfunc handleHealth(w http.ResponseWriter) {\n\tw.WriteHeader(200)\n}\n')
    new = ('package s\n\nimport (\n\t"net/http"\n)\n\n'
           'func handleHealth(w http.ResponseWriter) {\n\tw.WriteHeader(200)\n}\n')
    assert dropped_lines("s.go", old, new, "Remove the handleStats method.") == []


def test_a_line_lost_inside_the_class_a_removal_speaks_of_is_noted():
    """The second probe: "Remove all console.log calls" took the calls out of a class and two lines of another
    method's logic with them, unnoted (the whole class held the word). Lines holding what goes, their statements'
    deeper lines, and definitions that went whole are asked; the rest is noted."""
    from editllm.editor.drift import dropped_lines

    js = ("class Cart {\n  add(item) {\n    console.log('add',\n      item);\n    const found = this.find(item);\n"
          "    if (found) found.qty += 1;\n    else this.items.push(item);\n  }\n\n  clear() {\n"
          "    console.log('clear');\n    this.items = [];\n  }\n}\n")
    right = js.replace("    console.log('add',\n      item);\n", "").replace("    console.log('clear');\n", "")
    assert dropped_lines("cart.js", js, right, "Remove all console.log calls.") == []
    lost = right.replace("    if (found) found.qty += 1;\n    else this.items.push(item);\n", "")
    assert dropped_lines("cart.js", js, lost, "Remove all console.log calls.") == [5, 6]


def test_a_method_added_after_the_last_one_leaves_that_one_unchanged():
    """A probe (session 37): asked to add `update` to a PHP repository, the model appended it after `countAll`, and
    the note said the edit "also changes UserRepository.countAll": the class's closing brace was read as part of its
    last member."""
    php = ("<?php\nclass UserRepository\n{\n    public function find(int $id): ?array\n    {\n        return null;\n"
           "    }\n\n    public function countAll(): int\n    {\n        return 0;\n    }\n}\n")
    added = php.replace("        return 0;\n    }\n}\n", "        return 0;\n    }\n\n"
                        "    public function update(int $id): bool\n    {\n        return true;\n    }\n}\n")
    assert drifted("UserRepository.php", php, added, "Add a method update(int $id): bool") == []
    changed = added.replace("return 0;", "return 1;")
    assert drifted("UserRepository.php", php, changed, "Add a method update(int $id): bool") == \
        ["UserRepository.countAll"]


def test_an_sql_statement_removed_whole_is_asked_to_its_semicolon():
    """A probe (session 37): "Remove the order_totals view" took out the view and was told it "also takes out" its
    `SELECT`, `FROM`, `JOIN` and `GROUP BY` lines: each unindented SQL line is a block of its own."""
    from editllm.editor.drift import dropped_lines

    sql = ("CREATE INDEX idx_o ON orders (id);\n\nCREATE VIEW order_totals AS\nSELECT o.id, SUM(i.n) AS n\n"
           "FROM orders o\nJOIN items i ON i.order_id = o.id\nGROUP BY o.id;\n\nCREATE TABLE t (id INT);\n\nCOMMIT;\n")
    view = ("CREATE VIEW order_totals AS\nSELECT o.id, SUM(i.n) AS n\nFROM orders o\n"
            "JOIN items i ON i.order_id = o.id\nGROUP BY o.id;\n\n")
    assert dropped_lines("m.sql", sql, sql.replace(view, ""), "Remove the order_totals view") == []
    noted = sql.replace(view, "-- the view is gone\n\n")  # the model's own comment in its place
    assert dropped_lines("m.sql", sql, noted, "Remove the order_totals view") == []
    also = sql.replace(view, "").replace("CREATE TABLE t (id INT);\n\n", "")
    assert dropped_lines("m.sql", sql, also, "Remove the order_totals view") == [8]


def test_a_dotted_name_asked_away_is_itself_not_its_receiver():
    """A probe (session 37): "remove all log.debug and log.info calls" also took out a `log.warn` and a `log.error`,
    and the note named neither: `log.debug` was read as the words `log` and `debug` (the dot ended the clause, and
    "and log" read as another verb), so every `log.` line counted as asked."""
    from editllm.editor.drift import dropped_lines, removal_words

    assert removal_words("remove all log.debug and log.info calls") >= {"log.debug", "log.info"}
    assert "log" not in removal_words("remove all log.debug and log.info calls")
    lua = ('local log = require("log")\n\nlocal function run(job)\n  log.debug("run " .. job.kind)\n'
           '  log.warn("slow")\n  local ok = job.fn()\n  log.info("done")\n  return ok\nend\n')
    asked = lua.replace('  log.debug("run " .. job.kind)\n', "").replace('  log.info("done")\n', "")
    assert dropped_lines("q.lua", lua, asked, "remove all log.debug and log.info calls") == []
    more = asked.replace('  log.warn("slow")\n', "")
    assert dropped_lines("q.lua", lua, more, "remove all log.debug and log.info calls") == [4]
    assert dropped_lines("q.lua", lua, more, "remove the log calls") == []  # every `log` line is asked then


DOCKER = ("FROM python:3.12 AS build\nRUN apt-get install -y gcc curl\nRUN pip wheel -w /w .\n\nFROM python:3.12-slim\n"
          "RUN apt-get install -y libpq5 curl\nCOPY --from=build /w /w\nHEALTHCHECK CMD curl -f http://localhost/\n")


def test_a_dockerfile_stage_the_instruction_does_not_name_is_noted_when_changed():
    """A probe (session 37): "remove curl from the build stage packages" took curl out of the runtime stage too, where
    the HEALTHCHECK still runs it, exit 0 (a Dockerfile was not read for drift at all)."""
    both = DOCKER.replace("gcc curl", "gcc").replace("libpq5 curl", "libpq5")
    asked = "remove curl from the build stage packages"
    assert drifted("Dockerfile", DOCKER, both, asked) == ["stage 2 (FROM python:3.12-slim, line 5)"]
    assert drifted("Dockerfile", DOCKER, DOCKER.replace("gcc curl", "gcc"), asked) == []
    assert drifted("app.dockerfile", DOCKER, both, "remove curl from the final stage") == ["the build stage"]
    assert drifted("Dockerfile", DOCKER, both, "remove curl everywhere") == []  # no stage named
    assert drifted("Dockerfile", DOCKER, both.replace("AS build", "AS builder"), asked) == []  # stages renamed


def test_a_member_removed_asks_its_own_lines_away_not_its_class():
    """A probe (session 37): "Remove the __bool__ method of TopologicalQueue" also took out the class's
    `__class_getitem__ = classmethod(GenericAlias)`, exit 0 and no note: the method's `def` line, asked and taken,
    asked its whole class away with it."""
    from editllm.editor.drift import dropped_lines

    py = ("class Queue:\n    def __init__(self):\n        self.n = 0\n\n"
          "    def __bool__(self):\n        return True\n\n    __class_getitem__ = classmethod(list)\n")
    gone = py.replace("    def __bool__(self):\n        return True\n\n", "")
    assert dropped_lines("s.py", py, gone, "Remove the __bool__ method of Queue") == []
    also = gone.replace("\n    __class_getitem__ = classmethod(list)\n", "\n")
    assert dropped_lines("s.py", py, also, "Remove the __bool__ method of Queue") == [7]
    assert dropped_lines("s.py", py, "", "Remove the Queue class") == []


def test_a_class_whose_name_reads_as_a_verb_asks_no_rework():
    """"Remove the Sorter class" asks for a removal: a class named like a verb (sort) made it a rework, whose lost
    lines no check then read (a review, session 37); the verb itself still counts ("Sort the exports")."""
    from editllm.editor.drift import dropped_lines

    old = ("class Sorter {\n  run () { return 1 }\n}\n\nfunction keep (a) {\n  check(a)\n  return 2\n}\n\n"
           "module.exports = { keep }\n")
    new = "function keep (a) {\n  return 2\n}\n\nmodule.exports = { keep }\n"
    assert dropped_lines("sorter.js", old, new, "Remove the Sorter class.") == [5]  # `check(a)`, not asked
    assert dropped_lines("sorter.js", old, new, "Remove the Sorter class. Sort the exports.") == []


def test_a_method_removed_from_a_class_in_a_namespace_is_no_dropped_line():
    """A probe (session 39): "Remove the RemoveLine method of OrderProcessor" in a C# namespace, removed right, was
    noted as lines the instruction does not ask to go: the method's span was read one level deep only."""
    from editllm.editor.drift import dropped_lines

    cs = ("namespace Shop\n{\n    public class OrderProcessor\n    {\n        public int Count()\n        {\n"
          "            return 0;\n        }\n\n        public bool RemoveLine(string sku)\n        {\n"
          "            int removed = 1;\n            return removed > 0;\n        }\n    }\n}\n")
    after = cs.replace("\n        public bool RemoveLine(string sku)\n        {\n            int removed = 1;\n"
                       "            return removed > 0;\n        }\n", "")
    assert dropped_lines("a.cs", cs, after, "Remove the RemoveLine method of OrderProcessor.") == []
    partly = cs.replace("            int removed = 1;\n", "")  # a line of it, not asked: noted
    assert dropped_lines("a.cs", cs, partly, "Remove the RemoveLine method of OrderProcessor.") != []


REGISTRY_CPP = ('#include "registry.h"\n\nnamespace plugins {\n\nbool Registry::Register(const std::string& name) {\n'
                "    names_.push_back(name);\n    return true;\n}\n\n"
                "bool Registry::Unregister(const std::string& name) {\n    names_.erase(name);\n    return true;\n}\n\n"
                "std::size_t Registry::Size() const {\n    return names_.size();\n}\n\n}  // namespace plugins\n")


def test_a_cpp_method_named_with_its_class_and_the_file_is_asked_for():
    """A probe (session 40): "In registry.cpp, change Registry::Unregister ..." printed that the file has no
    "registry.cpp" and that the edit changes Unregister, which the instruction does not speak of: both false."""
    from editllm.editor.undefined import absent_subjects

    instruction = "In registry.cpp, change Registry::Unregister so that it returns false when name is empty."
    new = REGISTRY_CPP.replace("const std::string& name) {\n    names_.erase",
                               "const std::string& name) {\n    if (name.empty()) return false;\n    names_.erase")
    assert new != REGISTRY_CPP and drifted("registry.cpp", REGISTRY_CPP, new, instruction) == []
    assert absent_subjects(REGISTRY_CPP, instruction) == []
    assert absent_subjects(REGISTRY_CPP, "In registry.reload_all, skip nullptr.") == ["registry.reload_all"]


POOL_GO = """package pool

import "sync"

type Pool struct {
\tmu    sync.Mutex
\tconns []*Conn
\tshut  bool
}

func (p *Pool) Put(c *Conn) {
\tp.mu.Lock()
\tdefer p.mu.Unlock()
\tp.conns = append(p.conns, c)
}

func (p *Pool) Close() {
\tp.mu.Lock()
\tdefer p.mu.Unlock()
\tp.conns = nil
}

type Conn struct {
\topen bool
}

func (c *Conn) Close() {
\tc.open = false
}
"""


def test_a_method_named_with_its_type_ties_that_method_not_every_method_of_the_type():
    """"Make Pool.Close idempotent" named `Pool` and `Close`, and every method of Pool mentions `Pool` in its
    receiver, so a `Put` the model changed too went unnoted (session 41's leftover). A dotted name that ends in a
    definition of the file names that one; its owner named alone still ties every member."""
    guard = "\tif p.shut {\n\t\treturn\n\t}\n"
    idempotent = POOL_GO.replace("\tp.conns = nil\n", guard + "\tp.shut = true\n\tp.conns = nil\n")
    also_put = idempotent.replace("\tp.conns = append(", guard + "\tp.conns = append(")
    assert drifted("pool.go", POOL_GO, idempotent, "Make Pool.Close idempotent.") == []
    assert drifted("pool.go", POOL_GO, also_put, "Make Pool.Close idempotent.") == ["Put"]
    assert drifted("pool.go", POOL_GO, also_put, "Make Pool.Close idempotent; Put() must refuse after it.") == []
    assert drifted("pool.go", POOL_GO, also_put, "In Pool, make Close idempotent.") == []


RETRY_LOOP = """    for attempt in range(retries):
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
            break
        except FileNotFoundError:
            if attempt == retries - 1:
                raise
            time.sleep(delay)
"""
CONFIG_LOADER = ('''import time
import tomllib


def load_config(path, retries=3, delay=0.5):
    """Read `path`."""
''' + RETRY_LOOP + '''    return data


def describe(config):
    return ", ".join(sorted(config))
''')
ONCE = CONFIG_LOADER.replace(RETRY_LOOP, '    with open(path, "rb") as f:\n        data = tomllib.load(f)\n')


@pytest.mark.parametrize("instruction", [
    "In load_config, remove the retry loop: open the file once and let FileNotFoundError propagate.",
    "In load_config, drop the loop and read the file once.",
])
def test_a_loop_asked_away_by_its_kind_or_its_counter_is_no_line_dropped_unasked(instruction):
    """Session 41's probe: a right edit of "remove the retry loop" was noted as also taking out `for attempt in
    range(retries):`, `if attempt == retries - 1:` and `time.sleep(delay)`: "retry" did not find `retries`, nor
    "loop" a `for`."""
    assert dropped_lines("config_loader.py", CONFIG_LOADER, ONCE, instruction) == []
    lost = ONCE.replace('    return ", ".join(sorted(config))\n', "")  # a line the instruction does not speak of
    assert dropped_lines("config_loader.py", CONFIG_LOADER, lost, instruction) != []
