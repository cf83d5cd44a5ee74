"""The static engine (`editor.static`, the GPU path's decoder) on the tiny model, on the CPU: its logits are
transformers' own, its edits are the torch engine's token for token, several files in one batch edit as
each alone, and a LoRA adapter switches per sequence. `graphs="emulate"` runs the padded shapes the CUDA
graphs use, without capturing; the tests marked by `needs_cuda` capture real graphs and skip without a GPU."""

from __future__ import annotations

import pytest
import torch
from editllm.api.session import EditSession
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.engine import TorchEngine
from editllm.editor.errors import EditError
from editllm.editor.models import load_model, pick_engine
from editllm.editor.source import source_from_text
from editllm.editor.static import (
    GRAPH_TOKENS,
    StaticEngine,
    bucket,
    cache_bytes,
    fitting_seqs,
    split,
    supported,
    unsupported_adapter,
)
from fakes import ask_again_on_every_copy

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
IDS = list(range(1000, 1400))
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
FILES = {
    f"m{k}.py": "".join(f"def g{j}(a, b):\n    return a + b * {j}\n\n" for j in range(k + 2)) for k in range(4)
}


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 noise (padded shapes sum in another order: ~1e-5 on these logits)."""
    return a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def varied_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with an untied random output head. With the head tied to the embeddings, the random
    model repeats its last token ("\n" after the fence) forever, and every engine trivially agrees; this one
    writes a different token at every step, with gaps between the top logits far above float32 noise."""
    import shutil

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    torch.manual_seed(5)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(torch.randn(model.lm_head.weight.shape) * 0.5)
    out = tmp_path_factory.mktemp("tiny-varied")
    model.save_pretrained(out)
    for f in tiny_model_dir.iterdir():
        if f.is_file() and not (out / f.name).exists():
            shutil.copy(f, out / f.name)
    return out


@pytest.fixture(scope="module")
def static_lm(varied_dir):
    return load_model(str(varied_dir), device="cpu", dtype="float32", engine="static")


@pytest.fixture(scope="module")
def torch_lm(varied_dir):
    return load_model(str(varied_dir), device="cpu", dtype="float32")


@pytest.fixture(scope="module", params=[False, "emulate"], ids=["eager", "padded"])
def graphs(request):
    return request.param


def script(engine) -> list[torch.Tensor]:
    """A decode's forwards: a prompt, a draft, a rejected tail, a step, a restart from a kept prefix."""
    out = [engine.forward(IDS[:300], keep=5).clone(), engine.forward(IDS[300:310], keep=10).clone()]
    engine.truncate(4)
    out.append(engine.forward([7, 8, 9], keep=3).clone())
    out.append(engine.forward([11], keep=1).clone())
    engine.reset()
    out.append(engine.forward(IDS[:20], keep=20).clone())
    return out


def test_logits_are_transformers_own(torch_lm, graphs):
    """Every forward's rows equal the torch engine's (transformers' forward with its DynamicCache)."""
    reference = script(TorchEngine(torch_lm.model, torch_lm.tokenizer))
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, n_ctx=1024, graphs=graphs)
    got = script(engine)
    assert all(close(a, b) for a, b in zip(got, reference, strict=True))
    assert engine.length == 20
    if graphs:  # the padded shapes were used, and reused: a handful for the whole script
        assert 0 < len(engine._graphs) <= 5


def test_sequences_in_one_batch_get_what_each_gets_alone(torch_lm, graphs):
    """decode_seqs: sequences of different lengths and positions in one padded forward, each its own rows."""
    one = TorchEngine(torch_lm.model, torch_lm.tokenizer)

    def alone(prefix: list[int], ids: list[int], keep: int) -> torch.Tensor:
        one.reset()
        if prefix:
            one.forward(prefix, keep=1)
        return one.forward(ids, keep=keep).clone()

    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, seqs=3, n_ctx=1024, graphs=graphs)
    first = engine.decode_seqs([(1, IDS[:50], 0, 2), (2, IDS[100:103], 0, 3)])
    assert close(first[0], alone([], IDS[:50], 2)) and close(first[1], alone([], IDS[100:103], 3))
    second = engine.decode_seqs([(2, [6, 7], 3, 2), (1, [5], 50, 1), (0, IDS[:9], 0, 4)])
    assert close(second[0], alone(IDS[100:103], [6, 7], 2))
    assert close(second[1], alone(IDS[:50], [5], 1))
    assert close(second[2], alone([], IDS[:9], 4))
    engine.seq_share(1, 0, 50)  # a prefix given to another sequence
    assert close(engine.decode_seqs([(0, [5], 50, 1)])[0], alone(IDS[:50], [5], 1))


def test_a_long_forward_runs_eagerly_and_a_bad_request_is_refused(torch_lm):
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, n_ctx=1024, graphs="emulate")
    engine.forward(list(range(1000, 1000 + GRAPH_TOKENS + 1)), keep=1)
    assert engine._graphs == {}  # past GRAPH_TOKENS: no padded shape
    with pytest.raises(ValueError):
        engine.decode_seqs([(0, [1, 2], 0, 3)])
    with pytest.raises(EditError, match="context full"):
        engine.forward([1] * 600, keep=1)


def test_a_graph_that_cannot_be_made_leaves_eager_forwards(torch_lm, monkeypatch):
    """A GPU or driver that refuses capture: the forward still comes back right, eagerly from then on."""
    from editllm.editor import static

    def refuse(*args, **kwargs):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(static, "_Graph", refuse)
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, n_ctx=1024, graphs="emulate")
    reference = TorchEngine(torch_lm.model, torch_lm.tokenizer).forward(IDS[:30], keep=3)
    assert close(engine.forward(IDS[:30], keep=3), reference)
    assert engine.graphs == "emulate"  # a shape's first forward runs eagerly: nothing captured yet
    engine.reset()
    assert close(engine.forward(IDS[:30], keep=3), reference)  # its second captures, which fails
    assert engine.graphs is False and "capturing" in engine.graph_error


def test_a_shape_is_captured_on_its_second_forward_and_replayed_after(torch_lm, monkeypatch):
    """A padded shape used once runs eagerly (no capture: a one-off copy's length costs nothing); the second
    forward of it captures the graph and later ones replay it; the costs are timed after both."""
    from editllm.editor import static
    from editllm.editor.costs import measure

    made = []

    class Counted(static._Graph):
        def __init__(self, *args, **kwargs):
            made.append(args[1]["ids"].shape)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(static, "_Graph", Counted)
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, n_ctx=1024, graphs="emulate")
    engine.forward(IDS[:30], keep=1)
    assert made == [] and list(engine._graphs.values()) == [None]
    engine.forward(IDS[30:32], keep=1)  # another shape (2 tokens), first seen
    engine.truncate(32)
    engine.forward(IDS[:30], keep=1)
    assert made == [(1, 32)]
    engine.forward(IDS[30:32], keep=1)
    engine.truncate(32)
    engine.forward(IDS[:30], keep=1)
    assert made == [(1, 32), (1, 2)]  # each shape captured once
    assert engine.calls_to_warm == 2
    assert StaticEngine(torch_lm.model, torch_lm.tokenizer, graphs=False).calls_to_warm == 0
    timed = []
    monkeypatch.setattr(engine, "forward", lambda ids, keep, f=engine.forward: timed.append(len(ids)) or f(ids, keep))
    measure(engine, sizes=(1, 16), repeats=1)
    assert timed[1:] == [1, 1, 1, 16, 16, 16]  # after the context: eager, capture, then the replay that is timed


def test_shapes_and_choices():
    assert [bucket(n) for n in (1, 2, 3, 5, 64, 65)] == [1, 2, 4, 8, 64, 128]
    assert bucket(10, 256) == 256 and bucket(300, 256) == 512
    reqs = [(k, [0] * n, 0, 1) for k, n in enumerate([3000, 3000, 3000, 10, 9000, 5])]
    assert [[r[0] for r in g] for g in split(reqs, 8192)] == [[0, 1], [2, 3], [4], [5]]
    assert pick_engine("auto", "some/dir", "cuda", None) == "static"
    assert pick_engine("auto", "some/dir", "cpu", None) == "torch"

    class Config:
        model_type, use_sliding_window = "qwen3", False

    class Model:
        config = Config()

    assert "qwen3" in supported(Model())

    class Rotary:
        rope_type = "dynamic"

    class Qwen2Config:
        model_type, use_sliding_window = "qwen2", False

    class Dynamic:
        config = Qwen2Config()

        def get_decoder(self):
            return type("Decoder", (), {"rotary_emb": Rotary()})()

    assert "dynamic" in supported(Dynamic())


def test_only_plain_lora_on_the_projections_runs_per_sequence(torch_lm, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    def peft(**kwargs):
        model = AutoModelForCausalLM.from_pretrained(torch_lm.model.config._name_or_path, dtype=torch.float32)
        return get_peft_model(model, LoraConfig(r=2, lora_alpha=4, **kwargs))

    assert unsupported_adapter(peft(target_modules=TARGETS)) is None
    assert "DoRA" in unsupported_adapter(peft(target_modules=["q_proj"], use_dora=True))
    assert "lm_head" in unsupported_adapter(peft(target_modules=["q_proj", "lm_head"]))
    with pytest.raises(EditError, match="use --engine torch"):
        StaticEngine(peft(target_modules=["lm_head"]), torch_lm.tokenizer)


def test_the_cache_is_read_in_place_for_sequences_from_0_and_sizes_are_known(torch_lm):
    """One file's sequence 0, or a batch of sequences 0..n-1, reads the cache as it is (no copies gathered);
    so does a batch with holes (files that left it) while its rows are at most twice the gathered ones and
    the holes' padding is short."""
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, seqs=3, n_ctx=1024, graphs="emulate")
    engine.forward(IDS[:10], keep=1)
    engine.decode_seqs([(1, [5], 0, 1), (0, [6], 10, 1)])
    engine.decode_seqs([(2, [5], 0, 1), (1, [6], 1, 1)])
    assert [key[-1] for key in engine._graphs] == [True, True, False]  # the last: rows 1, 2 (of 4) gathered
    holed = StaticEngine(torch_lm.model, torch_lm.tokenizer, seqs=8, n_ctx=1024, graphs="emulate")
    reference = StaticEngine(torch_lm.model, torch_lm.tokenizer, seqs=8, n_ctx=1024, graphs=False)
    for engine in (holed, reference):
        engine.decode_seqs([(s, IDS[10 * s:10 * s + 10], 0, 1) for s in range(8)])
    requests = [(5, [6], 10, 1), (1, [7, 8], 10, 2), (3, [9], 10, 1), (6, [4], 10, 1), (7, [5], 10, 1)]
    got = holed.decode_seqs(requests)  # 5 rows of 8: in place, holes at 0, 2 and 4
    alone = [reference.decode_seqs([r])[0] for r in requests]  # one at a time: rows 1..7 gathered
    assert all(close(a, b) for a, b in zip(got, alone, strict=True))
    holed.decode_seqs([(7, [3], 11, 1), (6, [2], 11, 1)])  # 2 rows of 8: gathered
    assert [key[0] for key in holed._graphs if key[-1]] == [8, 8] and (2, 1, 256, False, False) in holed._graphs
    holed.decode_seqs([(1, IDS[:40], 20, 1), (2, IDS[:40], 20, 1), (3, IDS[:40], 20, 1)])  # 4 rows either way
    holed.decode_seqs([(1, IDS[:40], 20, 1), (3, IDS[:40], 20, 1)])  # 2 rows, or 4 with holes 64 wide
    assert (4, 64, 256, False, True) in holed._graphs and (2, 64, 256, False, False) in holed._graphs
    config = torch_lm.model.config
    per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * 16 * 4  # head dim 16, float32
    assert cache_bytes(torch_lm.model, 3, 1024) == 3 * 1025 * per_token
    assert fitting_seqs(torch_lm.model) is None  # no GPU memory to fit on the CPU


def test_graphs_need_cuda(torch_lm):
    with pytest.raises(EditError, match="CUDA graphs need a CUDA device"):
        StaticEngine(torch_lm.model, torch_lm.tokenizer, graphs=True)


@pytest.mark.parametrize("mode", ["rewrite", "spec", "copy"])
def test_edits_are_the_torch_engines_token_for_token(torch_lm, static_lm, mode):
    """The whole pipeline (prompt, saved prefix, drafts, grammar, stop rule) on the static engine gives the
    torch engine's output ids and outcome for every file; and spec's text is rewrite's (lossless)."""
    def run(lm, mode: str) -> dict:
        got = {}
        for name, text in FILES.items():
            seen: list = []
            opts = EditOptions(mode=mode, max_new_tokens=40, on_ids=lambda ids, out, seen=seen: seen.append(out))
            try:
                res = edit_file(lm, source_from_text(text.encode(), name), "rename g1 to h1", opts)
                got[name] = (seen, res.new_text)
            except EditError as exc:  # the random model may never close its fence
                got[name] = (seen, str(exc))
        return got

    ours = run(static_lm, mode)
    assert ours == run(torch_lm, mode)
    if mode == "spec":
        assert [v[1] for v in ours.values()] == [v[1] for v in run(static_lm, "rewrite").values()]


@pytest.mark.parametrize("mode", ["rewrite", "spec", "copy", "copy-asking-again"])
def test_several_files_in_one_batch_edit_as_each_alone(static_lm, tmp_path, monkeypatch, mode, graphs):
    """`EditSession.edit(paths)` on the static engine decodes the files together (rows of one cache); each
    file's output ids and diff equal its one-at-a-time edit, and the batches did hold several files. Padded:
    the rows' forwards take the graphs' padded shapes (emulated), one file's forwards too. "asking again":
    every program that copies is taken for idle, so copy mode stops each ask at its first copy and asks again
    on its row's cached prompt while the other files decode: the same asks as one file at a time."""
    from dataclasses import replace

    asks: list[tuple] = []  # copy mode's asks, each: (prompt, banned, cached, program so far)
    if mode == "copy-asking-again":
        mode, asks = "copy", ask_again_on_every_copy(monkeypatch)

    static_lm = replace(static_lm, _engine=StaticEngine(static_lm.model, static_lm.tokenizer, graphs=graphs))
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)

    def run(together: bool):
        """Every decode's output ids (by prompt) and the edits' diffs, or the error `edit` raised (the first
        file's, in input order, when files go together)."""
        outputs: dict[tuple, list[int]] = {}
        session = EditSession(static_lm, mode=mode, max_new_tokens=40,
                              on_ids=lambda ids, out: outputs.__setitem__(tuple(ids), out))
        per_batch: dict = {}
        try:
            if together:
                try:
                    got = [e.diff for e in session.edit(list(FILES), "rename g1 to h1")]
                except EditError as exc:  # the first file's own reason (what it costs the others follows)
                    got = str(exc).split("; a multi-file edit is all or nothing")[0]
                per_batch = dict(session._rows.stats.per_batch)
            else:
                got = []
                for name in FILES:
                    try:
                        got.append(session.edit([name], "rename g1 to h1")[0].diff)
                    except EditError as exc:
                        got.append(str(exc))
                errors = [g for g in got if "nothing written" in g or "did not" in g]
                got = errors[0] if errors else got
        finally:
            session.close_rows()
        return outputs, got, per_batch

    alone = run(False)
    alone_asks, asks[:] = sorted(asks), []
    together = run(True)
    assert together[:2] == alone[:2]
    assert len(alone[0]) >= 2 or alone_asks  # spec's decodes (focused files may share a prompt) or the asks
    assert not alone[2] and max(together[2]) >= 2  # files did share batches
    assert sorted(asks) == alone_asks and (not asks or any(cached for _, _, cached, _ in asks))


def test_later_calls_on_one_session_batch_their_files_too(static_lm, tmp_path, monkeypatch):
    """A session's rows stay open after `edit(paths)`; a later call with several files decodes them together
    on those rows (it used to edit them one at a time there), and one with more files than the rows opens
    more. Each call's diffs are the first call's."""
    from dataclasses import replace

    static_lm = replace(static_lm, _engine=StaticEngine(static_lm.model, static_lm.tokenizer, graphs=False))
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    names = list(FILES)
    session = EditSession(static_lm, mode="spec", max_new_tokens=40)

    def run(files: list[str]) -> list[str] | str:
        """The diffs, or the error the call raised (the tiny model may not finish a file)."""
        try:
            return [e.diff for e in session.edit(files, "rename g1 to h1")]
        except EditError as exc:  # the first file's own reason (what it costs the others follows)
            return str(exc).split("; a multi-file edit is all or nothing")[0]

    try:
        first = run(names[:2])
        assert session._rows.size == 2
        for _ in range(2):
            session._rows.stats = type(session._rows.stats)()
            assert run(names[:2]) == first
            assert max(session._rows.stats.per_batch) == 2  # both files rode in the same forwards
        every = run(names)
        assert session._rows.size == len(names) and max(session._rows.stats.per_batch) >= 3
        assert every[:2] == first if isinstance(first, list) else every == first
    finally:
        session.close_rows()


@pytest.fixture(scope="module")
def adapted_static(varied_dir, tmp_path_factory):
    """The tiny model with a random LoRA (B not zero: it changes the logits), on the static engine."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(varied_dir, dtype=torch.float32)
    torch.manual_seed(1)
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, init_lora_weights=False, target_modules=TARGETS)
    out = tmp_path_factory.mktemp("static-lora")
    get_peft_model(model, config).save_pretrained(out)
    return load_model(str(varied_dir), device="cpu", dtype="float32", adapter=str(out), engine="static"), out


def test_the_adapter_switches_per_sequence(torch_lm, varied_dir, adapted_static, graphs):
    """Off, a sequence's rows are the base model's; on, peft's own adapted forward's; both in one batch."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    lm, lora = adapted_static
    base = TorchEngine(torch_lm.model, torch_lm.tokenizer).forward(IDS[:40], keep=4)
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(varied_dir,
                                                                                dtype=torch.float32), lora)
    with torch.inference_mode():
        adapted = peft_model(input_ids=torch.tensor([IDS[:40]])).logits[0, -4:]
    assert not close(adapted, base)
    engine = StaticEngine(lm.model, lm.tokenizer, seqs=2, n_ctx=1024, graphs=graphs)
    assert engine.has_adapter and not engine.adapter_on
    assert close(engine.forward(IDS[:40], keep=4), base)
    assert not any(adapted for *_, adapted, _view in engine._graphs)  # no row on: no adapter terms computed
    engine.use_adapter(True)
    assert engine.length == 0 and engine.adapter_on  # entries of the other weights are dropped
    assert close(engine.forward(IDS[:40], keep=4), adapted)
    assert engine.seq_adapter(1, False) is False  # already off
    both = engine.decode_seqs([(1, IDS[:40], 0, 4), (0, IDS[40:42], 40, 1)])
    assert close(both[0], base)
    with torch.inference_mode():
        more = peft_model(input_ids=torch.tensor([IDS[:42]])).logits[0, -1:]
    assert close(both[1], more)


@pytest.mark.parametrize("mode", ["rewrite", "spec"])
def test_lossless_modes_never_see_the_adapter_alone_or_in_a_batch(static_lm, adapted_static, tmp_path, monkeypatch,
                                                                  mode):
    """With the adapter loaded, every decode of rewrite and spec is the base model's, file by file or in one batch."""
    lm, _ = adapted_static
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)

    def decodes(model, together: bool) -> dict:
        outputs: dict[tuple, list[int]] = {}
        session = EditSession(model, mode=mode, max_new_tokens=40,
                              on_ids=lambda ids, out: outputs.__setitem__(tuple(ids), out))
        for names in [list(FILES)] if together else [[n] for n in FILES]:
            try:
                session.edit(names, "rename g1 to h1")
            except EditError:
                pass  # the random model rarely finishes a file: its output ids are what is compared
        session.close_rows()
        return outputs

    base = decodes(static_lm, False)
    assert base and decodes(lm, False) == base and decodes(lm, True) == base


def test_copy_mode_rows_switch_the_adapter_on_for_their_programs(static_lm, adapted_static, tmp_path, monkeypatch):
    """Copy mode in a batch: each row writes its program with the adapter on (the rows are switched one by one,
    the shared prompt prefix read under the adapter), token for token as it does alone; without the adapter
    the model writes other tokens. (The random model's programs fail, and spec's fallback runs adapter off.)"""
    from editllm.editor.copymode import CopyRun

    lm, _ = adapted_static
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    written: dict[tuple, list[int]] = {}  # prompt ids -> the program tokens the model wrote
    run_model = CopyRun.run_model

    def recorded(self, max_tokens, cached=False):
        try:
            return run_model(self, max_tokens, cached)
        finally:
            written[tuple(self.prompt)] = list(self.program)

    monkeypatch.setattr(CopyRun, "run_model", recorded)

    def programs(model, together: bool) -> dict:
        written.clear()
        session = EditSession(model, mode="copy", max_new_tokens=40)
        session.edit_many(list(FILES), "rename g1 to h1", jobs=4 if together else 1)
        if together:
            assert max(session._rows.stats.per_batch) >= 2
        session.close_rows()
        return dict(written)

    alone = programs(lm, False)
    assert alone and all(alone.values())
    assert programs(lm, True) == alone and programs(static_lm, False) != alone


@needs_cuda
@pytest.mark.parametrize("mode", ["rewrite", "spec", "copy"])
def test_cuda_graphs_decode_what_eager_forwards_decode(varied_dir, mode):
    """On a GPU: captured graphs give the eager engine's edits (float32 tiny model: no near-ties)."""
    lm = load_model(str(varied_dir), device="cuda", dtype="float32", engine="static")
    eager = load_model(str(varied_dir), device="cuda", dtype="float32", engine="static")
    eager._engine = StaticEngine(eager.model, eager.tokenizer, graphs=False)
    assert lm.engine.graphs is True
    for name, text in FILES.items():
        src = source_from_text(text.encode(), name)
        outs = []
        for model in (lm, eager):
            try:
                opts = EditOptions(mode=mode, max_new_tokens=40)
                outs.append(edit_file(model, src, "rename g1 to h1", opts).raw_output)
            except EditError as exc:
                outs.append(str(exc))
        assert outs[0] == outs[1]
    assert any(g is not None for g in lm.engine._graphs.values()) and lm.engine.graph_error is None  # replayed


@needs_cuda
def test_cuda_graphs_batch_files_as_each_alone(varied_dir, tmp_path, monkeypatch):
    """On a GPU: spec over four files in one batch of captured graphs gives each file's eager, alone output."""
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    lm = load_model(str(varied_dir), device="cuda", dtype="float32", engine="static")
    eager = load_model(str(varied_dir), device="cuda", dtype="float32", engine="static")
    eager._engine = StaticEngine(eager.model, eager.tokenizer, graphs=False)

    def decodes(model, names_lists) -> dict:
        outputs: dict[tuple, list[int]] = {}
        session = EditSession(model, mode="spec", max_new_tokens=40,
                              on_ids=lambda ids, out: outputs.__setitem__(tuple(ids), out))
        for names in names_lists:
            try:
                session.edit(names, "rename g1 to h1")
            except EditError:
                pass
        if session._rows is not None:  # the batch's own cache and graphs, before they are freed
            captured.append(any(g is not None for g in session._rows.engine._graphs.values()))
        session.close_rows()
        return outputs

    captured: list[bool] = []
    together = decodes(lm, [list(FILES)])
    assert together == decodes(eager, [[n] for n in FILES]) and lm.engine.graph_error is None
    assert captured[0]  # the batch's shapes were captured and replayed


@needs_cuda
def test_cuda_hf_greedy_compiles_its_static_cache_and_writes_the_eager_tokens(varied_dir):
    """On a GPU, before a lease's uploads: the bench's hf-greedy peer compiles transformers' static-cache step
    (torch.compile, CUDA graphs) without falling back, and writes what the plain eager loop writes."""
    from editllm.bench import runner

    lm = load_model(str(varied_dir), device="cuda", dtype="float32", engine="static")
    plain, _ = runner.hf_pld_generate(lm, IDS[:40], 24, lambda ids: False, lookup=None)
    runner.HFCompile.error = None
    out, stats = runner.hf_pld_generate(lm, IDS[:40], 24, lambda ids: False, lookup=None, static=True)
    assert runner.HFCompile.error is None, runner.HFCompile.error
    assert runner.HFCompile.state(lm) == "static cache, compiled"  # transformers made its compiled call
    assert out == plain and stats.forwards >= len(out) > 0


def test_the_kernel_table_times_replays_not_first_uses_or_captures(torch_lm, monkeypatch):
    """`bench --kernel` on the static engine: each size's one forward and its single steps are timed after the
    forwards that run a shape eagerly and capture it, so the table compares replays."""
    from types import SimpleNamespace

    from editllm.bench import runner
    from editllm.editor import static

    log: list[str] = []
    engine = StaticEngine(torch_lm.model, torch_lm.tokenizer, n_ctx=1024, graphs="emulate")
    graphed = engine._graphed

    def logged(inputs, key):
        hidden = graphed(inputs, key)
        if engine._graphs.get(key) is None or hidden is None:
            log.append("eager")
        return hidden

    class Logged(static._Graph):
        def __init__(self, *args, **kwargs):
            log.append("capture")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(engine, "_graphed", logged)
    monkeypatch.setattr(static, "_Graph", Logged)
    clock = runner.time.perf_counter
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: log.append("clock") or clock()))
    lm = SimpleNamespace(engine=engine, device="cpu")
    rows = runner.kernel_bench(lm, sizes=(1, 8), context=16, max_steps=4)
    assert [r["tokens"] for r in rows] == [1, 8] and "capture" in log
    clocks = [k for k, event in enumerate(log) if event == "clock"]
    assert len(clocks) == 12  # a start and an end: the warm-up's and each size's one forward and single steps
    for start, end in zip(clocks[::2], clocks[1::2], strict=True):
        assert log[start + 1:end] == []  # no eager first use and no capture inside a timing
