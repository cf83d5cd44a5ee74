"""Prose files (issue 19): no wrapper line ever reaches the edited file, and the prose bench is sound.

The fence corpus is the hand-written edge cases in tests/fence_corpus/ (written for this project:
fences of several lengths, tildes, XML-like tags, no final newline, a file ending with a fence line,
a file cut inside a code block, reST) plus, at test time, the Markdown/reST READMEs and docs that
the installed packages ship (skipped when none are installed), whole and cut at a few lines.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import re
import sys
import sysconfig
from pathlib import Path

import pytest
from editllm.editor.edit import EditOptions, edit_file, finish_text
from editllm.editor.errors import EditError
from editllm.editor.prompt import end_of_file, fence_for, rewrite_prompt
from editllm.editor.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]
HAND = sorted((Path(__file__).parent / "fence_corpus").iterdir())
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def open_run(text: str) -> str | None:
    """The fence run of the code block still open at the end of `text` (independent of editor.prompt)."""
    run = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
            continue
        if run is None:
            run = m.group(1)
        elif m.group(1)[0] == run[0] and len(m.group(1)) >= len(run) and not m.group(2).strip():
            run = None
    return run


def installed_docs(limit: int = 40) -> list[tuple[str, str]]:
    """Real Markdown/reST with code blocks from installed packages: README long descriptions, .md/.rst."""
    found = {}
    for dist in md.distributions():
        body = dist.metadata.get_payload() or ""
        if isinstance(body, str) and ("```" in body or "~~~" in body or ".. code" in body):
            found[f"{dist.metadata['Name']}/METADATA"] = body.replace("\r\n", "\n")
    site = Path(sysconfig.get_paths()["purelib"])
    for pattern in ("*/**/*.md", "*/**/*.rst"):
        for f in sorted(site.glob(pattern)):
            try:
                text = f.read_text(encoding="utf-8").replace("\r\n", "\n")
            except (OSError, UnicodeDecodeError):
                continue
            if "```" in text or "~~~" in text or "::\n" in text:
                found[str(f.relative_to(site))] = text
    return sorted(found.items())[:limit]


def corpus() -> list[tuple[str, str]]:
    files = [(f.name, f.read_text(encoding="utf-8")) for f in HAND] + installed_docs()
    out = []
    for name, text in files:
        out.append((name, text))
        lines = text.split("\n")
        for cut in (len(lines) // 3, len(lines) // 2, 2 * len(lines) // 3):  # chunks end anywhere, in blocks too
            if cut > 1:
                out.append((f"{name}[:{cut}]", "\n".join(lines[:cut]) + "\n"))
    return out


def behaviours(shown: str, fence: str, written: str | None = None) -> dict[str, str]:
    """What the model writes after the file (`written`, default: `shown` copied exactly), per behaviour."""
    written = shown if written is None else written
    body = written if written.endswith("\n") or not written else written + "\n"
    short = open_run(shown) or "```"  # closes the file's open block, or opens a new one
    return {
        "closes correctly": f"{body}{fence}\n",
        "short fence, then the real one": f"{body}{short}\n{fence}\n",
        "blank line, short fence, real one": f"{body}\n{short}\n{fence}",
        "short fence, prose, then the real one": f"{body}{short}\n\nI fixed the spelling mistakes.\n{fence}\n",
        "short fence, then EOS": f"{body}{short}\n",
        "short fence, prose, EOS": f"{body}{short}\n\nDone: the typos are fixed.",
        "tilde fence, then the real one": f"{body}{open_run(shown) or '~~~'}\n{fence}\n",
        "empty block, then the real one": f"{body}```\n```\n{fence}\n" if not open_run(shown) else f"{body}{fence}\n",
    }


CORPUS = corpus()


@pytest.mark.parametrize("name,text", CORPUS, ids=[n for n, _ in CORPUS])
def test_no_wrapper_line_reaches_the_file(name, text):
    intended = text if text.endswith("\n") or not text else text + "\n"
    src = SourceFile(name, text)
    for fence in {fence_for(text), fence_for(text, 4)}:  # as for a code file and as for a prose file
        for what, output in behaviours(text, fence).items():
            stop = "stop" if end_of_file(output, fence) is not None else "eos"
            assert finish_text(src, output, fence, stop, 10**6, text) == intended, (fence, what)


def last_line_edits(line: str) -> list[str]:
    """The kept last line as the model may leave it: as it was, with words added, with a word replaced."""
    words = line.split(" ")
    replaced = " ".join(words[:len(words) // 2] + ["CHANGED"] + words[len(words) // 2 + 1:])
    return [line] + ([line + " (edited)"] if line.strip() else []) + ([replaced] if len(words) > 2 else [])


SHORT_CORPUS = [(n, t) for n, t in CORPUS if t.count("\n") <= 150]


@pytest.mark.parametrize("name,text", SHORT_CORPUS, ids=[n for n, _ in SHORT_CORPUS])
def test_no_output_cut_short_passes_for_the_whole_file(name, text):
    """Every cut point of the file, its last kept line maybe edited, then a short fence and EOS: as a prose file
    (a four-backtick wrapper) nothing of it may pass for the whole file. Before session 26 any line like the
    file's last one before the fence let it pass (`endif()` earlier in the file, a list item of the same shape):
    11,787 of 231,525 such cases of 764 real Markdown/reST files, each losing the lines after the cut."""
    src, fence = SourceFile("README.md", text), fence_for(text, 4)  # a prose file, whatever the corpus name
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    passed = []
    for k in range(1, len(lines)):
        if not any(line.strip() and not FENCE.match(line) for line in lines[k:]):
            continue  # nothing but blank and fence lines left: not a text cut short
        for last in last_line_edits(lines[k - 1]):
            for tail in ("```", "```\n", "\n```", "~~~\n"):
                output = "\n".join(lines[:k - 1] + [last]) + "\n" + tail
                try:
                    finish_text(src, output, fence, "eos", 10**6, text)
                except EditError:
                    continue
                passed.append((k, last, tail))
    assert not passed, passed[:5]


def closing_lines(text: str) -> list[int]:
    """Indexes of the lines that close a code block (independent of editor.prompt)."""
    lines = text.split("\n")
    return [k for k in range(1, len(lines))
            if open_run("\n".join(lines[:k])) and not open_run("\n".join(lines[:k + 1]))]


ENDS_IN_A_BLOCK = [(n, t) for n, t in CORPUS
                   if closing_lines(t) and not t.rstrip("\n").split("\n")[-1].strip().strip("`~")
                   and closing_lines(t)[-1] == len(t.rstrip("\n").split("\n")) - 1]


@pytest.mark.parametrize("name,text", ENDS_IN_A_BLOCK, ids=[n for n, _ in ENDS_IN_A_BLOCK])
def test_eos_after_the_files_own_last_fence_is_the_whole_file(name, text):
    """A file whose last line closes a code block, copied and then EOS: refused before as "no closing
    fence" though the file was whole. EOS after any earlier block's closing line is still cut short."""
    src = SourceFile(name, text)
    fence = fence_for(text, 4)
    intended = text if text.endswith("\n") else text + "\n"
    assert finish_text(src, text, fence, "eos", 10**6, text) == intended
    lines = text.split("\n")
    for k in closing_lines(text)[:-1]:
        short = "\n".join(lines[:k + 1]) + "\n"
        with pytest.raises(EditError, match="may close the file's last code block or the output itself"):
            finish_text(src, short, fence, "eos", 10**6, text)


def test_a_readme_ending_in_a_code_block_is_edited_when_the_model_stops_after_it(scripted_lm):
    """Through decoding, both modes: the model fixes a typo, copies the closing block and stops."""
    before = "# Tool\n\nTeh usage:\n\n```sh\ntool --help\n```\n"
    after = before.replace("Teh", "The")
    for mode in ("rewrite", "spec"):
        result = edit_file(scripted_lm(after), SourceFile("README.md", before), "Fix the typo.",
                           EditOptions(mode=mode, focus=False))
        assert result.new_text == after, mode


def test_the_corpus_holds_files_that_end_in_a_code_block():
    assert len(ENDS_IN_A_BLOCK) >= 3


def test_no_wrapper_line_reaches_an_edited_prose_case():
    """Every prose bench case, its edit made: the cut gives exactly the gold text, whatever the close."""
    for case in _cases():
        fence = fence_for(case["before"], 4)
        src = SourceFile(case["path"], case["before"])
        for what, output in behaviours(case["before"], fence, case["after"]).items():
            stop = "stop" if end_of_file(output, fence) is not None else "eos"
            assert finish_text(src, output, fence, stop, 10**6, case["before"]) == case["after"], (case["id"], what)


def test_the_corpus_holds_real_files_with_code_blocks():
    real = [n for n, _ in CORPUS if "/" in n and "[:" not in n]
    if not real:
        pytest.skip("no installed package ships Markdown/reST with code blocks")
    assert len(real) >= 5


@pytest.mark.parametrize("path", HAND, ids=[p.name for p in HAND])
def test_rewrite_and_spec_cut_the_same_and_keep_the_file(path, scripted_lm):
    """Through the whole pipeline (prompt, decoder, TailStop, cut, line endings), both modes."""
    raw = path.read_text(encoding="utf-8")
    src = SourceFile(path.name, raw)
    for what, output in behaviours(src.text, fence_for(src.text, 4)).items():  # .md, .rst: prose
        lm = scripted_lm(output)
        results = [edit_file(lm, src, "Fix the spelling mistakes.", EditOptions(mode=m, focus=False))
                   for m in ("rewrite", "spec")]
        assert results[0].new_text == results[1].new_text == raw, what


def test_a_real_edit_near_the_end_survives_the_cut(scripted_lm):
    """The issue-19 shape: a README with code blocks, typo fixed on its last line, model adds ``` then ````."""
    before = "# T\n\n```python\nx = 1\n```\n\nTeh end.\n"
    after = before.replace("Teh", "The")
    lm = scripted_lm(after + "```\n````\n")
    assert edit_file(lm, SourceFile("README.md", before), "Fix the spelling mistakes.", EditOptions()).new_text == after


@pytest.mark.parametrize("where", ["middle", "end"])
def test_a_code_block_the_edit_adds_to_a_readme_without_one_is_kept(where, scripted_lm):
    """A prose file gets a four-backtick wrapper even without fences, so an added block is content."""
    before = "# T\n\nText.\n\nMore text.\n"
    block = "\n```python\nprint(1)\n```\n"
    after = before + block if where == "end" else before.replace("Text.\n", "Text.\n" + block)
    for tail in ("````\n", "```\n````\n", "```\n"):
        lm = scripted_lm(after + tail)
        result = edit_file(lm, SourceFile("README.md", before), "Add an example.", EditOptions(focus=False))
        assert result.new_text == after, tail


def test_prompt_fence_is_longer_than_any_run_in_the_file():
    text = (HAND[0].parent / "four_backticks.md").read_text()
    assert fence_for(text) == "`````"
    chat = type("T", (), {"apply_chat_template": lambda *a, **k: "<chat>"})()
    assert rewrite_prompt(chat, "a.md", text, "x").text.endswith("`````markdown\n")
    assert rewrite_prompt(chat, "a.md", "plain\n", "x").fence == "````"  # prose: at least four
    assert rewrite_prompt(chat, "a.py", "x = 1\n", "x").fence == "```"  # code keeps three


# --- prose metrics -------------------------------------------------------------------------------------

metrics = _module("prose_metrics")
BEFORE = "one\ntwo tpyo\nthree\nfour mispell\nfive\n"
AFTER = "one\ntwo typo\nthree\nfour misspell\nfive\n"
EDITS = [{"line": 2, "before": "two tpyo", "after": "two typo"},
         {"line": 4, "before": "four mispell", "after": "four misspell"}]


@pytest.mark.parametrize("produced,recall,precision,unrequested,exact", [
    (AFTER, 1.0, 1.0, 0, True),
    (BEFORE, 0.0, 1.0, 0, False),  # nothing changed: nothing unrequested either
    ("one\ntwo typo\nthree\nfour mispell\nfive\n", 0.5, 1.0, 0, False),
    ("ONE\ntwo typo\nthree\nfour misspell\nfive\n", 1.0, 2 / 3, 1, False),  # a modified line counts once
    ("one\ntwo typo\nthree\nfour misspel\nfive\n", 0.5, 1.0, 0, False),  # asked line, wrong text
    (AFTER + "```\n", 1.0, 2 / 3, 1, False),  # a wrapper line is an unrequested change
    ("one\ntwo typo\nfour misspell\nfive\n", 1.0, 2 / 3, 1, False),  # a lost line too
])
def test_prose_metrics_on_hand_made_examples(produced, recall, precision, unrequested, exact):
    got = metrics.score(BEFORE, AFTER, produced, EDITS)
    assert got == {"recall": recall, "precision": pytest.approx(precision), "unrequested_lines": unrequested,
                   "exact_match": exact}


def test_changes_pair_a_replaced_block_line_by_line():
    found = metrics.changes("a\nb\nc\n", "A\nB\nC\nD\n")
    assert [(c.old, c.new) for c in found] == [(1, "A"), (2, "B"), (3, "C"), (None, "D")]


# --- prose bench cases ---------------------------------------------------------------------------------

CASES_FILE = ROOT / "benchmarks" / "cases" / "prose.jsonl"


def _cases() -> list[dict]:
    if not CASES_FILE.exists():
        pytest.skip(f"{CASES_FILE} is missing")
    return [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines()]


def test_prose_cases_are_well_formed():
    cases = _cases()
    assert len({c["id"] for c in cases}) == len(cases) >= 24
    for c in cases:
        before, after = c["before"].split("\n")[:-1], c["after"].split("\n")[:-1]
        assert 40 <= len(before) == len(after) == c["lines"] <= 120, c["id"]
        assert any(FENCE.match(line) for line in before) and open_run(c["before"]) is None, c["id"]
        assert 1 <= len(c["edits"]) <= 4 and (c["kind"] != "prose-typo" or len(c["edits"]) >= 2), c["id"]
        for e in c["edits"]:
            assert before[e["line"] - 1] == e["before"] != e["after"] == after[e["line"] - 1], c["id"]
        assert {k for k in range(len(before)) if before[k] != after[k]} == {e["line"] - 1 for e in c["edits"]}
        assert re.search(r"MIT|BSD|Apache", c["source"]["license"]), c["id"]
        assert metrics.score(c["before"], c["after"], c["after"], c["edits"])["exact_match"]
        assert metrics.recall(c["before"], c["before"], c["edits"]) == 0.0


def test_heldout_cases_come_from_packages_training_never_reads():
    from editllm.training.data import PACKAGES

    cases = _cases()
    held = [c for c in cases if c["heldout"]]
    assert len(held) >= 8
    builder = _module("build_prose_cases")
    assert {c["source"]["package"] for c in held} <= set(builder.HELDOUT)
    assert not set(builder.HELDOUT) & set(PACKAGES)
    assert not {c["source"]["package"] for c in cases if not c["heldout"]} & set(builder.HELDOUT)


# --- prose wording and prose focus (quality levers) ----------------------------------------------------

from editllm.editor import prose, prosefocus  # noqa: E402
from editllm.editor.decode import DecodeStats  # noqa: E402
from editllm.editor.source import split_lines  # noqa: E402

CHAT = type("T", (), {"apply_chat_template": lambda self, m, **k: "\n".join(x["content"] for x in m)})()
README = (
    "# Tool\n\nIntro text.\n\n## Installation\n\nInstal it with pip:\n\n```bash\n# not a heading\npip install tool\n"
    "```\n\n### From source\n\nClone it.\n\n## Usage\n\nRun it.\n"
)


def test_prose_files_get_the_prose_wording_and_code_keeps_its_own(monkeypatch):
    words = prose.wording()
    md = rewrite_prompt(CHAT, "README.md", "Teh text.\n", "Fix the typos.").text
    py = rewrite_prompt(CHAT, "a.py", "x = 1\n", "Fix the typos.").text
    assert words is not None and words.system in md and words.tail in md
    assert words.system not in py and words.tail not in py
    monkeypatch.setattr(prose, "WORDING", None)  # the code wording, as before
    assert rewrite_prompt(CHAT, "README.md", "Teh text.\n", "x").text.replace("README.md", "a.py") \
        .replace("````markdown", "```python").replace("````", "```") == \
        rewrite_prompt(CHAT, "a.py", "Teh text.\n", "x").text


def test_headings_skip_code_blocks_and_read_setext_and_rest():
    lines = split_lines(README)
    assert [(lines[k], level) for k, level, _ in prosefocus.headings(lines)] == [
        ("# Tool\n", 1), ("## Installation\n", 2), ("### From source\n", 3), ("## Usage\n", 2)]
    rest = split_lines("Title\n=====\n\nText.\n\nPart\n----\n\nMore.\n\nOther\n=====\n")
    assert [(k, level, t) for k, level, t in prosefocus.headings(rest)] == [
        (0, 1, "Title"), (5, 2, "Part"), (10, 1, "Other")]


@pytest.mark.parametrize("instruction,section", [
    ("Fix the spelling in the Installation section.", (4, 17)),  # its subsection included
    ("Fix the typos under 'From source'.", (13, 17)),
    ("In the usage section, say run it twice.", (17, 20)),
    ("Fix the spelling mistakes.", None),  # names no section
    ("Fix the installation typos.", None),  # names a heading but speaks of no section
])
def test_named_section(instruction, section):
    got = prosefocus.named_section(split_lines(README), instruction)
    assert (got[0] if got else None) == section


CHANGELOG = """# 1.12.1 (July 8th, 2026)

### Fixed

- Fix a leak (#850)

# 1.12.0 (June 18th, 2026)

### Added

- `Buf::get_u24` (#830)

### Fixed

- Fix a panic in `split_to` (#835)

# 1.11.0 (November 14th, 2025)

### Fixed

- Fix docs (#800)
"""


@pytest.mark.parametrize("instruction,section", [
    ("Under 1.12.0's Fixed section, add a bullet: Fix overflow in split_off (#840)", (12, 16)),
    ("Under 1.12.0, add an Added bullet and a Fixed one.", (6, 16)),  # both headings of it: the version's
    ("In the v1.11.0 section, fix the typo.", None),  # `v1.11.0` is not `1.11.0`
    ("Under 1.12, add a bullet.", None),  # no heading is 1.12
    ("Update the install section for 1.12.0 and 1.11.0", None),  # two releases' headings
])
def test_a_version_names_its_changelog_section(instruction, section):
    """A real-model probe (session 34): "Under 1.12.0's Fixed section, add a bullet" named no section (the heading
    `# 1.12.0 (June 18th, 2026)` has words the instruction lacks, and "Fixed" heads three), so the whole 470-line
    changelog went to the model, too long for its context. A version names the one heading holding it, and a
    heading within it the instruction names narrows it."""
    got = prosefocus.named_section(split_lines(CHANGELOG), instruction)
    assert (got[0] if got else None) == section
    # the file's only `### Fixed`, another release's, is not the named one (a review, session 34)
    one_fixed = split_lines(CHANGELOG.replace("### Fixed\n\n- Fix a panic", "### Changed\n\n- Fix a panic")
                            .replace("### Fixed\n\n- Fix docs", "### Changed\n\n- Fix docs"))
    assert prosefocus.named_section(one_fixed, "Under 1.12.0's Fixed section, add a bullet")[0] == (6, 16)
    # a version inside a heading's words is no release (a review: "for Python 3.12" took `## Python 3.12 support`)
    readme = split_lines("# Tool\n\n## Install\n\npip install tool\n\n## Python 3.12 support\n\nYes.\n")
    assert prosefocus.named_section(readme, "Update the install section for Python 3.12") in (None, ((2, 6), "Install"))


def test_a_section_keeps_the_blank_line_it_ends_with(scripted_lm):
    """The same request run on the bundled model: the section came back without its last, blank line, so the
    next heading followed the new bullet directly (an unasked hunk). Put back, as a file's are."""
    src = SourceFile("CHANGELOG.md", CHANGELOG)
    wrote = "### Fixed\n\n- Fix a panic in `split_to` (#835)\n- Fix overflow in split_off (#840)\n"
    result = edit_file(scripted_lm(wrote + "````\n"), src, "Under 1.12.0's Fixed section, add a bullet: Fix "
                       "overflow in split_off (#840)", EditOptions())
    assert result.focused == ("section: Fixed",)
    assert result.new_text == CHANGELOG.replace("(#835)\n", "(#835)\n- Fix overflow in split_off (#840)\n")


def test_chunks_cover_the_file_and_never_cut_a_code_block():
    block = "```\n" + "code\n\n" * 20 + "```\n"
    text = "".join(f"Paragraph {k}.\n\n" for k in range(25)) + block + "".join(f"Tail {k}.\n\n" for k in range(25))
    lines = split_lines(text)
    ranges = prosefocus.chunks(lines, size=10)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(lines)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    inside = prosefocus.in_block(lines)
    assert all(not inside[start] or lines[start].startswith("```") for start, _ in ranges)
    assert all(open_run("".join(lines[s:e])) is None for s, e in ranges), "a part ends inside a code block"
    assert prosefocus.chunks(split_lines("a\nb\nc\n" * 30), size=10) == [(0, 90)]  # no blank line: one part
    parts = prosefocus.Parts(tuple(ranges), "chunks")
    assert prosefocus.merge_parts(lines, parts, ["".join(lines[s:e]) for s, e in ranges]) == text


def test_a_named_section_is_edited_alone_and_the_rest_kept(scripted_lm):
    """The model sees only the section (its output is the section), both modes; the rest is byte for byte."""
    src = SourceFile("README.md", README)
    section = "".join(split_lines(README)[4:17])
    fixed = section.replace("Instal it", "Install it")
    results = [edit_file(scripted_lm(fixed + "````\n"), src, "Fix the typos in the Installation section.",
                         EditOptions(mode=m)) for m in ("rewrite", "spec")]
    assert results[0].new_text == results[1].new_text == README.replace("Instal it", "Install it")
    assert results[0].focused == ("section: Installation",)
    prompt = rewrite_prompt(CHAT, "README.md", section, "x").text
    assert "Intro text." not in prompt and "Run it." not in prompt


def test_chunked_edit_puts_every_part_back(scripted_lm, monkeypatch):
    """With chunking on, each part is a request of its own; the parts are joined in file order."""
    monkeypatch.setattr(prose, "CHUNKS", True)
    text = "".join(f"Paragraph {k} has a tpyo.\n\n" for k in range(80))
    src = SourceFile("notes.txt", text)
    parts = prosefocus.parts_of(src.path, src.lines, "Fix the spelling mistakes.")
    assert parts is not None and len(parts.ranges) > 1
    shown = []

    def regenerate(lm, src, part, *args, **kwargs):  # the model, scripted per part: fix the part's typos
        shown.append(part)
        return part.replace("tpyo", "typo"), DecodeStats("spec", output_tokens=len(part)), "", False

    monkeypatch.setattr("editllm.editor.edit.regenerate", regenerate)
    result = edit_file(scripted_lm(""), src, "Fix the spelling mistakes.", EditOptions())
    assert result.new_text == text.replace("tpyo", "typo")
    assert shown == ["".join(src.lines[s:e]) for s, e in parts.ranges]
    assert result.stats.output_tokens == len(text)  # the parts' costs add up


@pytest.mark.parametrize("old,new,fix", [
    ("Instal the pacakge with pip.\n", "Install the package with pip.\n", True),
    ("colour and recieve\n", "color and receive\n", True),
    ("See the [docs](https://a.b/docs).\n", "See the [documentation](https://a.b/docs).\n", False),  # a new word
    ("Run teh tool\n", "Run the tool.\n", False),  # punctuation added
    ("Use it quickly.\n", "Use it fast.\n", False),  # an unrelated word
    ("Go to https://a.b/x\n", "Go to https://a.b/y\n", False),  # a link is not a spelling
    ("```python3\n", "```python\n", False),  # a fence's language is markup (held-out urllib3_1, session 6)
    ("  ~~~ pyhton\n", "  ~~~ python\n", False),
])
def test_spelling_fix_shape(old, new, fix):
    assert prose.spelling_fix(old, new) is fix


def test_spelling_only_keeps_spelling_fixes_and_restores_the_rest():
    shown = "# Tile\n\nInstal it.\n\nSee [docs](https://a.b).\n\nEnd.\n"
    edited = "# Tile\n\nInstall it.\n\nSee [documentation](https://a.b).\n\nEnd.\nI fixed it.\n"
    want = "# Tile\n\nInstall it.\n\nSee [docs](https://a.b).\n\nEnd.\n"
    assert prose.spelling_only(shown, edited, "Fix the spelling mistakes.") == want
    assert prose.spelling_only(shown, edited, "Reword the docs link.") == edited  # not a spelling request
    assert prose.spelling_only(shown, "Gone.\n", "Fix the typos.") == shown  # a lost file comes back whole


def test_the_guard_runs_in_both_modes_on_prose_only(scripted_lm):
    before = "Intro.\n\nInstal it.\n\nSee [docs](https://a.b).\n"
    wrote = "Intro.\n\nInstall it.\n\nSee [documentation](https://a.b).\n"
    results = [edit_file(scripted_lm(wrote + "````\n"), SourceFile("README.md", before), "Fix the typos.",
                         EditOptions(mode=m)) for m in ("rewrite", "spec")]
    assert results[0].new_text == results[1].new_text == before.replace("Instal", "Install")
    code = edit_file(scripted_lm("x = 2\n```\n"), SourceFile("a.py", "x = 1\n"), "Fix the typos.", EditOptions())
    assert code.new_text == "x = 2\n"  # code files: no guard
    # the file's last blank line is put back, but not under --allow-deletions (the output as it is: a review,
    # session 34); a focused section's still is (its end joins the next heading)
    ends = "Intro.\n\nInstal it.\n\n"
    for allow, want in ((False, "Intro.\n\nInstall it.\n\n"), (True, "Intro.\n\nInstall it.\n")):
        got = edit_file(scripted_lm("Intro.\n\nInstall it.\n````\n"), SourceFile("README.md", ends),
                        "Change Instal to Install.", EditOptions(allow_deletions=allow))
        assert got.new_text == want


def test_prompt_version_follows_the_prose_wording(monkeypatch):
    from editllm.bench.reuse import prompt_version

    before = prompt_version()
    monkeypatch.setattr(prose, "WORDING", None)
    assert prompt_version() != before


def test_the_guard_keeps_every_gold_spelling_fix_of_the_bench():
    """On every typo case, the gold edit passes the guard whole (the guard can cost no recall there)."""
    typo = [c for c in _cases() if c["kind"] == "prose-typo"]
    assert typo
    for c in typo:
        assert prose.spelling_only(c["before"], c["after"], c["instruction"]) == c["after"], c["id"]


def test_a_dropped_leading_blank_line_comes_back_on_prose(scripted_lm):
    """Measured: a README chunk starting with a blank line came back without it (any instruction)."""
    before = "\nSee [docs](https://a.b).\n"
    wrote = "See [docs](https://c.d).\n"
    result = edit_file(scripted_lm(wrote + "````\n"), SourceFile("README.md", before), "Point the link to c.d.",
                       EditOptions())
    assert result.new_text == "\n" + wrote
    assert prose.keep_leading_blanks("\n\nA\n", "\nA\n") == "\n\nA\n"
    assert prose.keep_leading_blanks("A\n", "A\n") == "A\n"


SPELLING_README = """# Tool

Install the pacakge with pip, then run the `tool --verbose` command.
Jupyter users can read the tutoriel in the docs; the docs cover colours and behaviour too.
See the [guide](https://example.org/instalation) for the details of the configuraton.

```python
import tool
tool.run(verbosee=True)  # code is not prose: never flagged
```

The details matter: details are the point.
"""


def test_the_spell_checker_flags_prose_typos_only():
    """Issue 19's recall lever: the injected typos of the prose are flagged, and nothing in code blocks,
    inline code or link targets, no capitalised name, no British spelling, no word the text repeats."""
    pytest.importorskip("spellchecker")
    from editllm.editor.spelling import suspects

    assert suspects(SPELLING_README) == ["pacakge", "tutoriel", "configuraton"]


def test_rest_tilde_underlines_are_not_fences():
    """Session 28: read as fences, a reST file's `~~~` section underlines paired up and hid the sections between
    them from the spell checker."""
    pytest.importorskip("spellchecker")
    from editllm.editor.prompt import open_fence
    from editllm.editor.spelling import suspects

    rest = "Tool\n====\n\nUsage\n~~~~~\n\nRun the progam.\n\nNotes\n~~~~~~\n\nA seperate note.\n"
    assert suspects(rest) == ["progam", "seperate"]
    fenced = "Run:\n\n~~~\nx = 1\n~~~~~~~~~~\n\nA seperate typo.\n"  # a fence, closed by a long run after short code
    assert suspects(fenced) == ["seperate"] and open_fence(fenced.split("\n")[:4]) == 2


def test_a_spelling_request_on_prose_names_the_flagged_words_in_the_prompt(tokenizer, monkeypatch):
    pytest.importorskip("spellchecker")
    from editllm.editor import prose, spelling

    asked = rewrite_prompt(tokenizer, "README.md", SPELLING_README, "Fix the spelling mistakes.").text
    assert "does not know these words" in asked and "pacakge, tutoriel, configuraton." in asked
    assert asked.index("Fix the spelling") < asked.index("pacakge, tutoriel")  # the per-request part, after
    head = rewrite_prompt(tokenizer, "README.md", SPELLING_README, "Fix the spelling mistakes.").prefix
    assert "pacakge" not in head  # never in the fixed prefix a saved state holds
    for path, instruction in (("README.md", "Reword the intro."), ("tool.py", "Fix the spelling mistakes.")):
        assert "does not know" not in rewrite_prompt(tokenizer, path, SPELLING_README, instruction).text
    monkeypatch.setattr(spelling, "ALTERNATIVES", True)  # the probe's `+alts` lever: known words one edit away
    asked = rewrite_prompt(tokenizer, "README.md", SPELLING_README, "Fix the spelling mistakes.").text
    assert "pacakge (maybe package), tutoriel (maybe tutorial), configuraton (maybe configuration)." in asked
    monkeypatch.setattr(prose, "HINTS", False)
    assert "does not know" not in rewrite_prompt(tokenizer, "README.md", SPELLING_README, "Fix the typos.").text


def test_spelling_focus_shows_the_model_only_the_lines_of_the_flagged_words():
    """A spelling request on prose is edited line by line where the spell checker flags a word (each line's
    words named), within a named section when there is one; with nothing flagged the model reads the
    whole text as before, and other requests are not touched."""
    pytest.importorskip("spellchecker")
    lines = split_lines(SPELLING_README)
    parts = prosefocus.parts_of("README.md", lines, "Fix the spelling mistakes.")
    assert parts.ranges == ((2, 3), (3, 4), (4, 5)) and parts.why == "spelling: 3 lines"
    assert parts.words == (("pacakge",), ("tutoriel",), ("configuraton",))
    sectioned = "# Intro\n\nAll is well here.\n\n## Usage\n\nRun the progam.\n\n## Notes\n\nA seperate note.\n"
    got = prosefocus.parts_of("README.md", split_lines(sectioned), "Fix the typos in the Usage section.")
    # a short section named is read whole, its flagged words named (a probe, session 42: the one flagged line was
    # shown, and the typo the dictionary cannot flag, `dtae` on another line, never was); "seperate" is elsewhere
    assert got.ranges == ((4, 8),) and got.why == "section: Usage" and got.words == (("progam",),)
    long = sectioned.replace("Run the progam.\n", "Run the progam.\n" + "Then wait.\n" * prosefocus.SMALL_SCOPE)
    got = prosefocus.parts_of("README.md", split_lines(long), "Fix the typos in the Usage section.")
    assert got.ranges == ((6, 7),) and got.words == (("progam",),)  # a long one: the flagged lines alone
    clean = split_lines("# Tool\n\nAll words here are known words.\n")
    assert prosefocus.parts_of("README.md", clean, "Fix the spelling mistakes.") is None
    assert prosefocus.parts_of("README.md", lines, "Reword the intro.") is None
    assert prosefocus.parts_of("tool.py", lines, "Fix the spelling mistakes.") is None


def test_a_spelling_request_with_a_wording_of_its_own_is_no_spelling_request():
    """A probe (session 37): "Fix the typos in the USAGE section: ... but make every "default true" comment say
    "defaults to true" consistently" got spelling focus, which showed the model only the flagged lines, none of
    those comments: "no change proposed". A quoted wording asked for beside the typos turns the spelling focus,
    hints and guard off; "change nothing else" does not."""
    from editllm.editor.prose import asks_spelling, spelling_only

    mixed = 'Fix the typos in the USAGE section, and make every "default true" comment say "defaults to true".'
    assert not asks_spelling(mixed)
    assert asks_spelling("Fix the spelling mistakes. Change nothing else.") and asks_spelling('Fix the typo "teh".')
    assert asks_spelling("Fix the typos, but don't change the author's name") and not asks_spelling(
        "Fix the typos and replace 'colour' with 'color'")
    text = "## USAGE\n\nRun it // default true\n"
    edited = text.replace("default true", "defaults to true")
    assert spelling_only(text, edited, mixed) == edited
    assert spelling_only(text, edited, "Fix the typos.") == text
    assert prosefocus.parts_of("README.md", split_lines(text), mixed).why == "section: USAGE"


def test_a_paragraph_named_by_its_place_is_the_scope():
    """A probe (session 37): "Fix the typo in the first paragraph" showed the model every line of the README holding a
    flagged word, and it also changed `pydantic` in the Features list. A paragraph named by its place ("the first",
    "the last ... of the Usage section", "paragraph 2") is the scope, of a spelling request and of any other; badges,
    headings, lists and code blocks are no paragraphs; moving text between places is not narrowed."""
    text = ("# Tool\n\n[![ci](x.svg)](y)\n\nFetches forecasts and caches them localy,\nso answers are fast.\n\n"
            "## Features\n\n- Typed results built on pydantc models\n\n## Usage\n\n```sh\ntool run\n```\n\n"
            "Run it once.\n\nThen run it twice.\n")
    lines = split_lines(text)
    assert prosefocus.paragraphs(lines) == [(4, 6), (17, 18), (19, 20)]  # a list is no paragraph
    assert prosefocus.parts_of("README.md", lines, "Reword the first paragraph.") == \
        prosefocus.Parts(((4, 6),), "paragraph: first paragraph")
    usage = prosefocus.parts_of("README.md", lines, "Shorten the last paragraph of the Usage section")
    assert usage.ranges == ((19, 20),)
    assert prosefocus.parts_of("README.md", lines, "Expand paragraph 2").ranges == ((17, 18),)
    assert prosefocus.parts_of("README.md", lines, "Move the first paragraph to the end") is None
    assert prosefocus.parts_of("README.md", lines, "Move the first paragraph below the Usage section") is None
    assert prosefocus.parts_of("README.md", lines, "In the Usage section, move the code block below the text") \
        .ranges == ((11, 20),)
    assert prosefocus.parts_of("README.md", lines, "Reword the tenth paragraph") is None
    pytest.importorskip("spellchecker")
    typo = prosefocus.parts_of("README.md", lines, "Fix the typo in the first paragraph")
    assert typo.ranges == ((4, 6),) and typo.words == (("localy",),)  # read whole; not the list's "pydantc"
    assert typo.why == "paragraph: first paragraph"


def test_a_spelling_focus_edit_changes_only_the_flagged_lines_in_both_modes(scripted_lm, monkeypatch, tokenizer):
    """Each flagged line is one request naming its own words; the rest of the file is byte for byte the
    original, and rewrite and spec give the same text."""
    pytest.importorskip("spellchecker")
    fixes = {"pacakge": "package", "tutoriel": "tutorial", "configuraton": "configuration"}
    asked = []

    def regenerate(lm, src, part, instruction, opts, on_progress=None, words=None):  # the model, per part
        asked.append((part, words, rewrite_prompt(tokenizer, src.path, part, instruction, words=words).text))
        for wrong, right in fixes.items():
            part = part.replace(wrong, right)
        return part, DecodeStats(opts.mode, output_tokens=1), "", False

    monkeypatch.setattr("editllm.editor.edit.regenerate", regenerate)
    src = SourceFile("README.md", SPELLING_README)
    results = [edit_file(scripted_lm(""), src, "Fix the spelling mistakes.", EditOptions(mode=m))
               for m in ("rewrite", "spec")]
    expected = SPELLING_README
    for wrong, right in fixes.items():
        expected = expected.replace(wrong, right)
    assert results[0].new_text == results[1].new_text == expected
    assert results[0].focused == ("spelling: 3 lines",)
    assert [a[0] for a in asked[:3]] == split_lines(SPELLING_README)[2:5]
    assert [a[1] for a in asked[:3]] == [("pacakge",), ("tutoriel",), ("configuraton",)]
    assert "are right as they are): tutoriel." in asked[1][2] and "pacakge" not in asked[1][2]  # its own word
    unfocused = edit_file(scripted_lm(""), src, "Fix the spelling mistakes.", EditOptions(focus=False))
    assert unfocused.focused == () and asked[-1][0] == SPELLING_README  # --no-focus: the whole file


@pytest.mark.parametrize("ending", ["", "\n", "\r\n"])
def test_a_spelling_focus_line_keeps_the_files_last_line_ending(scripted_lm, ending):
    """The flagged line may be the file's last, with or without a final newline, in either line ending:
    the edit changes the word and nothing else (no newline gained or lost, none converted)."""
    pytest.importorskip("spellchecker")
    text = f"# Tool{ending or chr(10)}{ending or chr(10)}The pacakge works.{ending}"
    src = SourceFile("README.md", text)
    result = edit_file(scripted_lm("The package works.\n````\n"), src, "Fix the spelling mistakes.", EditOptions())
    assert result.focused == ("spelling: 1 line",)
    assert result.new_text == text.replace("pacakge", "package")


def test_the_spell_checker_reads_markdown_as_commonmark_does():
    """A list item's indented continuation line is prose (an indented code block cannot interrupt a
    paragraph); after a blank line it is code. A code span may be fenced by two backticks."""
    pytest.importorskip("spellchecker")
    from editllm.editor.spelling import suspects

    text = ("# Tool\n\n- The tool makes a REPL easier by setting up\n    modules already imported and creaed.\n\n"
            "    indented_code = 'notaword'  # after a blank line: code\n\n"
            "Run it via ``pytest mytool`` in the dev enivronment.\n")
    assert suspects(text) == ["creaed", "enivronment"]


@pytest.mark.parametrize("output,kept", [
    ("# T\n\nIntro text.\n\nLast line!\n```", "# T\n\nIntro text.\n\nLast line!\n"),  # like the last line
    ("# T\n\nIntro text.\n\nThe last line, rewritten.\n```", None),  # rewritten: cannot be told from cut short
    ("# T\n\nIntro text.\n\nContact us.\n```", None),
    ("# T\n\nIntro text.\n\n\n\n```\n", None),  # the last paragraph never written
    ("# T\n\nIntro, edited.\n```", None),  # stopped a paragraph early
    ("# T\n\n```\n", None),  # a cut-short output ending at a block's opening
])
def test_a_short_fence_at_eos_ends_the_file_only_where_the_file_ends(output, kept):
    shown = "# T\n\nIntro text.\n\nLast line.\n"
    src = SourceFile("README.md", shown)
    if kept is not None:
        assert finish_text(src, output, "````", "eos", 10**6, shown) == kept
    else:
        with pytest.raises(EditError, match="the model closed its output with ```, not the prompt's ````"):
            finish_text(src, output, "````", "eos", 10**6, shown)


@pytest.mark.parametrize("cut", [4, 5, 6])
def test_a_short_fence_after_an_earlier_line_like_the_last_is_not_the_end(cut):
    """A line like the file's last one earlier in the file (`endif()`, a list item of the same shape) used to let a
    cut-short output pass for the whole file (session 25's review: 443 of 4,000 lost lines end to end)."""
    shown = ("# Build\n\n.. code-block:: cmake\n\n  if(A)\n  endif()\n  if(B)\n    # ...\n  endif()\n")
    lines = shown.split("\n")
    output = "\n".join(lines[:cut + 1]) + "\n```"
    with pytest.raises(EditError, match="the model closed its output with ```, not the prompt's ````"):
        finish_text(SourceFile("cmake.rst", shown), output, "````", "eos", 10**6, shown)
    assert finish_text(SourceFile("cmake.rst", shown), shown + "```", "````", "eos", 10**6, shown) == shown


TABLE = "# T\n\n| k | v |\n|---|---|\n| a | 1 |\n| b | 2 |\n| c | 3 |\n"
PARAGRAPH = ("# T\n\nThe first sentence opens the paragraph.\nThe second sentence is the middle one.\n"
             "The final sentence ends the file.\n")
LONG = "# T\n\n" + " ".join(f"word{k}" for k in range(40)) + "\n"


@pytest.mark.parametrize("shown,edited,whole", [
    (TABLE, TABLE.replace("| c | 3 |", "| bb | 22 |"), False),  # a row of the same shape in place of the last
    (TABLE, TABLE.replace("| c | 3 |", "| b | 2 |"), False),  # the row before, copied in place of the last
    (TABLE, TABLE.replace("| b | 2 |\n| c | 3 |", "| b | 2 | x |"), False),  # cut after an edited row
    (TABLE, TABLE.replace("| b | 2 |\n", ""), True),  # a row deleted: the last one is there
    (PARAGRAPH, PARAGRAPH.replace("The second sentence is the middle one.\n", "").replace("file.", "file!"), True),
    (PARAGRAPH, PARAGRAPH.replace("file.", "file!") + "A sentence added at the end.\n", True),
    (PARAGRAPH, PARAGRAPH.replace("The second sentence is the middle one.\nThe final", "The second and final"),
     True),  # two lines merged into the last
    (LONG, LONG.replace("word20", "WORD20"), True),  # a long line: difflib's junk heuristic once sank its ratio
])
def test_a_short_fence_ends_the_file_where_the_output_holds_its_last_line(shown, edited, whole):
    """The output must hold the file's last line, as it is or a little edited, and no more like another line
    the file has left there (a review of session 26's first rule: a line of the same shape in place of the last
    row passed; deleting a line and editing the last was refused)."""
    src, output = SourceFile("README.md", shown), edited + "```"
    if whole:
        assert finish_text(src, output, "````", "eos", 10**6, shown) == edited
    else:
        with pytest.raises(EditError, match="cut short"):
            finish_text(src, output, "````", "eos", 10**6, shown)


def test_the_models_words_after_a_fence_of_its_own_never_reach_a_code_file():
    """A review: a Rust file holding a doc example (so a four-backtick wrapper), its last function removed, then
    "```", the model's sentence and the real fence. The lines before the short fence are not like the file's
    last, so nothing was cut and the sentence was written into lib.rs."""
    shown = ("/// Adds one.\n///\n/// ```\n/// assert_eq!(lib::inc(1), 2);\n/// ```\npub fn inc(x: i32) -> i32 {\n"
             "    x + 1\n}\n\npub fn dec(x: i32) -> i32 {\n    x - 1\n}\n\n"
             "pub fn twice(x: i32) -> i32 {\n    x * 2\n}\n")
    edited = shown.replace("\npub fn twice(x: i32) -> i32 {\n    x * 2\n}\n", "")
    src = SourceFile("src/lib.rs", shown)
    assert finish_text(src, edited + "```\n\nI removed `twice`.\n````\n", "````", "stop", 10**6, shown) == edited
    limited = shown + "\npub const LIMIT: u32 = 10;\n"
    with pytest.raises(EditError, match="ends in a code block the file does not have"):  # nothing like its last line
        finish_text(SourceFile("src/lib.rs", limited), shown + "```\nDone.\n````\n", "````", "stop", 10**6, limited)


@pytest.mark.parametrize("closing", ["```\n````\n", "```\nI removed it.\n````\n", "```\n```\n````\n"])
def test_a_fence_of_its_own_left_open_in_a_prose_file_is_refused(closing):
    """A short fence the model wrote before its real one, not cut (the lines before it do not end as the file
    does), used to go into the file as a code block that never closes."""
    shown = "# T\n\n- one\n- two\n- three\n"
    output = "# T\n\n- one\n- two\n" + closing
    with pytest.raises(EditError, match="ends in a code block the file does not have"):
        finish_text(SourceFile("README.md", shown), output, "````", "stop", 10**6, shown)
    ok = "# T\n\n- one\n- two\n- three\n" + closing
    assert finish_text(SourceFile("README.md", shown), ok, "````", "stop", 10**6, shown) == shown


@pytest.mark.parametrize("shown,output", [
    # the review's cut points: a bullet list's last item, a table's rows after its header
    ("# Format\n\nAs follows:\n\n* Lines that do not start in whitespace are wrapped.\n"
     "* Lines that start in whitespace are preserved.\n",
     "# Format\n\nAs follows:\n\n* Lines that do not start with whitespace are wrapped.\n```"),
    ("| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n", "| a | b |\n|---|---|\n```"),
    # inside the last block, at a line like its last one (`  }` above `}`)
    ("Config:\n\n```json\n{\n  \"server\": {\n    \"port\": 8080\n  },\n  \"debug\": false\n}\n```\n",
     "Config:\n\n```json\n{\n  \"server\": {\n    \"port\": 8080\n  }\n```"),
])
def test_an_output_cut_short_is_never_taken_for_the_whole_file(shown, output):
    with pytest.raises(EditError, match="may be cut short|and stopped"):
        finish_text(SourceFile("README.md", shown), output, "````", "eos", 10**6, shown)


def test_a_block_added_before_a_section_ending_in_a_block_is_taken():
    """Session 25's probe: "add an Installation section just before '## A Simple Example'", the section shown
    alone; the model wrote the new section with its bash block, then the section, and stopped after its
    closing fence. The output's last block is the file's; the block it adds is the edit's (refused before)."""
    shown = "## A Simple Example\n\n```python\nimport click\n```\n"
    output = "## Installation\n\n```bash\npip install click\n```\n\n" + shown
    assert finish_text(SourceFile("README.md", shown), output, "````", "eos", 10**6, shown) == output
    # the section's blank lines before the next heading: the model stopped before them, they stay
    assert finish_text(SourceFile("README.md", shown + "\n\n"), output, "````", "eos", 10**6, shown + "\n\n") \
        == output + "\n\n"


def test_a_last_code_block_edited_in_place_ends_the_output():
    """A probe (session 37): section focus showed a README's USAGE section, which ends with a js example; the edit
    reworded a comment in the example and the model stopped after its closing line: refused as maybe cut short. The
    same opening line and as many lines, most unchanged, is the file's block edited; one with fewer lines is not."""
    shown = "## Usage\n\n```js\nconst v = require('v')\n// default true\nv({ tag: true })\n```\n"
    edited = shown.replace("default true", "defaults to true")
    assert finish_text(SourceFile("README.md", shown), edited, "````", "eos", 10**6, shown) == edited
    cut = "## Usage\n\n```js\nconst v = require('v')\n```\n"
    with pytest.raises(EditError, match="may close the file's last code block or the output itself"):
        finish_text(SourceFile("README.md", shown), cut, "````", "eos", 10**6, shown)
    rewritten = "## Usage\n\n```js\nimport v from 'v'\n// defaults on\nv({})\n```\n"  # most lines new: not told
    with pytest.raises(EditError, match="may close the file's last code block or the output itself"):
        finish_text(SourceFile("README.md", shown), rewritten, "````", "eos", 10**6, shown)


def test_text_added_before_the_files_last_fence_line_is_refused_not_put_in_the_block():
    """The probe: "add a section at the end" of a README that ends in a code block; the model wrote the
    section before the block's closing line and stopped. That line may close the block or the output."""
    before = "# T\n\nOutput:\n\n```\nresult\n```\n"
    output = "# T\n\nOutput:\n\n```\nresult\n### Limitations\n\nPlain text only.\n```"
    with pytest.raises(EditError, match="may close the file's last code block or the output itself"):
        finish_text(SourceFile("README.md", before), output, "````", "eos", 10**6, before)
    assert finish_text(SourceFile("README.md", before), before, "````", "eos", 10**6, before) == before


@pytest.mark.parametrize("path,lang", [("README", "text"), ("docs/CHANGELOG", "text"), ("LICENSE", "text"),
                                       ("Makefile", ""), ("readme.md", "markdown"), ("README.py", "python"),
                                       ("scripts/install", ""), ("bin/news", ""),  # scripts by those names
                                       ("LICENSE-MIT", "text"), ("docs.markdown", "markdown"), ("a.adoc", "asciidoc"),
                                       # a generator (session 31): a 4-line paragraph of LICENSE.APACHE went unchecked
                                       ("LICENSE.APACHE", "text"), ("COPYING.LIB", "text"), ("TODO.sh", "bash"),
                                       ("Todo.vue", ""), ("INSTALL.ps1", ""),  # a review: a language's suffix
                                       # a probe (session 35): a file type's suffix after a prose word and a dash
                                       ("News-feed.scss", ""), ("Todo_list.vue", ""), ("CHANGES_1.x", "text")])
def test_prose_files_known_by_name_alone_are_prose(path, lang):
    """An extension-less README used to get none of prose's handling (its fence, wording, spelling help)."""
    from editllm.editor.prompt import language

    assert language(path) == lang


def test_a_word_spelt_out_is_no_spelling_fix():
    """A real probe: asked to fix the spelling of a Debian README, the model also wrote "system administrator" for
    "system admin" and "configuration file" for dpkg's "conffile"; both passed the guard as similar words."""
    from editllm.editor.prose import spelling_only

    shown = "Ask your system admin.\nUse dpkg's conffile mechanism.\nIt is informitive.\n"
    edited = "Ask your system administrator.\nUse dpkg's configuration file mechanism.\nIt is informative.\n"
    assert spelling_only(shown, edited, "fix the spelling mistakes") == \
        "Ask your system admin.\nUse dpkg's conffile mechanism.\nIt is informative.\n"


def test_spelling_focus_says_how_much_the_model_read(scripted_lm, monkeypatch):
    """A real probe: typos in short words on lines the spell checker flags nothing on were never shown to the
    model, and nothing said so; the user is told, and how to have the whole file read."""
    pytest.importorskip("spellchecker")
    from editllm.api import EditSession
    def regenerate(lm, src, part, instruction, opts, on_progress=None, words=None):
        return part.replace("pacakge", "package"), DecodeStats(opts.mode, output_tokens=1), "", False

    monkeypatch.setattr("editllm.editor.edit.regenerate", regenerate)
    notes: list[str] = []
    session = EditSession(scripted_lm(""), log=notes.append)
    session.edit_source(SourceFile("README.md", SPELLING_README), "Fix the spelling mistakes.")
    assert ("README.md: note: the model read only the 3 lines holding words a spell checker flags; --no-focus has "
            "it read the whole file") in notes


@pytest.mark.parametrize("path", ["theme.toml", "src/lib.rs", "app.js", "run.sh", "README.md"])
def test_the_models_words_after_the_whole_file_are_refused(path):
    """A generator (session 27) over real files: the whole file, then "This change renames ..." and the closing
    fence, with no fence line of the model's own between, kept that line in the file in every language but Python
    (100 % of outputs); so it did when the edit changed the file's last line too."""
    shown = "[palette]\ntx = 1\nma = 2\n"
    src = SourceFile(path, shown)
    said = ["I renamed `palette` as asked.", "Here is the updated file."]
    said += [] if path.endswith(".md") else ["This change renames `palette` to `palette2`.", "The file is done now."]
    for line in said:
        for edited in (shown.replace("[palette]", "[palette2]"), shown.replace("ma = 2", "ma = 3")):
            with pytest.raises(EditError, match=r"ends in words of the model's own after the file's last line \('"):
                finish_text(src, edited + f"\n{line}\n````\n", "````", "stop", 10**6, shown, "Rename palette")
    edited = shown + "Object.assign(a, b, c);\n"  # code, or a line of the file's kind: not the model's words
    assert finish_text(src, edited + "````\n", "````", "stop", 10**6, shown, "add a line") == edited


def test_a_sentence_added_at_the_end_is_the_files_when_asked_or_in_prose():
    """A review (session 27): a changelog's "This version requires Rust 1.15 or newer.", "The changes before 0.4.0
    are ...", a licence's sentence and an instruction naming `appendIfNotPresent` were taken for the model's words."""
    shown = "x = 1\ny = 2\n"
    note = shown + "See the docs for more details.\n"
    with pytest.raises(EditError, match="words of the model's own"):
        finish_text(SourceFile("conf.toml", shown), note + "````\n", "````", "stop", 10**6, shown, "set y to 2")
    for ask in ("add a sentence at the end", "call appendIfNotPresent"):
        expected = None if ask.startswith("call") else note
        if expected is None:
            with pytest.raises(EditError, match="words of the model's own"):
                finish_text(SourceFile("conf.toml", shown), note + "````\n", "````", "stop", 10**6, shown, ask)
        else:
            assert finish_text(SourceFile("conf.toml", shown), note + "````\n", "````", "stop", 10**6, shown,
                               ask) == note
    for path in ("CHANGELOG.md", "UNLICENSE", "NOTES.md"):  # prose, or a file of no known language
        for line in ("This version requires Rust 1.15 or newer.", "The changes before 0.4.0 are in git.",
                     "See the docs for more details."):
            assert finish_text(SourceFile(path, shown), shown + line + "\n````\n", "````", "stop", 10**6, shown,
                               "add a line about it") == shown + line + "\n"


def test_a_line_of_code_or_a_comment_that_says_as_asked_is_the_files():
    """The "as asked" wording counts only in a sentence: a call's string or a comment in code is the file's."""
    shown = "def f():\n    return 1\n"
    for line in ('print("Saved as requested")', "# Updated as requested.", "// I renamed it as asked."):
        edited = shown + line + "\n"
        assert finish_text(SourceFile("m.py", shown), edited + "````\n", "````", "stop", 10**6, shown, "log it") \
            == edited
    with pytest.raises(EditError, match="words of the model's own"):
        finish_text(SourceFile("m.py", shown), shown + "The function was renamed as requested.\n````\n", "````",
                    "stop", 10**6, shown, "rename it")


def test_the_models_notes_and_lists_after_code_are_its_own_and_a_readmes_hope_is_the_files():
    """A review (session 27): "**Explanation:** ...", "Changes made:" with a list, "Note: ...", "Hope this helps!"
    and a sentence quoting `Option<i32>` were written into code files; a README ending "I hope you find it useful!"
    was refused when its last line was edited."""
    shown = "export function add(a, b) {\n  return a + b;\n}\n"
    src = SourceFile("add.js", shown)
    for tail in ("**Explanation:** `b` now defaults to 0.", "Changes made:\n- Gave `b` a default\n- Kept the rest",
                 "Note: the comment follows the conventions.", "Hope this helps!",
                 "The function now returns `Option<i32>` instead of panicking."):
        with pytest.raises(EditError, match="words of the model's own"):
            finish_text(src, shown + "\n" + tail + "\n````\n", "````", "stop", 10**6, shown, "default b to 0")
    readme = "# Tool\n\nI hope you find it usefull!\n"
    fixed = readme.replace("usefull", "useful")
    assert finish_text(SourceFile("README.md", readme), fixed + "````\n", "````", "stop", 10**6, readme,
                       "fix the typo") == fixed
    items = "steps:\n  - run: test\n"  # a list the file itself ends in is the file's
    assert finish_text(SourceFile("ci.yml", items), items + "  - run: lint\n````\n", "````", "stop", 10**6, items,
                       "add a lint step") == items + "  - run: lint\n"


def test_a_section_asked_away_and_kept_is_noted(tmp_path, monkeypatch, scripted_lm):
    """A probe (session 37): "Remove the Features section" had the model rename the heading and keep the list, exit 0
    without a word."""
    from editllm.api.session import EditSession

    text = "# Tool\n\nIt runs.\n\n## Features\n\n- fast\n- small\n\n## Usage\n\nRun it.\n"
    lines = split_lines(text)
    renamed = text.replace("## Features", "## Documentation")
    assert prosefocus.section_kept("README.md", lines, renamed, "Remove the Features section") == ("Features", 2, 2)
    gone = text.replace("## Features\n\n- fast\n- small\n\n", "")
    assert prosefocus.section_kept("README.md", lines, gone, "Remove the Features section") is None
    assert prosefocus.section_kept("README.md", lines, renamed, "Remove the second bullet of the Features section") \
        is None  # something in it goes, not the section
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text(text)
    notes: list[str] = []
    EditSession(scripted_lm(renamed + "```\n"), focus=False, log=notes.append).edit(
        ["README.md"], "Remove the Features section")
    assert "README.md: note: the instruction asks to remove the Features section, but the edit keeps 2 of its 2 " \
           "lines" in notes, notes
