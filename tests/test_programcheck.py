"""editor/programcheck.py: a copy program that breaks code which still parses sends copy mode back to spec."""

from __future__ import annotations

import pytest
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.programcheck import check_program_text, overlap, unreachable
from editllm.editor.source import SourceFile, split_lines
from editllm.grammar.program import parse, resolve


def test_unreachable_finds_statements_after_a_return_or_raise_in_their_block():
    text = ("def f(x):\n    if x:\n        return 1\n        x += 1\n    raise ValueError(x)\n"
            "    print(x)\n\n\nfor y in z:\n    continue\n    g(y)\n")
    assert unreachable(text) == [4, 6, 11]
    assert unreachable("def f(:\n") is None
    assert unreachable("def f():\n    return 1\n\n\ndef g():\n    return 2\n") == []


REMOTE = ("def delete(ref):\n    try:\n        os.remove(path_of(ref.common_dir, ref.path))\n    except OSError:\n"
          "        pass\n")


def test_a_gen_span_that_writes_a_line_the_next_copy_copies_too_is_refused():
    """The probe's case: the gen span wrote `os.remove(...)` with a new handler, then copied it again."""
    program = ('<copy lines="1-2"/><gen>        os.remove(path_of(ref.common_dir, ref.path))\n'
               '    except OSError as e:\n        logging.warning(e)\n</gen><copy lines="3-5"/>')
    with pytest.raises(EditError, match="writes 'os.remove.*and copies it too"):
        check_program_text("r.py", REMOTE, resolve(parse(program), split_lines(REMOTE)), program)
    moved = '<copy lines="1-2"/><gen>        logging.info(ref)\n</gen><copy lines="3-5"/>'  # new text beside it: fine
    check_program_text("r.py", REMOTE, resolve(parse(moved), split_lines(REMOTE)), moved)
    short = '<copy lines="1-4"/><gen>        pass\n</gen><copy lines="5-5"/>'  # `pass` is no distinctive line
    assert overlap(parse(short), split_lines(REMOTE)) is None


def test_new_dead_code_is_refused_and_old_dead_code_is_not_counted():
    text = "def to_bool(val):\n    check(val)\n    val = val.lower()\n    return val\n"
    program = '<gen>def to_bool(val):\n    raise TypeError(val)\n</gen><copy lines="3-4"/>'
    with pytest.raises(EditError, match="never runs after a return or raise \\(line 3\\)"):
        check_program_text("c.py", text, resolve(parse(program), split_lines(text)), program)
    dead = "def f():\n    return 1\n    print('old dead code')\n"
    check_program_text("c.py", dead, dead.replace("1", "2"), '<gen>x</gen>')  # as many as before
    check_program_text("c.js", text, "function f() {\n  return 1;\n  g();\n}\n", '<gen>x</gen>')  # Python only


@pytest.mark.parametrize(("program", "reason"), [
    ('<copy lines="1-2"/><gen>        os.remove(path_of(ref.common_dir, ref.path))\n    except OSError as e:\n'
     '        logging.warning(e)\n</gen><copy lines="3-5"/>', "copies it too"),
    ('<copy lines="1-1"/><gen>    raise TypeError(ref)\n</gen><copy lines="2-5"/>', "never runs"),
])
def test_copy_mode_falls_back_to_spec_on_such_a_program(monkeypatch, scripted_lm, program, reason):
    from editllm.editor.copymode import CopyStats

    def run(lm, path, text, *args, **kwargs):
        return resolve(parse(program), split_lines(text)), CopyStats(mode="copy", program=program)

    monkeypatch.setattr("editllm.editor.copymode.run_copy", run)
    fixed = REMOTE.replace("    except OSError:\n        pass\n", "    except OSError as e:\n        log(e)\n")
    lm = scripted_lm(fixed + "```\n")  # what spec mode then writes
    result = edit_file(lm, SourceFile("r.py", REMOTE), "log the error in delete", EditOptions(mode="copy"))
    assert result.fallback is not None and reason in result.fallback
    assert result.stats.mode == "spec" and result.new_text == fixed


def test_a_block_ending_line_repeated_in_a_new_branch_and_the_abstract_generator_idiom_pass():
    text = "def load():\n    if cached:\n        return default_config\n    return read()\n"
    program = ('<copy lines="1-3"/><gen>    try:\n        return read()\n    except OSError:\n'
               '        return default_config\n</gen>')
    check_program_text("c.py", text, resolve(parse(program), split_lines(text)), program)
    abstract = "class A:\n    def items(self):\n        pass\n"
    idiom = '<copy lines="1-2"/><gen>        raise NotImplementedError\n        yield\n</gen>'
    check_program_text("c.py", abstract, resolve(parse(idiom), split_lines(abstract)), idiom)


FETCHER = ("class Fetcher {\n  packument() {\n    // simulate based on manifest\n"
           "    return this.manifest().then(mani => ({\n      name: mani.name,\n    }))\n  }\n}\n")


def test_a_gen_span_that_writes_a_new_version_of_the_line_the_copy_then_copies_is_refused():
    """The second probe's case (a JS file): the gen span wrote the `async` version of the return line, and the
    copy after it took the old one too: two openings, a syntax error with exit 0."""
    program = ('<copy lines="1-2"/><gen>    // simulate based on manifest\n'
               '    return this.manifest().then(async mani => ({\n</gen><copy lines="4-8"/>')
    with pytest.raises(EditError, match="writes 'return this.manifest"):
        check_program_text("f.js", FETCHER, resolve(parse(program), split_lines(FETCHER)), program)
    deeper = ('<copy lines="1-3"/><gen>    if (!this.spec)\n      return this.manifest().then(mani => null)\n'
              '</gen><copy lines="4-8"/>')  # a new branch above the old line, indented under it: fine
    check_program_text("f.js", FETCHER, resolve(parse(deeper), split_lines(FETCHER)), deeper)
