#!/usr/bin/env python3
"""Generate a small deterministic random-weight GGUF model for the real-engine tests.

Usage:
    python gen_tiny_gguf.py OUT.gguf [--seed 0] [--n-embd 256] [--n-layer 4] [--n-head 4]
                            [--n-head-kv 4] [--n-ff 4096] [--n-ctx 4096]

Needs the pinned `gguf==0.19.0` and numpy (the venv made by `scripts/llama-server.sh venv`).
Facts and the recipe: ../shared/ref/llama-cpp-real-engine.md ("Model generator", pitfall 4).

What it writes (llama architecture, F32 tensors):
  * Weights from ``numpy.random.default_rng(seed)`` in a fixed order, so the same arguments
    give a byte-identical file (the GGUF writer adds no timestamps; key order is fixed).
  * An SPM (``llama``) vocab: the control tokens ``<unk> <s> </s> <|im_start|> <|im_end|>``,
    the 256 byte-fallback tokens ``<0xNN>``, ``▁``, the 94 printable ASCII characters, and
    common word pieces (every prefix of each word in WORDS, with and without the ``▁`` space
    marker). llama.cpp's SPM tokenizer merges the highest-scoring adjacent pair first; pieces
    starting with ``▁`` score above bare pieces and longer pieces above shorter ones, so a
    word is assembled left to right from its space marker. English text from the word list
    then tokenizes at about 4-5 bytes per token, so "approximate tokens (4 bytes per token)"
    in suites holds roughly on this model; unknown characters fall back to byte tokens.
  * ``tokenizer.ggml.add_space_prefix = false``: with ``true`` the text after
    ``<|im_start|>`` becomes ``▁assistant`` and tool-call grammar init fails with HTTP 400
    (reference pitfall 4).
  * A ChatML chat template that renders ``tools`` (Hermes-style ``<tools>`` system section,
    assistant ``<tool_call>`` blocks, ``<tool_response>`` user turns), so llama-server accepts
    tool-bearing requests and ``/props`` reports tool support.
  * ``output.weight`` rows for control and byte tokens are zero, so greedy decoding emits only
    printable text and never EOS: every request runs to ``max_tokens``
    (``finish_reason: "length"``).

Default size: 256 wide, 4 layers, 4 heads, a wide FFN of 4096 (~67 MB, ~16 M parameters).
The wide FFN makes prefill compute-heavy, while a warm step's cost is mostly fixed request
overhead and attention over the cached context, so the cold/warm TTFT gap is wide. Measured
with llama-server -t 2 on the 2-core machine, over the llama-cpp suite's trajectory (cold
prompt 2,222 tokens, warm steps adding 117-152 tokens): idle, cold TTFT 0.87-1.18 s vs warm
mean 0.10 s (ratio 8.7-11.5, cold/slowest warm 6.5-9.0); with two busy loops competing,
cold 2.6-5.2 s vs warm mean 0.4-0.65 s (ratio 4.1-13, cold/slowest warm 2.9-8.0). Decode is
~5 ms/token idle. The narrower FFN of 704 gave ratios of only 5-6 idle.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover - environment error, not logic
    sys.exit("gen_tiny_gguf.py: the `gguf` package is missing; use the venv from "
             "`scripts/llama-server.sh venv` (gguf==0.19.0)")

SPACE = "\u2581"  # ▁, SentencePiece's space marker

CONTROL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
UNK_ID, BOS_ID, EOS_ID, IM_START_ID, IM_END_ID = range(5)

# Common English and engineering words. Every prefix of each (with and without the space
# marker) becomes a vocab piece. Fixture texts under fixtures/llama-cpp/ are written mostly
# from these words, so they tokenize at a realistic rate.
WORDS = """
the be to of and a in that have it for not on with he as you do at this but his by from
they we say her she or an will my one all would there their what so up out if about who
get which go me when make can like time no just him know take people into year your good
some could them see other than then now look only come its over think also back after use
two how our work first well way even new want because any these give day most us is are
was were been has had did does done said each many may must should shall might very such
more less much own same here where why while before under between through during without
again further once both few those every next last long little great small large old high
right left part place case point number world state system program question fact group
problem hand order end line name form set thing help tool tools call calls result results
file files read write search find list show run test tests check build report step steps
data value values request response server client model models cache cached prompt token
tokens text answer user assistant function arguments json error status code time first
second third final task plan note notes keep short clear always never please each model
input output source target path open close start stop wait ready return returns field
fields table row rows column columns query key keys version release issue issues change
changes commit branch review pass fail warm cold prefix context history message messages
agent agents trajectory latency throughput engine engines benchmark metric metrics count
total mean median minimum maximum percent rate size sizes byte bytes memory disk network
city weather forecast temperature wind rain sun cloud clouds morning evening today tomorrow
week month report summary detail details example examples project repository module
modules library crate package packages document documents section sections page pages
account order orders price prices customer customers product products shipping delivery
invoice payment balance ticket tickets support team teams owner owners service services
description parameter parameters required optional default type object string integer
array boolean null true false unknown known given based using used uses include includes
contains match matches between among across within inside outside around above below
careful carefully exactly only every useful helpful correct correctly concise precise
information relevant answer answers explain explains describe describes result steps
before after until since therefore however because although whether either neither also
ms found reason took different reads numbers slot slots whole sends job jobs kind failed rules rule
wants conversation reports words word facts keeps starts whose grows later works depends runs
trajectories exact says lines units unit clients bad sure repeat engineering understand inference
named follow needed already decide try argument twice takes simple guess enough called added zero
missing slow fast load machine length several agentic prompts completed requests need setting asks
something changed let hide anything lose gives terms often informed names secrets passwords hint ask
""".split()


def _vocab_pieces() -> list[str]:
    """Return the normal (non-control, non-byte) pieces in a fixed order, deduplicated."""
    pieces: list[str] = [SPACE]
    pieces += [chr(c) for c in range(0x21, 0x7F)]  # the 94 printable ASCII characters
    seen = set(pieces)
    for word in dict.fromkeys(WORDS):  # dedupe, keep order
        for form in (word, word.capitalize()):
            for stem in (SPACE + form, form):
                for end in range(2, len(stem) + 1):
                    piece = stem[:end]
                    if piece not in seen:
                        seen.add(piece)
                        pieces.append(piece)
    return pieces


def build_vocab() -> tuple[list[str], list[float], list[int]]:
    """Return (tokens, scores, token types) of the SPM vocab, in id order."""
    tt = gguf.TokenType
    tokens = list(CONTROL_TOKENS)
    scores = [0.0] * len(tokens)
    types = [int(tt.UNKNOWN)] + [int(tt.CONTROL)] * (len(CONTROL_TOKENS) - 1)
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(int(tt.BYTE))
    for piece in _vocab_pieces():
        tokens.append(piece)
        # Higher score merges first: space-marked pieces, then longer pieces.
        scores.append((100.0 if piece.startswith(SPACE) else 0.0) + float(len(piece)))
        types.append(int(tt.NORMAL))
    return tokens, scores, types


# ChatML with Hermes-style tool sections (the shape Qwen2.5 / Hermes 2 Pro use).
CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}
{{- messages[0].content + '\\n\\n' }}
{%- endif %}
{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}
{{- '\\n' }}{{- tool | tojson }}
{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}
{{- '\\n' + message.content }}
{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}
{%- set tool_call = tool_call.function %}
{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}
{{- tool_call.arguments }}
{%- else %}
{{- tool_call.arguments | tojson }}
{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}
{{- '<|im_start|>user' }}
{%- endif %}
{{- '\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
{{- '<|im_end|>\\n' }}
{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output .gguf path")
    p.add_argument("--seed", type=int, default=0, help="numpy default_rng seed (default 0)")
    p.add_argument("--n-embd", type=int, default=256, help="embedding width (default 256)")
    p.add_argument("--n-layer", type=int, default=4, help="transformer blocks (default 4)")
    p.add_argument("--n-head", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--n-head-kv", type=int, default=4, help="KV heads (default 4)")
    p.add_argument("--n-ff", type=int, default=4096, help="FFN width (default 4096)")
    p.add_argument("--n-ctx", type=int, default=4096, help="training context (default 4096)")
    args = p.parse_args(argv)
    for name in ("n_embd", "n_layer", "n_head", "n_head_kv", "n_ff", "n_ctx"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.n_embd % args.n_head or args.n_head % args.n_head_kv:
        p.error("--n-embd must be a multiple of --n-head, and --n-head of --n-head-kv")
    if (args.n_embd // args.n_head) % 2:
        p.error("the head size (n_embd / n_head) must be even for RoPE")
    return args


def generate(args: argparse.Namespace) -> None:
    """Write the model described by ``args`` to ``args.out``."""
    tokens, scores, types = build_vocab()
    n_vocab = len(tokens)
    n_embd, n_ff = args.n_embd, args.n_ff
    head_dim = n_embd // args.n_head
    n_embd_kv = head_dim * args.n_head_kv
    rng = np.random.default_rng(args.seed)

    def mat(rows: int, cols: int, std: float) -> np.ndarray:
        # numpy shape (rows, cols) = GGUF ne [cols, rows]: `rows` outputs from `cols` inputs.
        return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(std))

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(f"inferscope-tiny-{n_embd}x{args.n_layer}-seed{args.seed}")
    w.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    w.add_context_length(args.n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(args.n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(args.n_head)
    w.add_head_count_kv(args.n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)

    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(UNK_ID)
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(IM_END_ID)  # ChatML turns end with <|im_end|>
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(CHAT_TEMPLATE)

    std = 0.02
    w.add_tensor("token_embd.weight", mat(n_vocab, n_embd, 1.0))
    for i in range(args.n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", mat(n_embd, n_embd, std))
        w.add_tensor(f"blk.{i}.attn_k.weight", mat(n_embd_kv, n_embd, std))
        w.add_tensor(f"blk.{i}.attn_v.weight", mat(n_embd_kv, n_embd, std))
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(n_embd, n_embd, std))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(n_ff, n_embd, std))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(n_ff, n_embd, std))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(n_embd, n_ff, std))
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    out = mat(n_vocab, n_embd, 1.0)
    # Control and byte tokens can never be sampled: no EOS, no raw bytes, printable output.
    non_normal = [i for i, t in enumerate(types) if t != int(gguf.TokenType.NORMAL)]
    out[non_normal, :] = 0.0
    w.add_tensor("output.weight", out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    generate(args)
    tokens, _, _ = build_vocab()
    print(f"wrote {args.out}: llama {args.n_embd}x{args.n_layer} (heads {args.n_head}/"
          f"{args.n_head_kv}, ffn {args.n_ff}), vocab {len(tokens)}, seed {args.seed}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
