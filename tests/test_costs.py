"""Draft lengths from measured costs (editor.costs, drafter.CostSchedule): the fit, the cache per machine,
the choice of length, and that any choice stays lossless."""

from __future__ import annotations

import json
import random

import pytest
from editllm.editor import costs as costs_mod
from editllm.editor.costs import SIZES, Costs, draft_schedule, engine_costs, fit
from editllm.editor.decode import Decoder
from editllm.editor.drafter import DEFAULT_DRAFT, CopyDrafter, CostSchedule, DraftSchedule


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITLLM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_fit_recovers_a_line_and_stays_positive():
    got = fit({k: 0.07 + 0.025 * k for k in (1, 4, 16, 64)})
    assert got.step == pytest.approx(0.07, rel=1e-6) and got.per_token == pytest.approx(0.025, rel=1e-6)
    flat = fit({1: 0.010, 4: 0.010, 16: 0.009, 64: 0.009})  # a GPU: batching is free (noise goes negative)
    assert flat.per_token > 0 and flat.step > 0


# Forward times (seconds) measured by editor.costs.measure with the bundled 1.5B on llama.cpp, 2 AVX2 cores:
# a forward of 8 tokens costs nearly what one of 16 does, and per token none is cheaper than 64.
LLAMA_CPU = ((1, 0.0836), (2, 0.1204), (3, 0.1672), (4, 0.1913), (5, 0.224), (6, 0.273), (7, 0.2904), (8, 0.4809),
             (16, 0.5269), (24, 0.8438), (32, 0.9729), (48, 1.2847), (64, 1.4241), (96, 2.5914), (128, 3.4128))


def test_draft_length_follows_the_costs_and_the_acceptance():
    cpu = CostSchedule(Costs(0.068, 0.025).of)  # llama.cpp on 2 cores: a batched token is 1/3 of a step
    gpu = CostSchedule(Costs(0.020, 0.0001).of)  # batching nearly free
    assert 1 <= cpu.current and gpu.current >= 4 * cpu.current
    before = cpu.current
    for _ in range(30):
        cpu.update(0, 16)  # rejected at the first token, again and again
    assert cpu.current < before and cpu.p < 0.5
    for _ in range(20):
        cpu.update(40, 40)
    assert cpu.current > before
    cpu.restart()
    assert cpu.current == before


def test_length_is_the_best_expected_rate():
    """Checked by brute force against the formula it claims to maximise."""
    line = Costs(0.05, 0.01)
    s = CostSchedule(line.of, maximum=64)
    for _ in range(3):
        s.update(7, 8)
    p = s.p

    def rate(d):
        return sum(p**i for i in range(d + 1)) / line.of(d + 1)

    assert s.current == max(range(1, 65), key=rate)
    assert s.length(5) == max(range(1, 6), key=rate)  # the match offers only 5 tokens


def test_costs_interpolate_the_table_and_choose_measured_sizes():
    costs = Costs(0.07, 0.025, LLAMA_CPU)
    assert costs.of(16) == pytest.approx(0.5269) and costs.of(12) == pytest.approx((0.4809 + 0.5269) / 2)
    assert costs.of(256) == pytest.approx(3.4128 * 2)  # past the table: the last size's cost per token
    assert costs.sizes(200) == [k for k, _ in LLAMA_CPU] + [160, 192]
    assert costs.long_enough(257) == 64  # the cheapest per token; 48 costs 20 % more a token
    flat = Costs(0.02, 0.0001, tuple((k, 0.02 + 0.0001 * k) for k in SIZES))
    assert flat.long_enough(257) == 128  # a GPU-like table: the longest measured
    s = CostSchedule(costs.of, 63, costs.sizes(64))
    for available in (1, 5, 9, 12, 30, 40, 63, 500):
        d = s.length(available)
        assert 1 <= d <= min(available, 63)
        assert d + 1 in costs.sizes(64) or d == min(available, 63)  # never a size whose cost is a guess
    assert s.length(12) in (6, 7, 12)  # not 8-11: forwards of 9-12 cost what 16 does
    for _ in range(30):
        s.update(0, 40)
    assert s.length(500) <= 7  # after many rejections: short drafts, below the expensive sizes


def test_cost_spec_parses_and_falls_back():
    assert DEFAULT_DRAFT == "cost"
    assert DraftSchedule.parse("cost") == DraftSchedule()  # copy mode, with no engine costs at hand
    assert DraftSchedule.parse("cost:64") == DraftSchedule()
    with pytest.raises(ValueError):
        DraftSchedule.parse("cost:x")
    with pytest.raises(ValueError):
        DraftSchedule.parse("cost:0")


def test_costs_are_measured_once_then_loaded_from_the_cache(tiny_lm, private_cache, monkeypatch):
    calls = []
    real = costs_mod.measure

    def counting(engine, *args, **kwargs):
        calls.append(1)
        return real(engine, *args, **kwargs)

    monkeypatch.setattr(costs_mod, "measure", counting)
    engine = tiny_lm.engine
    monkeypatch.delattr(engine, "_costs", raising=False)
    first = engine_costs(engine)
    assert len(calls) == 1 and first.step > 0 and [k for k, _ in first.times] == list(SIZES)
    (saved,) = (private_cache / "costs").iterdir()
    key = json.loads(saved.read_text())["key"]
    assert key["cpu"] == costs_mod.cpu_name() and key["engine"]["engine"] == "torch"
    monkeypatch.delattr(engine, "_costs")
    assert engine_costs(engine) == first and len(calls) == 1  # from the file
    saved.write_text("{not json")
    monkeypatch.delattr(engine, "_costs")
    engine_costs(engine)
    assert len(calls) == 2  # unreadable: measured again
    schedule = draft_schedule("cost:48", engine)
    assert isinstance(schedule, CostSchedule) and schedule.maximum <= 48
    assert schedule.sizes and max(schedule.sizes) <= schedule.maximum + 1
    assert isinstance(draft_schedule("fixed:5", engine), DraftSchedule)


@pytest.mark.parametrize("costs", [Costs(1.0, 1e-6), Costs(1e-6, 1.0), Costs(0.07, 0.025),
                                   Costs(0.07, 0.025, LLAMA_CPU)])
def test_any_cost_schedule_is_lossless(tiny_lm, costs):
    """Very long, very short and realistic drafts: the verified output is always plain decoding's."""
    rng = random.Random(7)
    block = [rng.randrange(151000) for _ in range(12)]
    prompt = [rng.randrange(151000) for _ in range(10)] + block * 3
    plain, _ = Decoder(tiny_lm.engine).run(prompt, 48, None)
    schedule = CostSchedule(costs.of, maximum=32, sizes=costs.sizes(33))
    fast, stats = Decoder(tiny_lm.engine).run(prompt, 48, None, CopyDrafter(3, schedule))
    assert fast == plain


def test_bench_settings_record_the_costs(tiny_lm):
    from editllm.bench.reuse import run_settings
    from editllm.editor.edit import EditOptions

    settings = run_settings(tiny_lm, EditOptions(), None)
    assert settings["draft"] == "cost"
    assert set(settings["costs"]) == {"step_ms", "per_token_ms", "table_ms"}
    assert settings["costs"] == engine_costs(tiny_lm.engine).as_dict()
