"""benchmarks/host_overhead.py: the pipeline on a null engine that writes a scripted edit, one file at a time and
several together, so that its seconds are the host's alone."""

from __future__ import annotations

from editllm.bench.host_overhead import edited, null_model, run

MODULES = {
    f"m{k}.py": "".join(f"def f{k}_{j}(a, b):\n    total_{k}_{j} = a + b * {j} - {k}  # module {k} part {j}\n"
                        f"    return total_{k}_{j}\n\n" for j in range(4 + k))
    for k in range(3)
}


def test_the_null_engine_drives_each_file_to_its_scripted_edit_alone_and_together(tokenizer, tmp_path):
    """Every file's edit is the script's (so each forward was answered at the right positions, drafts and
    their cuts included), the same outputs come out one at a time and together, and together the forwards
    rode in fewer decodes (each decode waits 1 ms, as a device would, so that the files surely overlap: on the
    host alone a file may be done before the next one's thread starts)."""
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    lm = null_model(tokenizer, list(MODULES.values()), wait=0.001)
    assert all(edited(text) != text for text in MODULES.values())
    figures = {(mode, jobs): run(lm, tmp_path, mode, jobs, rounds=2) for mode in ("rewrite", "spec") for jobs in (1, 3)}
    for (mode, jobs), r in figures.items():
        assert r["right"] == r["files"] == 3, (mode, jobs)
        assert len(r["rounds_seconds"]) == 2 and r["seconds"] in r["rounds_seconds"]
    for mode in ("rewrite", "spec"):
        alone, together = figures[(mode, 1)], figures[(mode, 3)]
        assert alone["output_tokens"] == together["output_tokens"] and alone["forwards"] == together["forwards"]
        assert alone["decodes"] == alone["forwards"] and together["decodes"] < together["forwards"]
    assert figures[("spec", 1)]["forwards"] * 4 < figures[("rewrite", 1)]["forwards"]  # drafts were verified


def test_the_oracle_runs_copy_modes_runtime_one_file_at_a_time(tokenizer, tmp_path):
    """The gold program of each scripted edit through copy mode's runtime gives the edited file, in fewer
    forwards than spec (one an op); several files at once are refused: the oracle has no batched path."""
    import pytest

    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    lm = null_model(tokenizer, list(MODULES.values()))
    oracle, spec = run(lm, tmp_path, "oracle", 1, rounds=1), run(lm, tmp_path, "spec", 1, rounds=1)
    assert oracle["right"] == 3 and oracle["output_tokens"] == spec["output_tokens"]
    assert oracle["forwards"] < spec["forwards"]
    with pytest.raises(SystemExit, match="one file at a time"):
        run(lm, tmp_path, "oracle", 3, rounds=1)
