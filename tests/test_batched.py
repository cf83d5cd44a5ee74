"""Files decoded together on one llama.cpp context (editor.batched): the rendezvous on a stand-in engine
(every file waits for the others, a failed file leaves without stalling them), then the real engine on the
tiny F32 GGUF: each file's tokens are the ones it gets alone, in every mode, through `edit_many --jobs`."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from editllm.api.session import EditSession
from editllm.editor.batched import Rows, row_model
from editllm.editor.decode import Decoder
from editllm.editor.errors import EditError
from fakes import ask_again_on_every_copy

VOCAB = 50


class CountingEngine:
    """Stands in for `LlamaCppEngine.decode_seqs`: the logits after token t point at (t + seq + 1) % VOCAB, so
    each sequence has its own deterministic continuation. Records every batch's sequences."""

    tokenizer = None
    eos = frozenset()
    n_vocab = VOCAB
    identity = {"engine": "counting"}

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.kept: dict[int, int] = {}

    def decode_seqs(self, requests):
        self.batches.append(sorted(seq for seq, *_ in requests))
        out = []
        for seq, ids, _pos, keep in requests:
            rows = np.zeros((keep, VOCAB), dtype=np.float32)
            for k, t in enumerate(ids[len(ids) - keep:]):
                rows[k, (t + seq + 1) % VOCAB] = 1.0
            out.append(rows)
        return out

    def seq_keep(self, seq: int, n: int) -> None:
        self.kept[seq] = n

    def close(self) -> None:
        pass


def _run_rows(rows: Rows, lengths: list[int], fail_after: dict[int, int] | None = None) -> dict:
    """One thread per file, each decoding `lengths[i]` tokens greedily on its row; {file: tokens or error}."""
    results: dict[int, object] = {}
    fail_after = fail_after or {}
    ready = threading.Barrier(len(lengths))  # every file holds its row before any decodes

    def one(i: int) -> None:
        try:
            with rows.row() as row:
                ready.wait()

                def stop(out: list[int]) -> bool:
                    if i in fail_after and len(out) >= fail_after[i]:
                        raise ValueError(f"file {i} failed")
                    return False

                out, _ = Decoder(row).run([i + 1], lengths[i], stop)
                results[i] = (row.seq, out)
        except ValueError as exc:
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(lengths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "a file never got its batch"
    return results


def test_rows_batch_every_waiting_file_and_let_finished_ones_leave():
    engine = CountingEngine()
    rows = Rows(engine, 3, row_ctx=100)
    results = _run_rows(rows, [3, 8, 5])
    for i, n in enumerate([3, 8, 5]):
        seq, out = results[i]
        expected, t = [], i + 1
        for _ in range(n):
            t = (t + seq + 1) % VOCAB
            expected.append(t)
        assert out == expected
    assert max(len(b) for b in engine.batches) == 3  # the three files did ride in one batch
    assert rows.stats.requests == 3 + 8 + 5 and rows.stats.files == 3
    assert sorted(rows.free) == [0, 1, 2] and rows.active == 0  # every row given back, emptied
    assert all(engine.kept[s] == 0 for s in (0, 1, 2))


def test_a_failing_file_leaves_the_batch_and_the_others_finish():
    engine = CountingEngine()
    rows = Rows(engine, 3, row_ctx=100)
    results = _run_rows(rows, [6, 6, 6], fail_after={1: 2})
    assert isinstance(results[1], ValueError)
    assert len(results[0][1]) == 6 and len(results[2][1]) == 6
    assert rows.active == 0 and len(rows.free) == 3


def test_a_decode_error_reaches_every_file_of_its_batch():
    class Broken(CountingEngine):
        def decode_seqs(self, requests):
            raise EditError("llama.cpp context full (99 tokens shared by the files decoded together)")

    rows = Rows(Broken(), 2, row_ctx=100)
    errors = []
    ready = threading.Barrier(2)

    def one(i: int) -> None:
        with rows.row() as row:
            ready.wait()
            try:
                row.forward([i + 1], 1)
            except EditError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(errors) == 2 and all("context full" in e for e in errors)


def test_a_row_refuses_more_than_its_share_of_the_context():
    rows = Rows(CountingEngine(), 1, row_ctx=4)
    with rows.row() as row:
        row.forward([1, 2, 3], 1)
        with pytest.raises(EditError, match="context full"):
            row.forward([4, 5], 1)


@pytest.fixture(scope="module")
def llama_lm(tiny_gguf, tmp_path_factory):
    import editllm.editor.models as models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDITLLM_CACHE", str(tmp_path_factory.mktemp("editllm-cache")))
        return models.load_model(str(tiny_gguf), engine="llamacpp")


def test_rows_on_llamacpp_give_each_prompt_its_own_tokens(llama_lm):
    """Decoder runs on rows of the real engine, several in one batch, prefix shared: each equals the
    one-file engine's run of the same prompt, token for token."""
    from editllm.editor.batched import open_rows

    tok = llama_lm.tokenizer
    prefix = tok.encode("def f0(x):\n")
    endings = ["class A:\n  pass", "hello world", "print(42)"]  # the tiny model's tokens differ after each
    prompts = [prefix + tok.encode(f"def f{k}(x):\n    return x * {k}\n" * (k + 1) + endings[k]) for k in range(3)]
    alone = [Decoder(llama_lm.engine).run(p, 12 + 4 * k, None)[0] for k, p in enumerate(prompts)]
    assert len({tuple(a[:12]) for a in alone}) == 3  # so a file given another's logits would show
    rows = open_rows(llama_lm, 3)
    got: dict[int, tuple] = {}
    ready = threading.Barrier(3)

    def one(k: int) -> None:
        with rows.row() as row:
            ready.wait()
            got[k] = Decoder(row).run(prompts[k], 12 + 4 * k, None, prefix=len(prefix))

    threads = [threading.Thread(target=one, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert [got[k][0] for k in range(3)] == alone
        assert sorted(got[k][1].prefix_source for k in range(3)) in (["memory", "memory", "read"],
                                                                     ["disk", "memory", "memory"])
        assert max(rows.stats.per_batch) >= 2  # prompts and steps of several files did share batches
    finally:
        rows.close()


@pytest.mark.parametrize("mode", ["rewrite", "spec", "copy", "copy-asking-again"])
def test_jobs_on_llamacpp_edit_each_file_as_one_at_a_time(llama_lm, tmp_path, monkeypatch, mode):
    """`edit_many(jobs=3)` decodes the files together; every file's output tokens and outcome equal its
    one-at-a-time run (the random model rarely finishes a file: its failures must match too). "asking
    again": every program that copies is taken for idle, so each ask stops at its first copy and the model is
    asked again on its row's cached prompt while the other files decode."""
    asks: list[tuple] = []  # copy mode's asks, each: (prompt, banned, cached, program so far)
    if mode == "copy-asking-again":
        mode, asks = "copy", ask_again_on_every_copy(monkeypatch)
    monkeypatch.chdir(tmp_path)
    paths = []
    for k in range(4):
        p = tmp_path / f"m{k}.py"
        p.write_text("".join(f"def g{j}(a, b):\n    return a + b * {j}\n\n" for j in range(k + 2)))
        paths.append(p.name)

    def run(jobs: int):
        outputs: dict[tuple, list[int]] = {}  # prompt ids -> output ids, every decode of the run
        session = EditSession(llama_lm, mode=mode, max_new_tokens=40,
                              on_ids=lambda ids, out: outputs.__setitem__(tuple(ids), out))
        try:
            report = session.edit_many(paths, "rename g1 to h1", jobs=jobs)
            per_batch = dict(session._rows.stats.per_batch) if session._rows else {}
        finally:
            session.close_rows()
        programs = [(getattr(o.edit.stats, "program", None), getattr(o.edit.stats, "set_aside", None))
                    if o.edit else None for o in report.outcomes]
        return outputs, [(o.error, o.diff) for o in report.outcomes], programs, per_batch

    alone, alone_outcomes, alone_programs, _ = run(1)
    alone_asks, asks[:] = sorted(asks), []
    together, outcomes, programs, per_batch = run(3)
    assert together == alone and (mode == "copy" or len(alone) == 4)
    assert outcomes == alone_outcomes and programs == alone_programs
    assert max(per_batch) >= 2  # files did share batches
    assert sorted(asks) == alone_asks  # the same asks, bans and programs (or their stops and failures)
    assert not asks or any(cached for _, _, cached, _ in asks)  # asked again on a cached row


def test_jobs_on_a_torch_model_say_why_they_run_one_at_a_time(tiny_lm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    notes: list[str] = []
    session = EditSession(tiny_lm, mode="rewrite", max_new_tokens=8)
    report = session.edit_many(["a.py", "b.py"], "rename x", jobs=2, log=notes.append)
    assert len(report.outcomes) == 2 and session._rows is None
    assert any("torch engine decodes one file at a time" in n for n in notes)


def test_a_row_model_is_the_model_with_the_row_for_engine(llama_lm):
    rows = Rows(CountingEngine(), 1, row_ctx=10)
    with rows.row() as row:
        lm = row_model(llama_lm, row)
        assert lm.engine is row and lm.tokenizer is llama_lm.tokenizer and lm.context_length == 10
