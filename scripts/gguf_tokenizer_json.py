#!/usr/bin/env python3
"""gguf_tokenizer_json.py — a Hugging Face tokenizer.json from a GGUF's embedded GPT-2-style
BPE vocabulary (issue 27), so the runner's `tokenizer = "PATH"` source can be tested against
llama-server without downloading anything from a hub.

Usage: gguf_tokenizer_json.py MODEL.gguf OUT.json     (needs the `gguf` package: the venv of
       scripts/llama-server.sh)

Only `tokenizer.ggml.model = "gpt2"` vocabularies are supported (SmolLM2's is one). The
pre-tokenizer follows llama.cpp's pre-tokenizer type: `smollm` splits every digit on its own,
then the GPT-2 byte-level regex (the same pair SmolLM2's own tokenizer.json declares);
`gpt2` and `default` use the byte-level regex alone. Control and user-defined tokens become
special added tokens, so `<|im_start|>` in a text is one token, as llama-server parses it.
"""

import json
import sys


def field_str(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def field_list(reader, key, conv):
    f = reader.fields.get(key)
    if f is None:
        return []
    return [conv(f.parts[i]) for i in f.data]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import gguf  # noqa: PLC0415 (from the tool venv)

    reader = gguf.GGUFReader(argv[1])
    model = field_str(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        print(f"{argv[1]}: tokenizer.ggml.model is {model!r}, only 'gpt2' is supported",
              file=sys.stderr)
        return 1
    pre = field_str(reader, "tokenizer.ggml.pre") or "default"
    tokens = field_list(reader, "tokenizer.ggml.tokens", lambda p: bytes(p).decode("utf-8"))
    merges = field_list(reader, "tokenizer.ggml.merges", lambda p: bytes(p).decode("utf-8"))
    types = field_list(reader, "tokenizer.ggml.token_type", lambda p: int(p[0]))
    # llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    added = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, (t, ty) in enumerate(zip(tokens, types)) if ty in (3, 4)
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    if pre == "smollm":
        pre_tok = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]}
    elif pre in ("gpt2", "default"):
        pre_tok = byte_level
    else:
        print(f"{argv[1]}: pre-tokenizer {pre!r} is not supported", file=sys.stderr)
        return 1
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tok,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": merges,
        },
    }
    with open(argv[2], "w", encoding="utf-8") as out:
        json.dump(doc, out, ensure_ascii=False)
    print(f"{argv[2]}: {len(tokens)} tokens, {len(merges)} merges, pre-tokenizer {pre}, "
          f"{len(added)} special tokens", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
