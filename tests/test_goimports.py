"""editor/goimports.py: a focused Go edit shows the package clause and imports, and merges the imports back
as a set (what the model adds is added; what it leaves out that other code still uses stays)."""

from __future__ import annotations

from editllm.editor.focus import copy_view, focus_of, merge_focus
from editllm.editor.goimports import is_go

GO = '''// Package config reads settings.
package config

import (
	"os"
	"strings"

	yaml "gopkg.in/yaml.v3"
)

// Config holds the settings.
type Config struct {
	Name string
}

// Load reads the config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	return &c, yaml.Unmarshal(data, &c)
}

func clean(s string) string {
	return strings.TrimSpace(s)
}

func other() int {
	return 1
}

func more() int {
	return 2
}
'''

ASK = "Log the path in Load with log.Printf"


def test_go_focus_shows_the_package_clause_and_the_import_group():
    focus = focus_of(GO, ASK)
    assert focus is not None and focus.names == ("Load",)
    assert focus.text.startswith('package config\n\nimport (\n\t"os"\n\t"strings"\n\n\tyaml "gopkg.in/yaml.v3"\n)\n\n'
                                 "func Load(")
    assert "func clean" not in focus.text and "// Package config" not in focus.text


def test_an_import_the_model_adds_goes_into_the_group_once():
    """Before, the group the model wrote back was read as a new statement: `import (` twice, `os` imported twice."""
    out = focus_of(GO, ASK).text.replace('import (\n', 'import (\n\t"log"\n').replace(
        "\tdata, err :=", '\tlog.Printf("loading %s", path)\n\tdata, err :=')
    merged = merge_focus(GO, out, ASK)
    assert merged == GO.replace('import (\n', 'import (\n\t"log"\n').replace(
        "\tdata, err :=", '\tlog.Printf("loading %s", path)\n\tdata, err :=')


def test_an_import_left_out_that_hidden_code_uses_stays_where_it_was():
    """`strings` is used by `clean`, which the model was not shown: leaving it out of the group must not lose it.
    `yaml`, used only by Load, which no longer uses it, goes as the model wants (an unused import does not build)."""
    out = ('package config\n\nimport (\n\t"encoding/json"\n\t"os"\n)\n\n'
           "func Load(path string) (*Config, error) {\n\tdata, err := os.ReadFile(path)\n\tif err != nil {\n"
           "\t\treturn nil, err\n\t}\n\tvar c Config\n\treturn &c, json.Unmarshal(data, &c)\n}\n")
    merged = merge_focus(GO, out, "Make Load read JSON instead of YAML")
    assert '\nimport (\n\t"encoding/json"\n\t"os"\n\t"strings"\n)\n' in merged
    assert "yaml" not in merged and "json.Unmarshal" in merged and "func clean" in merged


def test_an_output_without_imports_leaves_the_files_imports_alone():
    out = ("func Load(path string) (*Config, error) {\n\treturn nil, nil\n}\n")
    merged = merge_focus(GO, out, "Make Load a stub")
    assert merged.split("// Config")[0] == GO.split("// Config")[0]


def test_a_file_without_imports_gets_a_declaration_after_its_package_clause():
    text = "package util\n\nfunc Twice(n int) int {\n\treturn 2 * n\n}\n\nfunc a() {}\n\nfunc b() {}\n\nfunc c() {}\n"
    focus = focus_of(text, "Log n in Twice")
    assert focus.text == "package util\n\nfunc Twice(n int) int {\n\treturn 2 * n\n}\n"
    out = 'package util\n\nimport "log"\n\nfunc Twice(n int) int {\n\tlog.Println(n)\n\treturn 2 * n\n}\n'
    assert merge_focus(text, out, "Log n in Twice") == text.replace(
        "package util\n\n", 'package util\n\nimport "log"\n\n').replace("\treturn 2", "\tlog.Println(n)\n\treturn 2")


def test_a_single_import_line_becomes_a_group_when_the_model_adds_one():
    text = GO.replace('import (\n\t"os"\n\t"strings"\n\n\tyaml "gopkg.in/yaml.v3"\n)\n', 'import "os"\n').replace(
        "yaml.Unmarshal(data, &c)", "nil").replace("strings.TrimSpace(s)", "s")
    out = focus_of(text, ASK).text.replace('import "os"\n', 'import (\n\t"log"\n\t"os"\n)\n').replace(
        "\tdata, err :=", '\tlog.Print(path)\n\tdata, err :=')
    merged = merge_focus(text, out, ASK)
    assert '\nimport (\n\t"log"\n\t"os"\n)\n\n// Config' in merged and merged.count("import") == 1


def test_blank_imports_stay_though_no_code_names_them():
    text = GO.replace('\t"os"\n', '\t_ "embed"\n\t"os"\n')
    out = focus_of(text, ASK).text.replace('\t_ "embed"\n', '\t"log"\n')
    assert '\nimport (\n\t_ "embed"\n\t"log"\n\t"os"\n' in merge_focus(text, out, ASK)  # first, as it was


def test_only_go_reads_as_go():
    assert is_go(GO.splitlines(True)) and is_go(["//go:build linux\n", "\n", "package main\n"])
    assert not is_go(["package com.example;\n"]) and not is_go(["import os\n"]) and not is_go([])


def test_copy_view_of_a_go_edit_that_adds_an_import_is_focused():
    """The selector's training pairs are focused as copy mode focuses: the group is part of what it shows."""
    after = GO.replace('import (\n', 'import (\n\t"log"\n').replace(
        "\tdata, err :=", '\tlog.Printf("loading %s", path)\n\tdata, err :=')
    shown, goal, names = copy_view(GO, after, ASK)
    assert names == ("Load",) and shown == focus_of(GO, ASK).text and '\t"log"\n' in goal


def test_the_same_imports_written_otherwise_leave_the_declarations_alone():
    text = GO.replace('import (\n\t"os"\n\t"strings"\n\n\tyaml "gopkg.in/yaml.v3"\n)\n',
                      'import "os"\nimport "strings"\nimport yaml "gopkg.in/yaml.v3"\n')
    out = ('import (\n\t"os"\n\t"strings"\n\tyaml "gopkg.in/yaml.v3"\n)\n\n'
           + focus_of(text, ASK).text.split("\n\nfunc ", 1)[1].join(["func ", ""]))
    assert merge_focus(text, out, "Make Load a stub").split("// Config")[0] == text.split("// Config")[0]
    added = out.replace('\t"os"\n', '\t"log"\n\t"os"\n')
    assert '\nimport (\n\t"log"\n\t"os"\n' in merge_focus(text, added, ASK)  # the output's group, as it wrote it
    singles = 'import "log"\nimport "os"\nimport "strings"\nimport yaml "gopkg.in/yaml.v3"\n'
    assert "\n" + singles in merge_focus(text, singles + "\n" + out.split(")\n\n", 1)[1], ASK)  # one a line, as both


def test_cgo_files_keep_the_focus_of_before():
    """`import "C"` must stay alone right under its preamble comment: a merged group would break the build."""
    text = GO.replace("import (\n", '// #include <stdio.h>\nimport "C"\n\nimport (\n')
    focus = focus_of(text, ASK)
    assert focus is not None and "import (" not in focus.text and "package" not in focus.text


def test_a_comment_between_the_package_clause_and_the_imports_stays_there():
    """A real-model probe (session 30): the rewritten group went right after the package clause, above the TODO
    comment that stood between them."""
    text = GO.replace("package config\n\n", "package config\n\n// TODO: read TOML too.\n\n")
    out = focus_of(text, ASK).text.replace('import (\n', 'import (\n\t"log"\n').replace(
        "\tdata, err :=", '\tlog.Print(path)\n\tdata, err :=')
    merged = merge_focus(text, out, ASK)
    assert 'package config\n\n// TODO: read TOML too.\n\nimport (\n\t"log"\n\t"os"\n' in merged


def test_an_import_whose_last_use_the_edit_took_out_goes():
    """Shown the group, the model took `yaml.Unmarshal` out of Load and kept the import: unused, it does not build.
    One used elsewhere (`strings`, by clean) stays, as does a blank import."""
    text = GO.replace('\t"os"\n', '\t_ "embed"\n\t"os"\n')
    out = focus_of(text, ASK).text.replace("yaml.Unmarshal(data, &c)", "nil").replace("\tdata, err :=",
                                                                                 '\tlog.Print(path)\n\tdata, err :=')
    out = out.replace('import (\n', 'import (\n\t"log"\n')
    merged = _finished(text, merge_focus(text, out, ASK))
    assert '\nimport (\n\t"log"\n\t_ "embed"\n\t"os"\n\t"strings"\n)\n' in merged and "yaml" not in merged
    # a review: the model wrote no imports, or removed the function that used one, and the import stayed
    asked = "Remove the body of Load and return nil, nil"
    stub = "func Load(path string) (*Config, error) {\n\treturn nil, nil\n}\n"
    assert '"os"' not in _finished(GO, merge_focus(GO, stub, asked), asked)
    asked = "Remove the Load function"
    gone = _finished(GO, merge_focus(GO, 'package config\n\nimport (\n\t"strings"\n)\n', asked), asked)
    assert 'import (\n\t"strings"\n)\n\n// Config' in gone and "func Load" not in gone


def _finished(old: str, new: str, instruction: str = ASK) -> str:
    """The edit as written: the whole-file check, then the imports mended (`fix_imports`)."""
    from editllm.editor.decode import DecodeStats
    from editllm.editor.edit import finish_edit
    from editllm.editor.source import SourceFile

    return finish_edit(SourceFile("config.go", old), new, instruction, DecodeStats("rewrite"), new).new_text


def _logged(text: str) -> str:
    """The focused Load of `text` as the model writes it asked ASK, without its imports."""
    shown = focus_of(text, ASK).text
    return shown[shown.index("func Load"):].replace("\tdata, err :=", "\tlog.Print(path)\n\tdata, err :=")


def test_a_package_is_imported_once_whatever_the_output_wrote_and_a_comment_is_no_use():
    """A review: a package the output wrote twice, or without the file's alias, was imported twice (does not build);
    `strings.TrimSpace` in a comment kept `strings` imported; `k8s.io/api/core/v1` (used as `v1`) was lost."""
    twice = ('package config\n\nimport "log"\n\nimport (\n\t"log"\n\t"os"\n\t"strings"\n\t"gopkg.in/yaml.v3"\n)\n\n'
             + _logged(GO))
    merged = merge_focus(GO, twice, ASK)
    assert merged.count('"log"') == 1 and merged.count("gopkg.in/yaml.v3") == 1
    commented = GO.replace("\treturn strings.TrimSpace(s)", "\treturn s // like strings.TrimSpace")
    out = focus_of(commented, ASK).text.replace('\t"strings"\n', "")
    assert '"strings"' not in merge_focus(commented, out, ASK)
    k8s = GO.replace('\t"strings"\n', '\t"strings"\n\t"k8s.io/api/core/v1"\n').replace(
        "func other() int", "func pod() *v1.Pod {\n\treturn nil\n}\n\nfunc other() int")
    out = focus_of(k8s, ASK).text.replace('\t"k8s.io/api/core/v1"\n', "")
    assert '"k8s.io/api/core/v1"' in merge_focus(k8s, out, ASK)


def test_a_cgo_group_keeps_its_preamble_and_the_models_imports_are_not_pasted_beside_it():
    """A review: `import "C"` in a group was not seen as cgo, and a group merged without its `#include`. Its imports
    are not shown, and a group the model writes anyway is left out: the standard package it uses is added."""
    cgo = GO.replace('import (\n', 'import (\n\t// #include <stdlib.h>\n\t"C"\n').replace(
        "func other() int {\n\treturn 1", "func other() int {\n\treturn int(C.rand())")
    assert "import" not in focus_of(cgo, ASK).text
    out = 'package config\n\nimport (\n\t"log"\n\t"os"\n)\n\n' + _logged(cgo)
    merged = _finished(cgo, merge_focus(cgo, out, ASK))
    assert merged.count("import (") == 1 and '\t// #include <stdlib.h>\n\t"C"\n' in merged
    assert merged.count('"os"') == 1 and merged.count('"log"') == 1 and "\tlog.Print(path)" in merged


def _added(old: str, new: str) -> tuple[str, list[str]]:
    from editllm.editor.goimports import fix_imports
    from editllm.editor.source import split_lines

    lines, paths, dropped = fix_imports("x.go", old, split_lines(new))
    assert not dropped
    return "".join(lines), paths


def test_a_standard_package_the_edit_uses_unimported_is_sorted_into_the_standard_section() -> None:
    """A real-model probe's edits wrote `log.Printf`, `sort.Strings` and `fmt.Errorf` into files that did not import
    them (7 of 47, session 30): the file does not build. Added as goimports adds it, where gofmt keeps it."""
    new = GO.replace("\tdata, err :=", '\tlog.Printf("loading %s", path)\n\tdata, err :=')
    text, paths = _added(GO, new)
    assert paths == ["log"]
    assert text == new.replace('import (\n\t"os"', 'import (\n\t"log"\n\t"os"')
    two = new.replace("return strings.TrimSpace(s)", 'return strings.TrimSpace(fmt.Sprint(s, time.Now()))')
    text, paths = _added(GO, two)
    assert paths == ["fmt", "log", "time"]
    assert 'import (\n\t"fmt"\n\t"log"\n\t"os"\n\t"strings"\n\t"time"\n\n\tyaml "gopkg.in/yaml.v3"\n)' in text


def test_standard_imports_go_into_a_section_of_their_own_a_line_or_a_declaration_after_the_package_clause() -> None:
    only_third = GO.replace('\t"os"\n\t"strings"\n\n', "")
    text, _ = _added(only_third, only_third.replace("return 1", "return int(math.Abs(-1))"))
    assert 'import (\n\t"math"\n\n\tyaml "gopkg.in/yaml.v3"\n)' in text
    singles = 'package main\n\nimport "os"\n\nfunc main() {\n\tos.Exit(0)\n}\n'
    text, _ = _added(singles, singles.replace("\tos.Exit(0)", '\tfmt.Println("hi")\n\tos.Exit(0)'))
    assert text.startswith('package main\n\nimport "os"\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hi")')
    bare = "package main\n\nfunc main() {\n}\n"
    text, _ = _added(bare, bare.replace("{\n}", '{\n\tfmt.Println("hi")\n}'))
    assert text.startswith('package main\n\nimport "fmt"\n\nfunc main() {\n')
    text, _ = _added(bare, bare.replace("{\n}", '{\n\tfmt.Println(strings.ToUpper("hi"))\n}'))
    assert text.startswith('package main\n\nimport (\n\t"fmt"\n\t"strings"\n)\n\nfunc main() {\n')


def test_nothing_is_added_for_a_name_the_file_declares_or_an_unimported_use_it_had_before() -> None:
    """`log := zap.S()` is a variable, not the package; a use the file already made unimported (it did not build
    before the edit, or a name read otherwise) is the file's own; and other languages are not read."""
    declared = GO.replace("\tdata, err := os.ReadFile(path)", "\tlog := zap.S()\n\tlog.Infof(path)\n\tdata, err := "
                          "os.ReadFile(path)")
    assert _added(GO, declared) == (declared, [])
    had = GO.replace("return 1", "return sort.Len()")
    assert _added(had, had.replace("func clean", "// clean trims.\nfunc clean")) == (had.replace(
        "func clean", "// clean trims.\nfunc clean"), [])
    from editllm.editor.goimports import fix_imports

    assert fix_imports("x.py", "", ["log.Printf(x)\n"]) == (["log.Printf(x)\n"], [], [])


def test_finish_edit_adds_the_import_and_says_so() -> None:
    """The whole edit (rewrite, spec and copy all finish here): the file written builds, and the result names what
    was added, for the note on stderr."""
    from editllm.editor.decode import DecodeStats
    from editllm.editor.edit import finish_edit
    from editllm.editor.source import SourceFile

    new = GO.replace("\tdata, err :=", '\tlog.Printf("loading %s", path)\n\tdata, err :=')
    result = finish_edit(SourceFile("config.go", GO), new, "log the path in Load", DecodeStats("rewrite"), new)
    assert result.imports_added == ("log",) and result.imports_dropped == ()
    assert '\t"log"\n\t"os"\n' in result.new_text and result.new_text.count("log.Printf") == 1


def _fixed(old: str, new: str, folder=None) -> tuple[str, list[str], list[str]]:
    from editllm.editor.goimports import fix_imports
    from editllm.editor.source import split_lines

    lines, added, dropped = fix_imports("x.go", old, split_lines(new), folder)
    return "".join(lines), added, dropped


def test_imports_are_read_where_go_has_them_and_uses_in_code_only():
    """A review (session 31): `"/static/*"` opened a block comment that hid `fmt.Println`, and `fmt` was dropped
    though used; an `import` line of a template string was taken out or written into; `import ()` read as a group
    that the next `)` closed (a syntax error written)."""
    old = ('package x\n\nimport (\n\t"fmt"\n\t"net/http"\n)\n\nfunc start() { fmt.Println("start") }\n\n'
           'func routes() { http.Handle("/static/*", nil); fmt.Println("routes") }\n\n/* end */\n')
    assert _fixed(old, old.replace('fmt.Println("start")', ""))[2] == []
    tmpl = ('package x\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nconst tmpl = `package main\n\nimport "fmt"\n\n'
            'import (\n\t"os"\n)\n`\n\nfunc Write() {\n\tfmt.Println("writing")\n\tos.Stdout.WriteString(tmpl)\n}\n')
    text, added, dropped = _fixed(tmpl, tmpl.replace('\tfmt.Println("writing")\n', "").replace(
        "WriteString(tmpl)", "WriteString(strings.ToUpper(tmpl))"))
    assert (added, dropped) == (["strings"], ["fmt"])
    assert text.startswith('package x\n\nimport (\n\t"os"\n\t"strings"\n)\n\nconst tmpl = `package main\n\nimport "fmt"'
                           '\n\nimport (\n\t"os"\n)\n`')
    empty = "package x\n\nimport ()\n\nconst (\n\tA = 1\n)\n\nfunc f() {}\n"
    text, added, _ = _fixed(empty, empty.replace("func f() {}", "func f() { fmt.Println(A) }"))
    assert added == ["fmt"] and "const (\n\tA = 1\n)\n" in text and 'import "fmt"\n' in text


def test_a_name_the_package_or_a_parameter_list_declares_gets_no_import(tmp_path):
    """A review: `func handle(log, audit *zap.Logger)` got `"log"`; and `var json = jsoniter.Config...` in another
    file of the package would clash with an added `"encoding/json"` (goimports reads the package too)."""
    old = "package api\n\nfunc handle(log, audit *zap.Logger) {\n\taudit.Info(\"x\")\n}\n"
    assert _fixed(old, old.replace('audit.Info("x")', 'log.Info("x")'))[1] == []
    (tmp_path / "json.go").write_text("package api\n\nimport jsoniter \"github.com/json-iterator/go\"\n\n"
                                      "var json = jsoniter.ConfigCompatibleWithStandardLibrary\n")
    (tmp_path / "other.go").write_text("package api\n\nfunc other() {\n\tlog.Println(1)\n}\n")
    uses = "package api\n\nfunc encode(v any) ([]byte, error) {\n\treturn nil, nil\n}\n"
    new = uses.replace("return nil, nil", "return json.Marshal(v)")
    assert _fixed(uses, new, tmp_path)[1] == []
    logged = uses.replace("\treturn nil, nil", '\tlog.Println("encoding")\n\treturn nil, nil')
    assert _fixed(uses, logged, tmp_path)[1] == ["log"]  # a sibling's `\tlog.Println` declares nothing


def test_the_files_alias_stays_while_code_not_shown_uses_it():
    """A review: the file's `y "gopkg.in/yaml.v3"`, used by Save, which the model was not shown, was dropped when the
    model wrote the package unaliased (Save then did not build). Two names for one path are legal Go."""
    save = "func Save(c *Config) ([]byte, error) {\n\treturn y.Marshal(c)\n}"
    text = GO.replace('yaml "gopkg.in/yaml.v3"', 'y "gopkg.in/yaml.v3"').replace("yaml.Unmarshal", "y.Unmarshal") \
        .replace("func other() int {\n\treturn 1\n}", save)
    shown = focus_of(text, ASK).text
    out = shown.replace('y "gopkg.in/yaml.v3"', '"gopkg.in/yaml.v3"').replace("y.Unmarshal", "yaml.Unmarshal")
    merged = merge_focus(text, out, ASK)
    assert '\ty "gopkg.in/yaml.v3"\n' in merged and '\t"gopkg.in/yaml.v3"\n' in merged


def test_a_group_pasted_beside_the_files_loses_the_imports_it_repeats():
    """A real-model probe (session 31): an unfocused fragment merged into place wrote a second `import (...)` group
    repeating six of the file's imports (Go refuses a name imported twice). What it repeats goes; what is new stays."""
    old = ('package main\n\nimport (\n\t"fmt"\n\t"log"\n\n\t"golang.org/x/tools/go/packages"\n)\n\nfunc main() {\n'
           '\tpkgs, err := packages.Load(nil)\n\tlog.Print(err)\n\tfmt.Println(pkgs)\n}\n')
    new = old.replace("\n)\n\nfunc", '\n)\n\nimport (\n\t"fmt"\n\t"log"\n\t"time"\n)\n\nfunc').replace(
        "\tpkgs, err", "\tstart := time.Now()\n\tpkgs, err").replace("(pkgs)", "(pkgs, time.Since(start))")
    text, added, dropped = _fixed(old, new)
    assert (added, dropped) == ([], [])
    assert text.count('"fmt"') == 1 and text.count('"log"') == 1 and 'import (\n\t"time"\n)\n\nfunc main' in text
