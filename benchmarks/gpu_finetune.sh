#!/usr/bin/env bash
# Fine-tune the span selector on a GPU and bench copy mode before and after, in one go.
#
#   benchmarks/gpu_finetune.sh MODEL DATA OUT [STEPS]
#
# MODEL: bundled:1.5b, a .gguf or an HF directory; DATA: JSONL(.gz) from `editllm train data`;
# OUT gets adapter/ (LoRA), base/ (spec, copy and oracle with the base model) and tuned/ (copy with
# the adapter), each bench folder with results.json, report.md and outputs.jsonl, plus the logs and a
# `done` marker. TRAIN_MINUTES caps the training (default 8: a lent GPU has a fixed lease).
# The base model's bench runs beside the training: both fit on one GPU, and decoding is latency-bound,
# so its GPU timings are not comparable with tuned/'s; its quality columns are.
set -euo pipefail
model=$1 data=$2 out=$3 steps=${4:-400} device=${DEVICE:-cuda}
extra=(${BENCH_ARGS:-})  # e.g. BENCH_ARGS="--limit 2" for a dry run
cases=("$(cd "$(dirname "$0")" && pwd)"/cases/*.jsonl)
case_args=()
for c in "${cases[@]}"; do case_args+=(--cases "$c"); done
mkdir -p "$out"
trap 'touch "$out/done"' EXIT
editllm model prepare "$model"
editllm bench --model "$model" --device "$device" --mode spec,copy,oracle "${case_args[@]}" "${extra[@]}" --out "$out/base" \
    >"$out/base.md" 2>"$out/base.log" &
bench=$!
editllm train run --data "$data" --model "$model" --device "$device" --steps "$steps" --lora 16 --lr 2e-4 \
    --batch-tokens 16384 --save-every 100 --max-minutes "${TRAIN_MINUTES:-8}" --out "$out/adapter" 2>"$out/train.log"
editllm bench --model "$model" --device "$device" --adapter "$out/adapter" --mode copy "${case_args[@]}" "${extra[@]}" \
    --out "$out/tuned" >"$out/tuned.md" 2>"$out/tuned.log"
wait "$bench"
echo "finished: $out"
