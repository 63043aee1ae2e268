#!/usr/bin/env python3
# tests/thirdparty/src/site_check.py: did leek see the allocations a third-party program says it
# made? Used by jvm.sh, node.sh, go.sh and rust.sh.
#
# The program makes N allocations of S bytes each from one place that no other code uses (a C
# function, a Rust function, the JVM's Unsafe.allocateMemory) and prints N and S. This script asks
# `leek report alloc --format json --focus REGEX` for the stacks through that place and checks:
#
#   exact mode (period 1)  allocated objects == N and bytes == N * S, to the byte;
#   sampled mode           |bytes estimate - N * S| <= 4 sigma, sigma^2 = N S^2 (1 - p) / p,
#                          p = 1 - exp(-S / T)  (docs/sampling.md sections 2 and 4; 4 sigma is a
#                          two-sided tail of 6.3e-5, section 10). The bound comes from the known
#                          N and S, not from the samples, so a wrong weight cannot widen it.
#
# With "min" (when other code allocates through the same frames, e.g. node's ArrayBuffer
# allocator), the N allocations are a part of what the frames show: exact mode needs at least N
# objects and N * S bytes, sampled mode an estimate of at least N * S - 4 sigma (the others' share
# of the estimate is never negative, so the one-sided tail is still 3.2e-5).
#
# It must never pass on a profile it could not read, or on zero samples where N * S is large.
# Exit 0 when the check holds, 1 when it does not, with one line saying why either way.
#
# Usage: site_check.py LEEK PROFILE REGEX N S [min]

import json
import math
import subprocess
import sys


def main():
    leek, profile, regex, n, size = sys.argv[1:6]
    n, size = int(n), int(size)
    at_least = sys.argv[6:7] == ["min"]
    out = subprocess.run(
        [leek, "report", "alloc", "--format", "json", "--top", "0", "--focus", regex, profile],
        capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        print(f"leek report exited {out.returncode}: {out.stderr.strip()[:300]}")
        return 1
    doc = json.loads(out.stdout)
    sites = doc.get("sites", [])
    got_bytes = sum(s["alloc_bytes"] for s in sites)
    got_objects = sum(s["alloc_objects"] for s in sites)
    samples = sum(s["alloc_samples"] for s in sites)
    period = doc["totals"]["period"]
    want = n * size
    if period == 1:
        if at_least:
            ok = got_bytes >= want and got_objects >= n
        else:
            ok = got_bytes == want and got_objects == n
        print(f"exact: {got_objects} allocations, {got_bytes} bytes through /{regex}/; "
              f"the program made {n} of {size} bytes = {want}{' among them' if at_least else ''}")
        return 0 if ok else 1
    p = -math.expm1(-size / period)
    sigma = math.sqrt(n * size * size * (1 - p) / p)
    if at_least:
        ok = got_bytes >= want - 4 * sigma
    else:
        ok = abs(got_bytes - want) <= 4 * sigma
    print(f"period {period}: estimate {got_bytes} bytes from {samples} samples through /{regex}/; "
          f"the program made {want}{' among them' if at_least else ''}, 4 sigma = {4 * sigma:.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
