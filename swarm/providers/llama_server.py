"""llama.cpp's server (the `xllamacpp` wheel) in a process of its own; `LocalServer` runs it, not people.

    python -m swarm.providers.llama_server --model M.gguf [--chat-template T.jinja] --threads 1 --batch-threads 2 --ctx 4096 --nice 10 --max-tokens 512 --batch 64

A child process, so that the server's threads never hold the GIL of the process that paces RTP, can run
at a lower priority than the calls' media and Whisper, and can be restarted when it dies. It prints one
line, `listening http://127.0.0.1:PORT`, once the model is loaded (the port is chosen by the kernel), and
exits when its standard input closes, so it never outlives the process that started it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

READY = "listening "
# llama-server's --spec-type values that need no draft model: a draft is copied from the tokens already in the
# slot (the prompt and the reply so far), so a reply that repeats its tool result's words is checked in batches.
SPECULATION = ("none", "ngram-simple", "ngram-map-k", "ngram-mod")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when the server stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.nice:
        os.nice(args.nice)  # before any thread starts: Linux threads inherit their creator's niceness
    import xllamacpp

    server = xllamacpp.Server(params_of(args))  # returns once the model is loaded and the port is open
    print(READY + server.listening_address, flush=True)
    sys.stdin.read()  # until the parent closes it or dies
    del server
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m swarm.providers.llama_server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--chat-template", default="", help="a jinja chat template file; default: the model's own")
    parser.add_argument("--threads", type=int, default=2, help="threads that write the reply, token by token")
    parser.add_argument("--batch-threads", type=int, default=0, help="threads that read the prompt; 0: --threads")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64, help="prompt tokens read between two looks at the queue")
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument(
        "--max-tokens", type=int, default=-1, help="per reply, unless a request asks for fewer; -1: no limit"
    )
    parser.add_argument("--spec-type", default="none", choices=SPECULATION, help="draftless speculative decoding")
    parser.add_argument("--spec-ngram-size-n", type=int, default=12, help="tokens matched against the history")
    parser.add_argument("--spec-ngram-size-m", type=int, default=48, help="tokens drafted after a match, at most")
    parser.add_argument("--model-draft", default="", help="a smaller model of the same tokenizer drafts replies")
    parser.add_argument("--draft-max", type=int, default=16, help="tokens the draft model drafts, at most")
    parser.add_argument("--slot-save-path", default="", help="a folder for /slots/N?action=save and restore")
    return parser.parse_args(argv)


def params_of(args: argparse.Namespace) -> Any:
    """The server's xllamacpp.CommonParams from the command line's words."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as file:
            params.chat_template = file.read()  # the template's text, as llama-server's --chat-template-file does
    params.use_jinja = True
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    params.n_predict = args.max_tokens
    # The server works through a prompt in chunks of n_batch tokens, and only between chunks does it take up
    # a cancelled request's end. A read is cancelled when a call hangs up, and an early reply when the caller
    # goes on talking: the turn that follows waits for the chunk. See ServerSpec.batch.
    params.n_batch = params.n_ubatch = args.batch
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.batch_threads or args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.warmup = True
    if args.slot_save_path:
        params.slot_save_path = args.slot_save_path.rstrip("/") + "/"
    _speculate(params, args.spec_type, args.spec_ngram_size_n, args.spec_ngram_size_m)
    if args.model_draft:
        _draft(params, args.model_draft, args.draft_max, args.threads, args.batch_threads or args.threads)
    return params


def _speculate(params: Any, kind: str, n: int, m: int) -> None:
    """Set llama-server's --spec-type, --spec-ngram-size-n and -m on `params` (xllamacpp.CommonParams)."""
    if kind == "none":
        return
    import xllamacpp

    speculative = params.speculative
    speculative.types = [
        getattr(xllamacpp.common_speculative_type, "COMMON_SPECULATIVE_TYPE_" + kind.upper().replace("-", "_"))
    ]
    for ngram in (speculative.ngram_simple, speculative.ngram_map_k):
        ngram.size_n, ngram.size_m = n, m
    speculative.ngram_mod.n_match, speculative.ngram_mod.n_min, speculative.ngram_mod.n_max = n, 1, m


def _draft(params: Any, model: str, n_max: int, threads: int, batch_threads: int) -> None:
    """llama-server's -md MODEL --draft-max N: the draft model on the same threads as the model."""
    import xllamacpp

    params.speculative.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    draft = params.speculative.draft
    draft.mparams.path = model
    draft.n_max, draft.n_min = n_max, 0
    draft.cpuparams.n_threads, draft.cpuparams_batch.n_threads = threads, batch_threads


if __name__ == "__main__":
    sys.exit(main())
