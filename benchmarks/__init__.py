"""`editllm.bench`: the benchmark harness behind `editllm bench`, kept off the edit path.

`cases` (reading case files), `sandbox` (running tests on untrusted edited code), `runner` (every case
in every mode on one model), `stats` (paired speedups, quality rates), `report` (results.json,
Markdown, plots) and `evaluate` (`editllm train eval`: copy mode, base model vs fine-tuned). Nothing
under `editor/`, `grammar/`, `resolver/` or `training/` imports this package; it imports them. The
`cases/` and `results/` folders beside these modules are data.
"""
