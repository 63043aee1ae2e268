# alloc.py: the allocation-heavy Python workload of bench/real.sh.
#
#   python3.11 bench/workloads/alloc.py [SCALE]       (SCALE 1: about 1.5 s on its own)
#
# What a web or data script does to the heap: records built as dicts of strings and lists,
# serialized to JSON and parsed back, sorted and grouped, strings split and joined, a cache
# that grows and is trimmed. The random stream is seeded, so every run allocates the same.
# Under PYTHONMALLOC=malloc every object goes through malloc; otherwise small objects come from
# pymalloc's arenas (256 KiB mmaps) and only large ones reach malloc.
import json
import random
import sys

scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
rng = random.Random(4)
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def record(i):
    return {
        "id": i,
        "name": "-".join(rng.choice(words) for _ in range(3)),
        "tags": [rng.choice(words) for _ in range(rng.randrange(1, 6))],
        "score": rng.random() * 100,
        "attrs": {w: rng.randrange(1000) for w in rng.sample(words, 4)},
    }


checksum = 0
cache = {}
for batch in range(int(12 * scale)):
    rows = [record(batch * 10000 + i) for i in range(10000)]
    text = json.dumps(rows)
    back = json.loads(text)
    back.sort(key=lambda r: (r["tags"][0], -r["score"]))
    groups = {}
    for r in back:
        groups.setdefault(r["name"].split("-")[0], []).append(r)
    summary = {k: sum(r["score"] for r in v) / len(v) for k, v in groups.items()}
    lines = ["%s,%s,%.3f" % (r["id"], " ".join(r["tags"]), r["score"]) for r in back]
    blob = "\n".join(lines)
    for line in blob.splitlines()[::7]:
        cache[line.split(",")[0]] = line.upper()
    if len(cache) > 20000:
        for k in list(cache)[:10000]:
            del cache[k]
    checksum += len(text) + len(blob) + int(sum(summary.values()))
print(checksum, len(cache))
