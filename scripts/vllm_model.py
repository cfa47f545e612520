#!/usr/bin/env python3
"""vllm_model.py GGUF OUT_DIR: a Hugging Face model directory vLLM can serve, made from the
SmolLM2 GGUF alone (no model hub): weights dequantized to bf16 safetensors, config and
tokenizer files. Run with the vLLM venv's python (scripts/vllm.sh model), offline.

transformers reads a GGUF (`from_pretrained(dir, gguf_file=...)`) but refuses to
`save_pretrained` the model it loaded that way; its state dict is copied into a plain model
built from the same config, which saves. The output is byte-identical on every run.
"""

import os
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: vllm_model.py GGUF OUT_DIR", file=sys.stderr)
        return 2
    gguf, out = sys.argv[1], sys.argv[2]
    if not os.path.isfile(gguf):
        print(f"vllm_model.py: {gguf}: not a file", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    src_dir, name = os.path.split(os.path.abspath(gguf))
    loaded = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(src_dir, gguf_file=name)
    config.dtype = torch.bfloat16
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    # Tied embeddings may be absent from one side; anything else is a wrong conversion.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        print(f"vllm_model.py: state dicts differ: missing {missing}, unexpected {unexpected}",
              file=sys.stderr)
        return 1
    plain = plain.to(torch.bfloat16)
    plain.save_pretrained(out, safe_serialization=True)
    tok = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
    tok.save_pretrained(out)
    n = sum(p.numel() for p in plain.parameters())
    print(f"vllm_model.py: {out}: {config.model_type}, {n} parameters, bf16")
    return 0


if __name__ == "__main__":
    sys.exit(main())
