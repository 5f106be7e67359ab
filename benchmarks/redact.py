"""What masking costs per transcript line (callcenter/redact.py): the call records redact every line once, on
their writer thread, and the supervisor's page every line it shows.

For each kind of line: microseconds per call of redact() (median of --rounds rounds of --repeat calls each),
and whether it was masked. The lines are the shop's own sentences and what callers say.

Usage: .venv/bin/python benchmarks/redact.py [--repeat 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from callcenter.redact import redact

LINES = {
    "no digits": "I'd like to return the wireless headphones I bought last week, they stopped working.",
    "price and order number": "Your order is placed. The order number is 5 3 0 3 0 1 2 3, and the total is 24 euros 90.",
    "card, grouped": "My card is 4111 1111 1111 1111, expiry 12/27.",
    "card, spoken": "four one one one one one one one one one one one one one one one",
    "phone, national": "You can call me back on 0151 23456789 after six.",
    "SIP From": '"Jane" <sip:+4915100000000@pbx.example.com>;tag=1',
    "IBAN and e-mail": "IBAN DE89 3704 0044 0532 0130 00, and my e-mail is jane.doe@example.com",
    "long line (600 chars)": " ".join(["I have order 12345 and 67890 and it cost 129 euros on 01/12/2026."] * 9),
    "hostile: 300 digits read out": " ".join(["one", "two", "three"] * 100),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(
        f"redact() per line, median of {args.rounds} rounds x {args.repeat} calls; load average {load:.1f} "
        f"on {os.cpu_count()} cores\n"
    )
    print("| line | chars | µs per line | masked |")
    print("|---|---:|---:|---|")
    for name, line in LINES.items():
        redact(line)  # phonenumbers loads its region's tables on first use
        rounds = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            for _ in range(args.repeat):
                redact(line)
            rounds.append((time.perf_counter() - started) / args.repeat * 1e6)
        print(f"| {name} | {len(line)} | {statistics.median(rounds):.0f} | {'yes' if redact(line) != line else 'no'} |")


if __name__ == "__main__":
    main()
