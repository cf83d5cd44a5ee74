"""Write a tiny random Qwen2 (the `tiny_model_dir` fixture) as an F32 GGUF that llama.cpp loads.

The tokenizer metadata (vocab, merges, pre-tokenizer, chat template) is copied from the bundled
model's first GGUF part, so llama.cpp tokenizes exactly like the real model. The output head can be
scaled up: a random tiny model's top-2 logit gap is ~0.025, so a batched forward could flip a
near-tie and an identity test would fail for reasons that are not bugs; scaled by 100 the gaps are
far above float noise.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# HF Qwen2 name (with {i} for the layer) -> GGUF tensor name
TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "model.layers.{i}.input_layernorm.weight": "blk.{i}.attn_norm.weight",
    "model.layers.{i}.self_attn.q_proj.weight": "blk.{i}.attn_q.weight",
    "model.layers.{i}.self_attn.q_proj.bias": "blk.{i}.attn_q.bias",
    "model.layers.{i}.self_attn.k_proj.weight": "blk.{i}.attn_k.weight",
    "model.layers.{i}.self_attn.k_proj.bias": "blk.{i}.attn_k.bias",
    "model.layers.{i}.self_attn.v_proj.weight": "blk.{i}.attn_v.weight",
    "model.layers.{i}.self_attn.v_proj.bias": "blk.{i}.attn_v.bias",
    "model.layers.{i}.self_attn.o_proj.weight": "blk.{i}.attn_output.weight",
    "model.layers.{i}.post_attention_layernorm.weight": "blk.{i}.ffn_norm.weight",
    "model.layers.{i}.mlp.gate_proj.weight": "blk.{i}.ffn_gate.weight",
    "model.layers.{i}.mlp.up_proj.weight": "blk.{i}.ffn_up.weight",
    "model.layers.{i}.mlp.down_proj.weight": "blk.{i}.ffn_down.weight",
}


def tokenizer_fields(head_gguf: Path) -> list[tuple[str, object, object, object]]:
    """(key, value, type, element type) of every `tokenizer.*` field of a GGUF header."""
    import gguf

    reader = gguf.GGUFReader(head_gguf)
    fields = []
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        fields.append((name, field.contents(), vtype, sub))
    return fields


def write_tiny_gguf(model_dir: Path, head_gguf: Path, out: Path, head_scale: float = 1.0) -> Path:
    """Convert the safetensors Qwen2 in `model_dir` to an F32 GGUF at `out`."""
    import gguf
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    weights = load_file(str(model_dir / "model.safetensors"))
    writer = gguf.GGUFWriter(str(out), "qwen2")
    writer.add_name("editllm-tiny-qwen2")
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(cfg["num_attention_heads"])
    writer.add_head_count_kv(cfg["num_key_value_heads"])
    writer.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    writer.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, value, vtype, sub in tokenizer_fields(head_gguf):
        writer.add_key_value(key, value, vtype, sub_type=sub)
    for hf, name in TENSORS.items():
        for i in range(cfg["num_hidden_layers"]) if "{i}" in hf else [None]:
            writer.add_tensor(name.format(i=i), np.ascontiguousarray(weights[hf.format(i=i)], dtype=np.float32))
    head = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
    writer.add_tensor("output.weight", np.ascontiguousarray(head * head_scale, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def write_tiny_lora_gguf(adapter_dir: Path, out: Path) -> Path:
    """Write a peft LoRA adapter of the tiny model as the LoRA GGUF llama.cpp loads, the way llama.cpp's
    `convert_lora_to_gguf.py` lays it out: general.type `adapter`, adapter.type `lora`, its alpha, and for
    each adapted weight `<gguf name>.lora_a` (rank x in) and `.lora_b` (out x rank) as peft stores them.
    Written here (not by that script) so that the engine's tests need neither the converter nor its sdist."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    layers = {int(k.split(".layers.")[1].split(".")[0]) for k in weights if ".layers." in k}
    writer = gguf.GGUFWriter(str(out), "qwen2")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    for hf, name in TENSORS.items():
        if not hf.endswith(".weight") or "{i}" not in hf:
            continue
        for i in sorted(layers):
            stem = "base_model.model." + hf.format(i=i).removesuffix(".weight")
            if f"{stem}.lora_A.weight" not in weights:
                continue  # a module the adapter does not target
            for part, suffix in (("lora_A", "lora_a"), ("lora_B", "lora_b")):
                data = np.ascontiguousarray(weights[f"{stem}.{part}.weight"], dtype=np.float32)
                writer.add_tensor(f"{name.format(i=i)}.{suffix}", data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def quantize_gguf(src: Path, out: Path, ftype: str = "MOSTLY_Q4_K_M") -> Path:
    """Quantize a GGUF with llama.cpp's own quantizer (`llama_model_quantize`), as the bundled model was: the
    K-quant kernels (repacked, tiled, row by row) are only chosen for K-quant weights. Rows must be a multiple
    of 256 long, or llama.cpp falls back to other types for them."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_{ftype}")
    if llama_cpp.llama_model_quantize(str(src).encode(), str(out).encode(), params) != 0:
        raise RuntimeError(f"llama.cpp could not quantize {src}")
    return out
