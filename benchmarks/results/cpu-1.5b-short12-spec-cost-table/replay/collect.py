"""Write (prompt ids, output ids, source start) of real spec runs for replay.py.

    python collect.py CASES.jsonl[,MORE.jsonl] OUT.jsonl [ID,ID,...]
"""
import json
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from editllm.api.session import EditSession  # noqa: E402
from editllm.editor import drafter as dr  # noqa: E402
from editllm.editor.source import source_from_text  # noqa: E402

files = sys.argv[1].split(",")
cases = [json.loads(line) for f in files for line in open(f)]
if len(sys.argv) > 3:
    want = set(sys.argv[3].split(","))
    cases = [c for c in cases if c["id"] in want]
rec: dict = {}
orig_reset = dr.CopyDrafter.reset


def reset(self, prompt_ids, source_start=0):
    rec["source_start"] = source_start
    return orig_reset(self, prompt_ids, source_start)


dr.CopyDrafter.reset = reset
session = EditSession("bundled:1.5b", mode="spec", engine="llamacpp",
                      on_ids=lambda p, o: rec.update(prompt=p, output=o))
session.prepare()
with open(sys.argv[2], "a") as out:
    for c in cases:
        rec.clear()
        t0 = time.perf_counter()
        fe = session.edit_source(source_from_text(c["before"].encode(), c["path"]), c["instruction"])
        dt = time.perf_counter() - t0
        st = fe.stats
        out.write(json.dumps({"id": c["id"], "seconds": dt, "prefill": st.prefill_seconds, "prefix": st.prefix_tokens,
                              "forwards": st.forwards, "accepted": st.accepted_lengths} | rec) + "\n")
        out.flush()
        print(c["id"], round(dt, 1), st.forwards, flush=True)
