#!/usr/bin/env python3
"""callgrind-split.py: where a preloaded malloc shim's instructions go, from a callgrind output file.

    bench/callgrind-split.py [--lib NAME] CALLGRIND.OUT

Reads the call graph of one callgrind run of a program with LD_PRELOAD=libleek.so (or the floor
interposer, bench/floor.c: --lib libfloor) and prints one line per part of the library's cost:

  total       every instruction of the run
  hooks       the exported malloc-family hooks themselves, their own instructions only: the fast
              path (the countdown, the arena range check, the tail call)
  startup     everything under the library's constructor and init (config, arena, dlsym, the file,
              the modules), wherever it was first called from
  exit        everything under the destructor and the _exit hook (trailer, truncation)
  <name>      every other way into the library from outside it, by the function entered (with
              the number of calls, and instructions per call), with
              everything it calls, libc and libunwind included: the samples (malloc (slow part),
              calloc_slow, lk_realloc_slow with its copies), the frees of sampled blocks
              (lk_free_sampled), ...
  real allocator   of the parts above, what went on in the real allocator (malloc, free,
              realloc... called from the library's slow paths): work the program would have done
              without the library too, such as an unsampled realloc that ran out the countdown

A call from a hook into the rest of the library counts under the function it enters, never twice:
a call is counted where it crosses into the library's non-hook functions from a hook or from code
outside the library (libunwind and libc's dl_iterate_phdr call back into the library only on its
behalf, so those calls are not counted again). What the run costs beyond these (the dynamic loader
mapping and relocating the library and libunwind, the real allocator doing less work for blocks it
never sees) is not here: compare totals with a run without the library. Only the Ir event is read.
No dependencies beyond python3.
"""
import re
import sys
from collections import Counter

HOOKS = {"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
         "memalign", "valloc", "pvalloc", "malloc_usable_size", "free_sized", "free_aligned_sized",
         "dl_iterate_phdr", "_exit", "_Exit"}
STARTUP = {"lk_ctor", "lk_init", "floor_ctor", "init"}
EXIT = {"lk_fini"}


def parse(path):
    """Returns (total, self cost by (object, function), inclusive cost and calls by call edge)."""
    names = {"ob": {}, "fl": {}, "fn": {}}
    kinds = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl",
             "fn": "fn", "cfn": "fn"}
    total = 0
    selfcost = Counter()
    edges = Counter()
    ncalls = Counter()
    ob = fn = cob = cfn = None
    in_call = 0

    def name(kind, s):
        m = re.match(r"\((\d+)\)(?: (.*))?$", s)
        if not m:
            return s
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), s)

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if in_call:
                    edges[(fn, (cob or ob, cfn))] += cost
                    ncalls[(fn, (cob or ob, cfn))] += in_call
                    in_call = 0
                    cob = None
                else:
                    selfcost[fn] += cost
                continue
            key, sep, val = line.partition("=")
            if sep and key in kinds:
                v = name(kinds[key], val.strip())
                if key == "ob":
                    ob = v
                elif key == "fn":
                    fn = (ob, v)
                    cob = None
                elif key == "cob":
                    cob = v
                elif key == "cfn":
                    cfn = v
            elif key == "calls":
                in_call = int(val.split()[0])
            elif line.startswith(("summary:", "totals:")) and not total:
                total = int(line.split()[1])
    return total, selfcost, edges, ncalls


def main():
    args = sys.argv[1:]
    lib = "libleek"
    if len(args) >= 2 and args[0] == "--lib":
        lib, args = args[1], args[2:]
    if len(args) != 1:
        sys.exit(__doc__.split("\n\n")[1])
    total, selfcost, edges, ncalls = parse(args[0])

    def ours(f):
        return f is not None and f[0] is not None and lib in f[0]

    def base(f):  # gcc's split parts (malloc.cold, lk_sample.part.0) belong to their function
        return f[1].split(".")[0].split("'")[0]

    def on_behalf(f):  # code that calls into the library only while the library runs
        return f is not None and ((f[0] and "libunwind" in f[0]) or f[1] == "dl_iterate_phdr")

    hooks = sum(c for f, c in selfcost.items() if ours(f) and f[1] in HOOKS)
    hook_calls = sum(n for (a, b), n in ncalls.items()
                     if ours(b) and b[1] in HOOKS and not ours(a) and not on_behalf(a))
    parts = Counter()
    calls = Counter()
    real = 0
    for (caller, callee), c in edges.items():
        if ours(caller) and caller[1] not in HOOKS:
            if not ours(callee) and callee[1] in HOOKS - {"dl_iterate_phdr", "_exit", "_Exit"}:
                real += c
            continue  # inside the library already: counted where it was entered
        if not ours(callee) or callee[1] in HOOKS or on_behalf(caller):
            continue
        b = base(callee)
        if b in STARTUP:
            b = "startup"
        elif b in EXIT:
            b = "exit"
        elif b in HOOKS:
            b += " (slow part)"
        elif b.startswith("0x"):
            b = "plt stubs, _init"
        parts[b] += c
        calls[b] += ncalls[(caller, callee)]
    print(f"{'total':<24} {total:>15,}")
    each = hooks / max(hook_calls, 1)
    print(f"{'hooks':<24} {hooks:>15,}  {hook_calls:>8,} calls, {each:,.1f} each")
    for k in ("startup", "exit"):
        print(f"{k:<24} {parts.pop(k, 0):>15,}")
    for k, c in parts.most_common():
        n = calls[k]
        print(f"{k:<24} {c:>15,}  {n:>8,} calls, {c / max(n, 1):,.0f} each")
    print(f"{'  of which real allocator':<24} {real:>15,}")


if __name__ == "__main__":
    main()
