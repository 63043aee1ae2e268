#!/usr/bin/env python3
# import-trace.py: a glibc mtrace trace of LINES lines for bench/import.sh, drawn from a fixed
# seed: 200 callers in the module-relative form of glibc 2.34+, at most LIVE blocks live at once
# (a program's steady state), half the records allocations, a tenth reallocs (two lines each),
# the rest frees; addresses grow, as a heap's do before it reuses them.
#
#   bench/import-trace.py LINES LIVE OUT
import random
import sys

lines, cap, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(1)
live = []
addr = 0x555500000000
callers = ["@ ./prog:[0x%x]" % (0x1000 + 16 * i) for i in range(200)]
n = 1
with open(out, "w") as f:
    f.write("= Start\n")
    while n < lines - 2:
        r = rng.random()
        if not live or (len(live) < cap and r < 0.5):
            addr += 0x30
            live.append(addr)
            f.write("%s + %#x %#x\n" % (rng.choice(callers), addr, rng.randint(1, 4096)))
        elif r < 0.6:
            i = rng.randrange(len(live))
            old, addr = live[i], addr + 0x30
            live[i] = addr
            f.write("%s < %#x\n%s > %#x 0x64\n" % (callers[7], old, callers[7], addr))
            n += 1
        else:
            i = rng.randrange(len(live))
            f.write("%s - %#x\n" % (callers[3], live[i]))
            live[i] = live[-1]
            live.pop()
        n += 1
    f.write("= End\n")
