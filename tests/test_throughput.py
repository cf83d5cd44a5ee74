"""benchmarks/throughput.py's local runs: the figures of many files edited one at a time or together."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from editllm.bench.throughput import run_local


def test_local_rounds_edit_the_files_again_and_report_the_median_round(tiny_model_dir, tmp_path, monkeypatch):
    """`--rounds N`: the files are edited N times on one loaded model (the first round captures the GPU's
    graphs), every round's seconds are kept, and the figures are the median round's."""
    from editllm.bench import throughput

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("def f(x):\n    return x\n")
    ticks = iter([0.0, 5.0, 10.0, 11.0, 20.0, 22.0])  # rounds of 5, 1 and 2 seconds
    monkeypatch.setattr(throughput, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))  # its clock only
    result = run_local(str(tiny_model_dir), tmp_path, 1, "rewrite", "static", "cpu", rounds=3)
    assert result["rounds_seconds"] == [5.0, 1.0, 2.0] and result["seconds"] == 2.0
    assert result["files"] == 2 and sorted(Path(k).name for k in result["texts"]) == ["a.py", "b.py"]


def test_rounds_below_one_are_refused(tmp_path, capsys):
    import pytest
    from editllm.bench.throughput import main

    with pytest.raises(SystemExit) as exc:
        main(["--local", "--rounds", "0", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--rounds must be at least 1" in capsys.readouterr().err
