#!/usr/bin/env bash
# Train the span selector on a lent GPU (the `device` tool): carry the model there in calls of at most
# 64 MiB, then one call distils and trains (training/lease.py). Steps:
#
#   here:   python -m editllm.training.lease pack --synthetic syn.jsonl.gz --tasks 1500 --out pack/
#           training/gpu_lease.sh prepare pack/ .dev        # .dev/c01 .. .dev/cNN, each under one call's limit
#   there:  training/gpu_lease.sh receive .dev/c01          # one call per folder, carry=[".dev/cNN"]
#           training/gpu_lease.sh finish MINUTES            # assemble + check the GGUF, distil, train; $OUT
#   here:   cat parts back into editor/selector/ (see its README)
#
# Each call re-sends the working tree, so a call's folder holds what is left of 64 MiB after it.
set -euo pipefail
cmd=$1; shift
store=/tmp/lease
case "$cmd" in
prepare)
    pack=$1 dest=$2
    gguf=$(python -c "from editllm.editor.models import gguf_of; print(gguf_of('bundled:1.5b'))")
    tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- | tail -1 | cut -f1)
    budget=$(( 64 * 1024 * 1024 - tree - 2 * 1024 * 1024 ))  # 2 MiB spare for files written meanwhile
    rm -rf "$dest" && mkdir -p "$dest/c01"
    python -m pip wheel -q --no-deps --no-build-isolation -w "$dest/c01" . gguf==0.19.0
    tar -czf "$dest/c01/pack.tgz" -C "$pack" .
    sha256sum "$gguf" | cut -d' ' -f1 >"$dest/c01/model.sha256"
    python - "$gguf" "$dest" "$budget" <<'EOF'
import sys
from pathlib import Path
gguf, dest, budget = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
used = sum(f.stat().st_size for f in (dest / "c01").iterdir())
with open(gguf, "rb") as f:
    call, room = 1, budget - used
    while chunk := f.read(room):
        folder = dest / f"c{call:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"model.part{call:02d}").write_bytes(chunk)
        call, room = call + 1, budget
print(f"{call - 1} calls of at most {budget} bytes in {dest}")
EOF
    ;;
check)  # the first call: the folder, then the machine's software, wheels and tokenizer (ids printed)
    mkdir -p "$store" && cp "$1"/* "$store"/
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$store"/*.whl
    mkdir -p "$store/pack" && tar -xzf "$store/pack.tgz" -C "$store/pack"
    PYTHONPATH=/tmp/site python3 - "$store/pack/tokenizer" <<'PY'
import sys, torch, transformers, peft, gguf, editllm.training.lease
from transformers import AutoTokenizer
print(torch.__version__, transformers.__version__, peft.__version__, torch.cuda.get_device_name(0),
      torch.cuda.mem_get_info())
t = AutoTokenizer.from_pretrained(sys.argv[1])
print(t("def f(x):\n    return x  # h\u00e9llo <|im_end|>\n", add_special_tokens=False)["input_ids"])
PY
    ;;
receive)
    mkdir -p "$store" && cp "$1"/* "$store"/
    echo "$(ls "$store" | wc -l) files, $(du -sb "$store" | cut -f1) bytes in $store"
    ;;
finish)
    minutes=$1; shift
    if compgen -G "$store/model.part*" >/dev/null; then  # a rerun after a failure finds them joined
        cat $(ls "$store"/model.part* | sort) >"$store/model.gguf" && rm "$store"/model.part*
    fi
    [ "$(sha256sum "$store/model.gguf" | cut -d' ' -f1)" = "$(cat "$store/model.sha256")" ] || {
        echo "model.gguf: missing parts or sha256 mismatch" >&2; exit 1; }
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$store"/*.whl
    mkdir -p "$store/pack" && tar -xzf "$store/pack.tgz" -C "$store/pack"
    export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
    out=${OUT:-$store/out}
    rm -rf "$store/run"
    python3 -m editllm.training.lease run --gguf "$store/model.gguf" --pack "$store/pack" --out "$store/run" \
        --minutes "$minutes" "$@" 2>&1 | tee "$out/lease.log"
    # Files come back at most 16 MiB each: the adapter in parts, the rest compressed.
    split -b 15M -d "$store/run/adapter/adapter_model.safetensors" "$out/adapter_model.safetensors.part"
    tar -czf "$out/run.tgz" -C "$store/run" --exclude adapter_model.safetensors --exclude checkpoint .
    ls -la "$out"
    ;;
*)
    echo "usage: $0 prepare PACK DEST | receive DIR | finish MINUTES [lease run options]" >&2; exit 2 ;;
esac
