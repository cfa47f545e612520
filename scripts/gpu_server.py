#!/usr/bin/env python3
"""gpu_server.py — a small OpenAI-compatible streaming server running a real transformer.

Issue 28: the model behind ``scripts/gpu-check.sh``. A Llama-style decoder (about 1.1B
parameters, TinyLlama's shape) is built from a config with random weights on the spot: no
download, no tokenizer files. Every request runs a real prefill forward pass over its whole
prompt and one decode forward pass per output token, with a KV cache, on the chosen device.
The output is meaningless (random weights); the work per token is real.

Endpoints: ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions`` (``stream``
true or false; ``stream_options.include_usage`` adds the usage chunk; usage always ends a
non-streamed answer). ``max_tokens`` (or ``max_completion_tokens``) tokens are generated,
no end-of-sequence stop (random weights would stop at random). Requests share the model;
forward passes are serialised by one lock, so concurrent requests interleave token by token.
No prefix cache: ``usage`` has no ``prompt_tokens_details`` (the product reads that as
"not reported", never 0).

Tokens: a word-level stand-in tokenizer (``\\w+`` runs and single punctuation marks, each
hashed to an id), so ``usage.prompt_tokens`` is the number of such pieces in the chat
rendered as ``<|role|>\\ncontent\\n``; a prompt longer than the model's positions minus
``max_tokens`` is refused with HTTP 400, never truncated.

Usage:
  gpu_server.py --port 0 --port-file FILE [--device cuda|cpu] [--tiny] [--model NAME]
``--port 0`` lets the kernel choose; the port is written to ``--port-file`` once the model is
ready. ``--tiny`` builds a model of a few hundred thousand parameters in float32 (the CPU
check of the script itself); without it the 1.1B shape in bfloat16. ``--self-test`` checks
the pure parts (tokenizer, chat rendering, request parsing) without torch.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
MAX_BODY_BYTES = 16 * 1024 * 1024

# TinyLlama-1.1B's shape: 22 layers, d=2048, MLP 5632, 32 heads with 4 KV heads.
FULL = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
            num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=8192)
TINY = dict(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192)
SPECIAL = 3  # ids 0..2 are reserved (pad, bos, eos); words hash into [SPECIAL, vocab)


def tokenize(text: str, vocab: int) -> list[int]:
    """Word pieces hashed to ids in [SPECIAL, vocab): stable across runs and processes."""
    out = []
    for piece in WORD.findall(text):
        h = int.from_bytes(hashlib.blake2b(piece.encode(), digest_size=4).digest(), "little")
        out.append(SPECIAL + h % (vocab - SPECIAL))
    return out


def detokenize(token_id: int) -> str:
    """A printable word for a generated id (the model's words carry no meaning)."""
    return f" w{token_id}"


def render_chat(messages: list[dict[str, Any]], tools: list[Any] | None) -> str:
    """The prompt text: the tool list, then each message as ``<|role|>\\ncontent\\n``, then
    the assistant's header. Tool calls of earlier assistant turns are written as JSON."""
    parts = []
    if tools:
        parts.append("<|tools|>\n" + json.dumps(tools, sort_keys=True) + "\n")
    for m in messages:
        if not isinstance(m, dict):
            raise ValueError("messages: every entry must be an object")
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = content if isinstance(content, str) else ""
        if m.get("tool_calls"):
            text += json.dumps(m["tool_calls"], sort_keys=True)
        parts.append(f"<|{m.get('role', 'user')}|>\n{text}\n")
    parts.append("<|assistant|>\n")
    return "".join(parts)


def parse_request(body: bytes) -> dict[str, Any]:
    """The fields the server uses, validated; ValueError names the bad field."""
    try:
        req = json.loads(body)
    except ValueError as e:
        raise ValueError(f"body is not JSON: {e}") from None
    if not isinstance(req, dict):
        raise ValueError("body must be a JSON object")
    msgs = req.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise ValueError("messages: a non-empty array is required")
    max_tokens = req.get("max_completion_tokens", req.get("max_tokens", 16))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError(f"max_tokens: a positive integer is required, got {max_tokens!r}")
    opts = req.get("stream_options") or {}
    return {
        "messages": msgs,
        "tools": req.get("tools"),
        "max_tokens": max_tokens,
        "stream": bool(req.get("stream", False)),
        "include_usage": bool(isinstance(opts, dict) and opts.get("include_usage")),
        "n": req.get("n", 1),
    }


class Engine:
    """The model and its lock: prefill and decode are real forward passes."""

    def __init__(self, device: str, tiny: bool, seed: int) -> None:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        self.torch = torch
        shape = TINY if tiny else FULL
        self.vocab = shape["vocab_size"]
        self.max_positions = shape["max_position_embeddings"]
        dtype = torch.float32 if tiny else torch.bfloat16
        torch.manual_seed(seed)
        cfg = LlamaConfig(**shape)
        with torch.device(device):
            model = LlamaForCausalLM(cfg)
        self.model = model.to(dtype).eval()
        # transformers 5.19+ names the KV cache `cache`; earlier releases `past_key_values`.
        import inspect
        params = inspect.signature(self.model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.device = device
        self.params = sum(p.numel() for p in self.model.parameters())
        self.lock = threading.Lock()
        # One forward pass at start so the first request does not pay for lazy set-up.
        self.generate([SPECIAL] * 8, 2, lambda _tok: None)

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def generate(self, prompt: list[int], max_tokens: int, emit) -> int:
        """Prefill over ``prompt``, then ``max_tokens`` greedy decode steps; ``emit(id)`` is
        called after each token's forward pass completed. Returns tokens generated."""
        torch = self.torch
        with torch.inference_mode():
            ids = torch.tensor([prompt], device=self.device)
            with self.lock:
                out = self.model(input_ids=ids, use_cache=True)
                self._sync()
            past = out[self.cache_arg]
            nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
            emit(int(nxt.item()))
            for _ in range(max_tokens - 1):
                with self.lock:
                    out = self.model(input_ids=nxt, use_cache=True, **{self.cache_arg: past})
                    self._sync()
                past = out[self.cache_arg]
                nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
                emit(int(nxt.item()))
        return max_tokens


def chunk(cid: str, model: str, created: int, delta: dict[str, Any] | None,
          finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created,
                           "model": model,
                           "choices": [] if delta is None else
                           [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def make_handler(engine: Engine | None, model_name: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: one line per error only
            pass

        def _json(self, status: int, obj: Any) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, msg: str) -> None:
            self._json(status, {"error": {"message": msg, "type": "invalid_request_error",
                                          "code": status}})

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [
                    {"id": model_name, "object": "model", "created": 0, "owned_by": "gpu-check"}]})
            elif self.path == "/health":
                self._json(200, {"status": "ok"})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 < length <= MAX_BODY_BYTES:
                self._error(400, f"Content-Length must be 1..{MAX_BODY_BYTES} bytes")
                return
            try:
                req = parse_request(self.rfile.read(length))
                if req["n"] != 1:
                    raise ValueError("n: only 1 is served")
                prompt = tokenize(render_chat(req["messages"], req["tools"]), engine.vocab)
            except ValueError as e:
                self._error(400, str(e))
                return
            if len(prompt) + req["max_tokens"] > engine.max_positions:
                self._error(400, f"prompt of {len(prompt)} tokens + max_tokens "
                                 f"{req['max_tokens']} exceeds {engine.max_positions} positions")
                return
            usage = {"prompt_tokens": len(prompt), "completion_tokens": req["max_tokens"],
                     "total_tokens": len(prompt) + req["max_tokens"]}
            cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
            if req["stream"]:
                self._stream(req, prompt, usage, cid, created)
            else:
                words: list[str] = []
                engine.generate(prompt, req["max_tokens"], lambda t: words.append(detokenize(t)))
                self._json(200, {"id": cid, "object": "chat.completion", "created": created,
                                 "model": model_name, "usage": usage, "choices": [
                                     {"index": 0, "finish_reason": "length", "message": {
                                         "role": "assistant", "content": "".join(words)}}]})

        def _stream(self, req, prompt, usage, cid, created) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            w = self.wfile
            w.write(chunk(cid, model_name, created, {"role": "assistant", "content": ""}))
            w.flush()

            def emit(tok: int) -> None:
                w.write(chunk(cid, model_name, created, {"content": detokenize(tok)}))
                w.flush()

            try:
                engine.generate(prompt, req["max_tokens"], emit)
                w.write(chunk(cid, model_name, created, {}, finish="length"))
                if req["include_usage"]:
                    w.write(chunk(cid, model_name, created, None, usage=usage))
                w.write(b"data: [DONE]\n\n")
                w.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away; the forward passes already run are real work

    return Handler


def self_test() -> int:
    fails = []
    toks = tokenize("Hello, world! hello", 4096)
    if len(toks) != 5 or toks[0] == toks[4] or not all(SPECIAL <= t < 4096 for t in toks):
        fails.append(f"tokenize: {toks}")
    if tokenize("Hello, world! hello", 4096) != toks:
        fails.append("tokenize is not stable")
    chat = render_chat([{"role": "system", "content": "s"},
                        {"role": "assistant", "content": None,
                         "tool_calls": [{"id": "c1", "function": {"name": "f"}}]},
                        {"role": "tool", "content": "r"}], [{"type": "function"}])
    if not (chat.startswith("<|tools|>") and "<|tool|>\nr\n" in chat
            and chat.endswith("<|assistant|>\n") and '"name": "f"' in chat):
        fails.append(f"render_chat: {chat!r}")
    r = parse_request(b'{"messages":[{"role":"user","content":"x"}],"max_tokens":4,'
                      b'"stream":true,"stream_options":{"include_usage":true}}')
    if (r["max_tokens"], r["stream"], r["include_usage"]) != (4, True, True):
        fails.append(f"parse_request: {r}")
    for bad, field in ((b"[]", "object"), (b'{"messages":[]}', "messages"),
                       (b'{"messages":[{}],"max_tokens":0}', "max_tokens"), (b"{", "JSON")):
        try:
            parse_request(bad)
            fails.append(f"parse_request accepted {bad!r}")
        except ValueError as e:
            if field not in str(e):
                fails.append(f"parse_request({bad!r}): {e} does not name {field}")
    for f in fails:
        print(f"self-test FAIL: {f}")
    print("self-test: ok" if not fails else "self-test: FAILED")
    return 1 if fails else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--model", default="gpu-check-llama")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if a.threads:
        import torch
        torch.set_num_threads(a.threads)
    t0 = time.monotonic()
    engine = Engine(a.device, a.tiny, a.seed)
    srv = ThreadingHTTPServer((a.host, a.port), make_handler(engine, a.model))
    srv.daemon_threads = True
    port = srv.server_address[1]
    print(f"gpu_server: {engine.params:,} parameters on {a.device} "
          f"({'tiny' if a.tiny else '1.1B shape'}), ready in {time.monotonic() - t0:.1f} s, "
          f"http://{a.host}:{port}/v1", flush=True)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
