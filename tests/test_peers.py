"""The bench's llama.cpp peers (issue 21) on the tiny F32 GGUF: each gives rewrite's exact output when fed
editllm's prompt ids, repeats pair and report medians, each case gets its limit, and a text that parts
from rewrite's is shown with rewrite's top-2 logit gap there."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from editllm.bench import runner
from editllm.bench.cases import Case
from editllm.bench.peers import STOP_STRINGS, Peers, cut, server_generate
from editllm.bench.runner import first_difference, kernel_bench, run_bench
from editllm.editor.decode import Decoder
from editllm.editor.edit import EditOptions

IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + list(
    range(1000, 1060)
)
PEERS = ("server", "server-ngram", "llamacpp-greedy")
NEWLINE = 198
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"


@pytest.fixture(scope="module")
def llama_lm(tiny_gguf, tmp_path_factory):
    """The tiny GGUF loaded as `editllm --engine llamacpp` loads a model."""
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


@pytest.fixture(scope="module")
def peers(tiny_gguf, llama_server):
    """Greedy through the session's `llama_server`; the n-gram flavour and the in-process Llama started here."""
    p = Peers(tiny_gguf, threads=1, servers={"server": llama_server})
    yield p
    p.close()


def test_cut_stops_where_our_decoder_would():
    eos = {9}

    def stop(out):
        return out[-2:] == [5, 6]

    assert cut([1, 5, 6, 7, 8], stop, eos, 100) == ([1, 5, 6], "stop")
    assert cut([1, 2, 9, 5, 6], stop, eos, 100) == ([1, 2], "eos")  # EOS is not output
    assert cut([1, 2, 3, 4], stop, eos, 3) == ([1, 2, 3], "max_new_tokens")
    assert cut([1, 2], stop, eos, 3) == ([1, 2], "")  # the peer stopped short of every reason


def test_a_fence_like_stop_that_is_not_ours_continues_the_request():
    """The server stops at any line starting with ``` (a 4-backtick fence, a fence inside Markdown);
    the request goes on from there, its own cache kept, until our stop says the file ended."""
    sent = []
    answers = [{"tokens": [1, 2, 3], "stop_type": "word", "timings": {"predicted_n": 3, "prompt_ms": 100.0}},
               {"tokens": [4, 5, 6, 7], "stop_type": "word", "timings": {"predicted_n": 4, "prompt_ms": 10.0}}]

    class FakeServer:
        def post(self, path, body):
            sent.append((path, body))
            return answers[len(sent) - 1]

    generate = server_generate(FakeServer(), "server", eos={0})
    out, stats = generate(None, [100, 101], 50, lambda ids: ids[-1] == 5)
    assert out == [1, 2, 3, 4, 5] and stats.stop_reason == "stop" and stats.output_tokens == 5
    assert [b["prompt"] for _, b in sent] == [[100, 101], [100, 101, 1, 2, 3]]
    assert [b["cache_prompt"] for _, b in sent] == [False, True]  # no cache carried from another request
    assert [b["n_predict"] for _, b in sent] == [50, 47]
    assert sent[0][1]["stop"] == STOP_STRINGS and sent[0][1]["temperature"] == 0 and sent[0][1]["return_tokens"]
    assert stats.prefill_seconds == pytest.approx(0.11)


@pytest.mark.parametrize("mode", PEERS)
def test_each_peer_hook_gives_our_greedy_ids(llama_lm, peers, mode):
    """Given editllm's ids and our stop, a peer outputs exactly what our own greedy loop outputs."""
    def stop(out):  # a stop point inside the output: the peer must be cut there, not where it stopped
        return len(out) >= 17

    ours, _ = Decoder(llama_lm.engine).run(IDS, 40, stop)
    theirs, stats = peers.hook(mode, llama_lm.engine.eos)(llama_lm, IDS, 40, stop)
    assert len(ours) == 17  # the peer went on (to 40 tokens or its stop string) and was cut at our stop
    assert theirs == ours and stats.output_tokens == 17 and stats.stop_reason == "stop"
    assert stats.prompt_tokens == len(IDS) and stats.forwards >= 1


@pytest.fixture
def short_files(monkeypatch):
    """The tiny model writes newlines forever and never a closing fence: end its 'file' after 5 lines, for
    our decoder and the peers alike (the stop callable and the cut both come from `end_of_file`)."""
    import editllm.editor.edit as edit

    def five_lines(output: str, fence: str, shown: str | None = None, final: bool = True,
                   prose: bool = False) -> int | None:
        return 5 if output.startswith("\n" * 5) else None

    monkeypatch.setattr(edit, "end_of_file", five_lines)
    # the stop check looks only at tokens that hold the fence's character, which only the real rule needs:
    # this one ends at a newline, so every token is looked at
    real = edit.TailStop
    monkeypatch.setattr(edit, "TailStop", lambda tokenizer, matches, chars=None, pending=None: real(tokenizer, matches))


def _case() -> Case:
    return Case("t1", "m.py", "Fix the bug in `add`.", BUGGY, None, [], "bugfix")


def test_every_peer_mode_runs_a_case_and_gives_rewrites_text(llama_lm, peers, short_files):
    modes = ["rewrite", "spec", *PEERS, "server-ngram-whole"]
    results = run_bench(llama_lm, [_case()], modes, EditOptions(max_new_tokens=48, allow_deletions=True, focus=False),
                        repeat=2, peers=peers)
    recs = {r["mode"]: r for r in results["records"]}
    assert recs["rewrite"]["error"] is None and recs["rewrite"]["output_tokens"] == 5
    for mode in ("spec", *PEERS):
        assert recs[mode]["error"] is None, recs[mode]["error"]
        assert recs[mode]["identical_to_rewrite"] is True and recs[mode]["text"] == recs["rewrite"]["text"]
        assert recs[mode]["output_tokens"] == 5 and recs[mode]["prompt_tokens"] == recs["rewrite"]["prompt_tokens"]
    whole = recs["server-ngram-whole"]
    assert whole["error"] is None and whole["focused"] == []
    assert whole["identical_to_rewrite"] is None  # another prompt: no claim to rewrite's text
    for rec in recs.values():  # --repeat 2: both runs kept, the median reported
        assert len(rec["seconds_runs"]) == 2 and rec["seconds"] == round(statistics.median(rec["seconds_runs"]), 3)
        assert rec["same_text_every_run"] is True
        assert rec["limit_seconds"] > 0 and rec["limit_ratio"] == round(rec["seconds"] / rec["limit_seconds"], 3)
    summary = results["summary"]["code"]
    assert summary["server"]["limit_ratio"] > 0 and summary["server"]["identical_to_rewrite"] == 1.0
    assert results["repeat"] == 2


def test_a_peer_that_parts_from_rewrite_is_shown_with_the_top2_gap(llama_lm, peers, short_files, monkeypatch):
    """A forced mismatch (the peer's third token replaced): the record names the token where the texts
    part and rewrite's top-2 logit gap there, recomputed on the engine; the report lists it."""
    real_hook = peers.hook

    def altered(mode, eos):
        generate = real_hook(mode, eos)

        def run(lm, ids, max_new, stop):
            out, stats = generate(lm, ids, max_new, stop)
            return out[:2] + [220] + out[3:], stats  # a space where the model wrote a newline

        return run if mode == "server" else generate

    monkeypatch.setattr(peers, "hook", altered)
    results = run_bench(llama_lm, [_case()], ["rewrite", "server", "llamacpp-greedy"],
                        EditOptions(max_new_tokens=48, allow_deletions=True, focus=False), peers=peers)
    recs = {r["mode"]: r for r in results["records"]}
    assert recs["llamacpp-greedy"]["identical_to_rewrite"] is True and "first_difference" not in recs["llamacpp-greedy"]
    d = recs["server"]["first_difference"]
    assert recs["server"]["identical_to_rewrite"] is False
    assert (d["token"], d["rewrite_token"], d["other_token"]) == (2, NEWLINE, 220)
    engine = llama_lm.engine  # the gap, recomputed independently: prompt + the 2 common tokens, one forward
    engine.reset()
    prompt_len = recs["rewrite"]["prompt_tokens"]
    trace: dict = {}
    opts = EditOptions(max_new_tokens=48, allow_deletions=True, focus=False)
    runner.run_case_mode(llama_lm, _case(), "rewrite", opts, trace=trace)
    assert len(trace["prompt"]) == prompt_len
    engine.reset()
    row = np.sort(engine.forward(trace["prompt"] + [NEWLINE] * 2, keep=1)[0].copy())
    assert d["gap"] == pytest.approx(float(row[-1] - row[-2]), rel=1e-3)
    assert d["near_tie"] is (d["gap"] < 0.1) and d["gap"] > 0.1  # the scaled head leaves no near-ties
    summary = results["summary"]["code"]["server"]
    assert summary["mismatches"] == 1 and summary["near_ties"] == 0
    from editllm.bench.report import markdown

    assert "server (t1): token 2, gap" in markdown(results)


def test_a_parting_inside_a_longer_token_is_placed_at_that_token(llama_lm):
    """Rewrite wrote `]\\n` then the fence, spec `]\\n\\n` then the fence: the texts agree on `]\\n`, but
    the choices part at that token (what a text comparison misplaced one token later, session 6)."""
    tok = llama_lm.tokenizer
    head = tok("return [b for b in blocks", add_special_tokens=False)["input_ids"]
    one, two, fence = (tok(t, add_special_tokens=False)["input_ids"][0] for t in ("]\n", "]\n\n", "```"))
    assert tok.decode([one]) == "]\n" and tok.decode([two]) == "]\n\n"
    d = first_difference(llama_lm, {"prompt": IDS, "out": head + [one, fence]}, {"out": head + [two, fence]})
    assert d["token"] == len(head) and d["rewrite_token"] == one and d["other_token"] == two
    assert first_difference(llama_lm, {"prompt": IDS, "out": head}, {"text": "no ids"}) is None


def test_the_bench_records_every_local_modes_ids(llama_lm):
    """spec and rewrite run as the product runs them, and each hands its prompt and output ids to the trace."""
    case = Case("t1", "m.py", "Fix it.", "def f(x):\n    return x\n", None, [], "edit")
    for mode in ("rewrite", "spec"):
        trace: dict = {}
        rec = runner.run_case_mode(llama_lm, case, mode, EditOptions(max_new_tokens=24), None, trace)
        assert rec["error"] is None or "did not finish" in rec["error"]
        assert trace["prompt"] and trace["out"] and len(trace["out"]) <= 24


def test_kernel_table_on_the_llamacpp_engine(llama_lm):
    rows = kernel_bench(llama_lm, sizes=(1, 8), context=16, max_steps=4)
    assert [r["tokens"] for r in rows] == [1, 8] and all(r["one_forward_ms"] > 0 for r in rows)
    assert rows[1]["estimated"] is True and rows[0]["estimated"] is False
    assert llama_lm.engine.length == 0  # the cache is left empty for the next run


def test_peer_settings_name_the_flags_and_llama_cpp_version(peers):
    got = peers.settings(["rewrite", "server", "server-ngram"])
    assert got["server_flags"]["server-ngram"][-6:] == ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n",
                                                        "4", "--spec-ngram-simple-size-m", "32"]
    assert got["llama.cpp"] and got["llama-cpp-python"] and got["request"]["cache_prompt"] is False
    assert peers.settings(["rewrite", "spec"]) == {}


def test_bench_command_runs_the_peers_and_records_their_settings(tmp_path, tiny_gguf, llama_server, monkeypatch):
    """`editllm bench --engine llamacpp --mode rewrite,server --repeat 2`: the server it starts is stopped at
    the end, and results.json records the repeats, the server's flags and llama.cpp's version."""
    import json

    from editllm.cli.main import app
    from editllm.editor.llamaserver import server_binary
    from typer.testing import CliRunner

    monkeypatch.setenv("EDITLLM_LLAMA_SERVER", str(server_binary(build=False)))  # the cached build, not a new one
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "c1", "path": "m.py", "instruction": "Fix the bug in `add`.",
                                 "before": BUGGY}) + "\n")
    res = CliRunner().invoke(app, ["bench", "--model", str(tiny_gguf), "--engine", "llamacpp", "--cases", str(cases),
                                   "--mode", "rewrite,server", "--repeat", "2", "--max-new-tokens", "4",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["settings"]["repeat"] == 2 and saved["engine"] == "llamacpp"
    peers = saved["settings"]["peers"]
    assert peers["server_flags"] == {"server": ["-c", "8192", "-np", "1"]} and peers["llama.cpp"]
    assert [len(r["seconds_runs"]) for r in saved["records"]] == [0, 0]  # the random model never closes the file
    assert all("did not finish" in r["error"] for r in saved["records"])
