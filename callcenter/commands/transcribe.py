"""`voiceswarm transcribe FILE.wav`: what Whisper hears in a recording (any sample rate), with its confidence."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("transcribe", help="transcribe a 16-bit WAV file (any sample rate) offline")
    parser.add_argument("file", metavar="FILE.wav")
    parser.add_argument(
        "--model", default="base", help="tiny.en, base, or a CTranslate2 model directory (default: base)"
    )
    parser.add_argument("--prompt", help="words to expect, e.g. product names (Whisper's initial prompt)")
    parser.add_argument("--beam", type=int, default=1, help="beam size (default: 1, greedy)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, config: Any) -> int:
    from speech import ModelError, Transcriber, WavError, read_wav

    try:
        pcm, rate = read_wav(args.file)
        transcriber = Transcriber(args.model, beam_size=args.beam, domain_prompt=args.prompt, workers=1)
    except (WavError, ModelError, ValueError) as error:
        print(f"voiceswarm transcribe: {error}", file=sys.stderr)
        return 1
    try:
        transcript = transcriber.transcribe_sync(pcm, rate=rate)
    finally:
        transcriber.close()
    print(transcript.text)
    verdict = "confident" if transcript.confident else "NOT confident: ask the caller to repeat"
    print(
        f"({verdict}; avg_logprob {transcript.avg_logprob:.2f}, no_speech_prob {transcript.no_speech_prob:.2f}, {transcript.duration_s:.1f} s at {rate} Hz)"
    )
    return 0
