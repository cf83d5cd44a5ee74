"""editllm through a REAL llama-server (the tiny F32 GGUF, its head scaled so greedy has no near-ties):
rewrite equals the in-process llama.cpp engine, spec runs the server's n-gram speculation and says so, the
client-driven copy loop writes local copy mode's program, and many files survive the server being killed."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LlamaServer
from editllm.editor.source import source_from_text
from editllm.grammar.program import Copy, parse
from editllm.remote.client import ServerClient, ServerError
from editllm.remote.gbnf import int_range, request_grammar
from editllm.remote.modes import RemoteModel, edit_remote

FILES = {
    "stats.py": "import math\n\n\ndef average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                "    return total / (len(xs) - 1)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n",
    "notes.md": "# Notes\n\nSome text with a tpyo.\n\n```python\nprint('hi')\n```\n\nMore text here.\n",
    "empty_end.py": "x = 1\ny = 2",
}
INSTRUCTION = {"stats.py": "Fix the bug in average."}


def outcome(fn):
    """What an edit gave: its raw output, text and token count, or its one-line error (a random model may
    never close the file; that must be the same too)."""
    try:
        res = fn()
        return res.raw_output, res.new_text, res.stats.output_tokens, res.fallback
    except EditError as exc:
        return type(exc).__name__, str(exc)


# --- the grammar, without a server ------------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi", [(1, 9), (1, 10), (5, 123), (37, 1000), (100, 199), (8, 8), (9, 10)])
def test_int_range_states_exactly_the_integers_from_lo_to_hi(lo, hi):
    as_regex = int_range(lo, hi).replace('"', "").replace(" ", "")
    assert [n for n in range(1500) if re.fullmatch(as_regex, str(n))] == list(range(lo, hi + 1))


def test_request_grammar_offers_only_lines_after_the_last_copy():
    g = request_grammar(12, after=7)
    assert '"8-"' in g and '"7-"' not in g and "root ::= gen* copy?" in g
    assert request_grammar(12, after=12).startswith("root ::= gen*\n")  # nothing left to copy
    big = request_grammar(400, after=10)  # past EXACT_PAIRS: I and J each an exact range
    assert "copy ::=" in big and len(big) < 5000


# --- fixtures: servers and the local engine on the same tiny GGUF ------------------------------------------

@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("editllm-cache")


@pytest.fixture(scope="module")
def llama_lm(tiny_gguf, cache):
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(cache))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


@pytest.fixture(scope="module")
def remote(llama_server, llama_lm):
    return RemoteModel(ServerClient(llama_server.url), llama_lm.tokenizer, "tiny")


@pytest.fixture(scope="module")
def spec_server(tiny_gguf):
    """The same server with llama.cpp's n-gram speculation (a server setting, not a request field)."""
    with LlamaServer(tiny_gguf, ["-c", "2048", "-np", "1", "--no-warmup", "--spec-type", "ngram-simple",
                                 "--draft-max", "16"], threads=1) as server:
        yield server


# --- rewrite, spec, copy ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("focus", [True, False])
def test_rewrite_through_the_server_equals_the_local_engine(remote, llama_lm, name, focus):
    from editllm.editor.edit import EditOptions, edit_file

    src = source_from_text(FILES[name].encode(), name)
    opts = EditOptions(mode="rewrite", max_new_tokens=96, focus=focus)
    instruction = INSTRUCTION.get(name, "Fix the typo.")
    local = outcome(lambda: edit_file(llama_lm, src, instruction, opts))
    served = outcome(lambda: edit_remote(remote, src, instruction, opts))
    assert served == local


@pytest.mark.parametrize("name", sorted(FILES))
def test_spec_runs_the_servers_ngram_speculation_and_says_so(spec_server, remote, llama_lm, name):
    """spec's request is rewrite's; the server's speculation is lossless under greedy, and the stats say
    which speculation ran (a server setting, read from /props)."""
    from editllm.editor.edit import EditOptions

    spec = RemoteModel(ServerClient(spec_server.url), llama_lm.tokenizer, "tiny")
    assert spec.info.speculative and "ngram" in spec.info.speculative and remote.info.speculative is None
    src = source_from_text(FILES[name].encode(), name)
    instruction = INSTRUCTION.get(name, "Fix the typo.")
    plain = outcome(lambda: edit_remote(remote, src, instruction, EditOptions(mode="rewrite", max_new_tokens=96)))
    ran = []
    got = outcome(lambda: ran.append(edit_remote(spec, src, instruction, EditOptions(mode="spec",
                                                                                   max_new_tokens=96))) or ran[0])
    assert got == plain
    if ran:
        assert ran[0].stats.speculative == spec.info.speculative
        assert ran[0].stats.as_dict()["speculative"] == spec.info.speculative


def test_the_copy_loop_writes_local_copy_modes_program(remote, llama_lm):
    """Each request writes up to the next copy tag; the client appends the copied lines' ids, the ones local
    copy mode feeds, so the server sees what the local engine saw: the same program, which resolves."""
    from editllm.editor.copymode import ProgramFailed, run_copy
    from editllm.editor.edit import budget
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import run_copy_loop

    for name in ("stats.py", "empty_end.py"):
        src = source_from_text(FILES[name].encode(), name)
        instruction = INSTRUCTION.get(name, "Fix the typo.")
        prompt, resolver, stats = copy_parts(remote, src, instruction)
        max_tokens = min(64, budget(llama_lm, src, len(prompt), None))
        try:
            local_text, local = run_copy(llama_lm, name, src.text, instruction, max_tokens, lines=src.lines)
            local_program = local.program
        except ProgramFailed as exc:
            local_text, local_program = None, str(exc)
        try:
            text = run_copy_loop(remote, prompt, resolver, stats, max_tokens)
            program = stats.program
        except ProgramFailed as exc:
            text, program = None, str(exc)
        assert program == local_program
        assert text == local_text
        if text is not None:  # it resolves, and each copy went in as the resolver's ids
            assert resolver.text(parse(program), monotonic=True) == text
            assert stats.requests == stats.spans + 1


@pytest.mark.parametrize("after", [0, 3, 9])
def test_what_the_server_writes_under_a_request_grammar_obeys_it(remote, after):
    """Whatever the model picks, the server's grammar lets through only gen spans and one copy of lines
    after `after` (the request's rule); the copy loop relies on that."""
    ids = remote.tokenizer("Write a program.\n", add_special_tokens=False)["input_ids"]
    answer = remote.client.complete(ids, 48, grammar=request_grammar(12, after))
    text = remote.tokenizer.decode(answer["tokens"], skip_special_tokens=False)
    text = text.replace("<|im_end|>", "").replace("<|endoftext|>", "")
    if answer["stop_type"] == "limit":  # cut mid-span: what was written is a prefix of a legal program
        assert text == "" or text.startswith("<")
        return
    ops = parse(text)
    copies = [op for op in ops if isinstance(op, Copy)]
    assert len(copies) <= 1 and all(after < c.i <= c.j <= 12 for c in copies)
    assert not copies or ops[-1] == copies[0]


def test_a_server_with_another_tokenizer_is_refused(llama_server):
    class Other:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [1, 2, 3]}

    with pytest.raises(ServerError, match="another tokenizer"):
        ServerClient(llama_server.url).check_tokenizer(Other())


def test_requests_carry_the_adapter_scale_only_when_the_server_has_one(remote, monkeypatch):
    """`--lora FILE --lora-init-without-apply`: scale 1 for program requests, 0 for rewrite/spec/fallback."""
    sent = []
    monkeypatch.setattr(remote.client, "request", lambda path, body=None, timeout=None: sent.append(body) or
                        {"tokens": [], "stop_type": "eos"})
    remote.client.complete([1, 2], 4, lora=remote.scale(True))
    assert "lora" not in sent[-1]
    monkeypatch.setattr(remote, "lora", True)
    remote.client.complete([1, 2], 4, lora=remote.scale(True))
    remote.client.complete([1, 2], 4, lora=remote.scale(False))
    assert [b["lora"] for b in sent[-2:]] == [[{"id": 0, "scale": 1.0}], [{"id": 0, "scale": 0.0}]]


def test_an_unreachable_server_is_one_transient_error():
    with pytest.raises(ServerError) as info:
        ServerClient("http://127.0.0.1:9", timeout=5).info()
    assert info.value.transient and "\n" not in str(info.value)


def test_cli_fix_through_the_server(llama_server, tiny_gguf, cache, tmp_path, monkeypatch):
    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stats.py").write_text(FILES["stats.py"])
    res = CliRunner().invoke(app, ["fix", "stats.py", "Fix the bug in average.", "--model", str(tiny_gguf),
                                   "--server", llama_server.url, "--mode", "rewrite", "--max-new-tokens", "64",
                                   "--journal", str(tmp_path / "j"), "--stats", "--quiet"])
    assert res.exit_code in (0, 2), res.output
    lines = res.stderr.strip().splitlines()
    stats = json.loads(next(line for line in lines if line.startswith("{")))
    assert stats["engine"] == "llama-server" and stats["server"] == llama_server.url
    if res.exit_code == 2:  # a random model may never close the file: listed with its reason
        assert any(line.startswith("editllm: failed stats.py:") for line in lines)


# --- many files, the server killed mid-run -----------------------------------------------------------------

def test_many_files_survive_the_server_killed_and_the_rerun_finishes_only_the_missing(
        tiny_gguf, cache, tmp_path, monkeypatch):
    import editllm.editor.llamaserver as llamaserver
    from editllm.api import EditSession, Journal

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    names = [f"m{k:02d}.py" for k in range(24)]
    originals = {n: f"def f{k}(x):\n    return x + {k}\n" for k, n in enumerate(names)}
    for n, text in originals.items():
        (tmp_path / n).write_text(text)
    args = ["-c", "4096", "-np", "4", "--no-warmup"]
    server = LlamaServer(tiny_gguf, args, threads=1).start()
    port = server.port
    session = EditSession(str(tiny_gguf), mode="rewrite", server=server.url, max_new_tokens=24)
    journal = Journal(tmp_path / "journal")
    finished = []

    def killer():
        while len(finished) < 6:
            time.sleep(0.05)
        server.stop()

    threading.Thread(target=killer, daemon=True).start()
    first = session.edit_many(names, "Add a docstring.", jobs=4, retries=0, journal=journal, apply=True,
                              backoff=0.01, progress=lambda done, total, failed: finished.append(done))
    down = {o.path for o in first.failed if "server" in o.error}
    assert down and first.exit_code() == 2  # the kill hit files in flight and after it
    assert all("server" in o.error or "nothing written" in o.error for o in first.failed)
    for o in first.outcomes:  # nothing half-written: each file is its original or its whole edit
        on_disk = (tmp_path / o.path).read_text()
        assert on_disk == (o.edit.new_text if o.written else originals[o.path])

    monkeypatch.setattr(llamaserver, "free_port", lambda: port)  # the restarted server at the same URL
    with LlamaServer(tiny_gguf, args, threads=1):
        calls = []
        session2 = EditSession(str(tiny_gguf), mode="rewrite", server=f"http://127.0.0.1:{port}", max_new_tokens=24)
        real = session2.edit_source
        monkeypatch.setattr(session2, "edit_source", lambda src, ins: calls.append(src.path) or real(src, ins))
        second = session2.edit_many(names, "Add a docstring.", jobs=4, journal=Journal(tmp_path / "journal"),
                                    apply=True)
    redo = {o.path for o in first.outcomes if o.error is not None}
    assert set(calls) == redo  # only what the first run did not finish
    assert {o.path for o in second.outcomes if o.resumed} == set(names) - redo
    assert not any("server" in (o.error or "") for o in second.outcomes)
