#!/usr/bin/env python3
"""test-push.py: `leek push` and `leek run --push` against a stand-in Pyroscope on 127.0.0.1
(push_receiver.py), with tests/fixtures/fx-service as the profiled program.

  test-push.py LEEK LIBLEEK FX_SERVICE PUSH_SAMPLE [CASE...]

LIBLEEK and FX_SERVICE may be "-" (a sanitizer build, where no program runs under libleek): the
unit suite runs only the cases that need neither, "usage", "ended" and "damaged" (push-sample.c's
profile).

Every body the receiver accepts is read back with `go tool pprof -raw` (skipped without go), and
checked against `leek export --format pprof` and `leek report` of the same profile once it has
ended: the alloc deltas of a run sum exactly to the export's totals (both are sums of the same
rounded per-stack totals, delta.c), and within half a unit per stack to `leek report`'s totals
(which round the sum instead); the last in-use snapshot equals the export's in-use values. The
time ranges of one profile are contiguous and cover its run. Over a run of many intervals push
reads each record of the profile once (its count against `leek dump --summary`'s). A rotated
profile is followed into its next segments, the deltas starting over in each. Failing receivers (503, refused
connections) lose and duplicate nothing within the queue's bound; past it the drops are counted
and the exit status says so. HTTPS with a self-signed certificate made here by openssl (skipped
without it), the tenant header, and authentication from a file and from the environment, the
token never in push's argv.

Written in Python, not C with tests/lib/harness.h, because the receiver is Python's http.server
(python3 is already a test dependency); it prints the harness's lines ("ok  NAME", "FAIL NAME",
"skip NAME", then "N passed, N failed, N skipped") so that scripts/test counts it alike.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import push_receiver  # noqa: E402

LEEK, LIBLEEK, FX, SAMPLE = sys.argv[1:5]
GO = shutil.which("go")
TMP = tempfile.mkdtemp(prefix="leek-push-")
PERIOD = "32K"  # a few hundred samples in a few seconds of fx-service


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("LEEK_") and k not in ("LD_PRELOAD", "DEBUGINFOD_URLS")}
    e.update(LC_ALL="C", TZ="UTC")
    if LIBLEEK != "-":
        e.update(LEEK_LIBRARY=LIBLEEK)
    e.update(extra)
    return e


def profiled(cmd, output, **extra):
    """Starts cmd under libleek, writing output (a pattern)."""
    return subprocess.Popen(cmd, env=env(LD_PRELOAD=LIBLEEK, LEEK_OUTPUT=output,
                                         LEEK_PERIOD=PERIOD, LEEK_SEED="7", **extra))


def push(args, extra_env=None, timeout=90):
    return subprocess.Popen([LEEK, "push"] + args, env=env(**(extra_env or {})),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=90):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, err


def raw_totals(path, want_span=None):
    """The sum of each sample type over the samples of a pprof, by `go tool pprof -raw`;
    with want_span (from, until: Unix seconds), its Time and Duration checked against it."""
    r = subprocess.run([GO, "tool", "pprof", "-raw", path], capture_output=True, text=True,
                       env=env(HOME=TMP), timeout=120)
    check(r.returncode == 0, f"go tool pprof -raw {path}: {r.stderr}")
    lines = r.stdout.splitlines()
    if want_span:
        f, u = want_span
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(f))
        d = u - f  # Go's time.Duration as pprof prints it: %.4v
        h, m, sec = d // 3600, d // 60 % 60, d % 60
        dur = (f"{h}h{m}m{sec}s" if h else f"{m}m{sec}s" if m else f"{sec}s")[:4]
        check(any(l.startswith("Time: " + when + ".") or l == "Time: " + when + " +0000 UTC"
                  for l in lines) and f"Duration: {dur}\n" in r.stdout,
              f"not the span {f}..{u}: {[l for l in lines if l[:5] in ('Time:', 'Durat')]}")
    i = lines.index("Samples:")
    types = [t.split("/")[0].replace("[dflt]", "") for t in lines[i + 1].split()]
    sums, nsamples = dict.fromkeys(types, 0), 0
    for line in lines[i + 2:]:
        if ":" not in line or not line.strip()[0].isdigit():
            break
        vals = [int(v) for v in line.split(":")[0].split()]
        for t, v in zip(types, vals):
            sums[t] += v
        nsamples += 1
    check(set(types) == {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"},
          f"sample types {types}")
    return sums, nsamples


def body_totals(req, n):
    path = os.path.join(TMP, f"body-{id(req)}-{n}.pb.gz")
    with open(path, "wb") as f:
        f.write(req.body)
    return raw_totals(path, (int(req.query["from"]), int(req.query["until"])))[0]


def reference(profile):
    """`leek export --format pprof` and `leek report alloc --format json` of the ended file."""
    out = profile + ".ref.pb.gz"
    r = subprocess.run([LEEK, "export", "--format", "pprof", "-o", out, profile],
                       capture_output=True, text=True, env=env())
    check(r.returncode == 0, f"leek export {profile}: {r.stderr}")
    sums, nsamples = raw_totals(out)
    r = subprocess.run([LEEK, "report", "alloc", "--format", "json", profile],
                       capture_output=True, text=True, env=env())
    check(r.returncode == 0, f"leek report {profile}: {r.stderr}")
    return sums, nsamples, json.loads(r.stdout)["totals"]


def parse_name(name):
    """APP{k=v,...} as Pyroscope splits it."""
    check(name.endswith("}") and "{" in name, f"name {name!r} is not APP{{k=v,...}}")
    app, labels = name[:-1].split("{", 1)
    return app, dict(kv.split("=", 1) for kv in labels.split(","))


def by_pid(reqs):
    series = {}
    for q in reqs:
        series.setdefault(int(parse_name(q.query["name"])[1]["pid"]), []).append(q)
    return series


def check_series(reqs, profile, start_s=None, end_s=None, contiguous=True):
    """The deltas of one profile's accepted requests against its reference; their ranges."""
    check(reqs, f"no request for {profile}")
    ref, nstacks, rep = reference(profile)
    alloc = {"alloc_space": 0, "alloc_objects": 0}
    last = None
    for n, q in enumerate(reqs):
        check(q.query.get("format") == "pprof", f"format {q.query.get('format')}")
        check(q.content_type.startswith("multipart/form-data"), f"content type {q.content_type}")
        cfg = q.config or {}
        check(cfg.get("inuse_space", {}).get("aggregation") == "average" and
              cfg.get("alloc_space", {}).get("units") == "bytes", f"sample_type_config {cfg}")
        t = body_totals(q, n)
        for k in alloc:
            check(t[k] >= 0, f"a negative delta {k} {t[k]}")
            alloc[k] += t[k]
        last = t
    for k in alloc:
        check(alloc[k] == ref[k], f"{profile}: the deltas' {k} sum to {alloc[k]}, the export "
              f"says {ref[k]}")
    # pprof's values are int64: a stack that claims 2^64 bytes (push-sample's) is clamped there
    # by the export, which leek report's totals are not.
    check(rep["alloc_bytes"] >= 2**63 or
          abs(alloc["alloc_space"] - rep["alloc_bytes"]) <= nstacks / 2 + 1 and
          abs(alloc["alloc_objects"] - rep["alloc_objects"]) <= nstacks / 2 + 1,
          f"{profile}: deltas {alloc} against leek report's {rep['alloc_bytes']} B, "
          f"{rep['alloc_objects']} objects ({nstacks} stacks)")
    for k in ("inuse_space", "inuse_objects"):
        check(last[k] == ref[k], f"{profile}: the last {k} is {last[k]}, the export's {ref[k]}")
    check(abs(last["inuse_space"] - rep["live_bytes_end"]) <= nstacks / 2 + 1,
          f"{profile}: last inuse_space {last['inuse_space']}, leek report {rep['live_bytes_end']}")
    ranges = [(int(q.query["from"]), int(q.query["until"])) for q in reqs]
    for f, u in ranges:
        check(f < u, f"from {f} until {u}")
    ranges.sort()
    for (f0, u0), (f1, u1) in zip(ranges, ranges[1:]):
        check(u0 <= f1, f"ranges overlap: {ranges}")
        if contiguous:
            check(u0 == f1, f"ranges not contiguous: {ranges}")
    if start_s is not None:
        check(ranges[0][0] <= start_s + 1, f"the first from {ranges[0][0]}, start {start_s}")
    if end_s is not None:
        check(ranges[-1][1] >= end_s - 1, f"the last until {ranges[-1][1]}, end {end_s}")
    return alloc


def one_profile(pattern):
    d, base = os.path.split(pattern)
    prefix = base.split("%p")[0]
    files = [os.path.join(d, f) for f in os.listdir(d)
             if f.startswith(prefix) and f.endswith(".lk")]
    check(len(files) == 1, f"profiles {files}")
    return files[0]


def t_basic():
    r = push_receiver.Receiver()
    out = os.path.join(TMP, "basic.%p.lk")
    start = time.time()
    fx = profiled([FX, "5", "200K", "1M", "2M", os.path.join(TMP, "basic.tally")], out)
    p = push(["--pyroscope", r.url(), "--every", "1s", "--name", "svc", "--label", "env=test",
              "--label", "zone=a", "--tenant", "team-1", "--auth-env", "LEEK_TEST_TOKEN",
              str(fx.pid)], {"LEEK_TEST_TOKEN": "tok-3f9a"})
    time.sleep(2)
    with open(f"/proc/{p.pid}/cmdline", "rb") as f:
        argv = f.read()
    check(b"tok-3f9a" not in argv and b"--auth-env" in argv, f"push's argv {argv!r}")
    fx.wait()
    end = time.time()
    st, err = finish(p)
    r.stop()
    check(st == 0, f"push exited {st}: {err}")
    reqs = r.requests()
    check(len(reqs) >= 2, f"{len(reqs)} requests in a 5 s run at 1 s")
    for q in reqs:
        app, labels = parse_name(q.query["name"])
        check(app == "svc", f"app {app}")
        check(labels.get("pid") == str(fx.pid) and labels.get("env") == "test" and
              labels.get("zone") == "a" and labels.get("host") == os.uname().nodename and
              labels.get("executable") == os.path.realpath(FX), f"labels {labels}")
        check(q.query.get("spyName") == "leek", f"spyName {q.query.get('spyName')}")
        check(q.headers.get("x-scope-orgid") == "team-1", f"tenant {q.headers}")
        check(q.headers.get("authorization") == "Bearer tok-3f9a",
              f"authorization {q.headers.get('authorization')}")
    check_series(reqs, one_profile(out), int(start), int(end))
    check(f"{len(reqs)} intervals sent" in err and "0 dropped" in err, f"stderr: {err}")


def dump_records(profile):
    """The records of a finished profile by `leek dump --summary`'s count of each kind."""
    r = subprocess.run([LEEK, "dump", "--summary", profile], capture_output=True, text=True,
                       env=env())
    check(r.returncode == 0, f"leek dump {profile}: {r.stderr}")
    line = next(l for l in r.stdout.splitlines() if l.startswith("records:"))
    return sum(int(kv.split("=")[1]) for kv in line.split()[1:])


def t_incremental():
    """An agent left on reads what is new, never the file again: over a run of many intervals
    each record is read once (push's count of the records behind its intervals is the file's
    count, where reading the file at each interval would read about intervals/2 times as many),
    and the deltas still add up exactly to the export's totals."""
    r = push_receiver.Receiver()
    out = os.path.join(TMP, "incr.%p.lk")
    fx = profiled([FX, "8", "200K", "1M", "2M", os.path.join(TMP, "incr.tally")], out)
    p = push(["--pyroscope", r.url(), "--every", "1s", str(fx.pid)])
    fx.wait()
    st, err = finish(p)
    r.stop()
    check(st == 0, f"push exited {st}: {err}")
    reqs = r.requests()
    check(len(reqs) >= 5, f"{len(reqs)} requests in an 8 s run at 1 s")
    profile = one_profile(out)
    read = int(err.strip().splitlines()[-1].split("; ")[-1].split()[0])
    want = dump_records(profile)
    check(read == want, f"push read {read} records over {len(reqs)} intervals, the file has "
          f"{want}: {err}")
    check_series(reqs, profile)


def export_totals(profile, *flags):
    out = os.path.join(TMP, os.path.basename(profile) + ".x.pb.gz")
    r = subprocess.run([LEEK, "export", "--format", "pprof", *flags, "-o", out, profile],
                       capture_output=True, text=True, env=env())
    check(r.returncode == 0, f"leek export {profile}: {r.stderr}")
    return raw_totals(out)[0]


def t_rotated():
    """A rotated profile (LEEK_MAX_AGE) is followed into each next segment, its follower from the
    new segment's start, and the deltas start over there (docs/push.md, "Limits"): none is
    negative, the last in-use snapshot is the newest segment's (which holds the whole live set),
    and the alloc deltas sum to at least the newest segment's totals and at most the chain's (the
    records of a segment after its last interval are missing from the sums)."""
    r = push_receiver.Receiver()
    out = os.path.join(TMP, "rot.%p.lk")
    fx = profiled([FX, "7", "200K", "1M", "2M", os.path.join(TMP, "rot.tally")], out,
                  LEEK_MAX_AGE="2s", LEEK_KEEP="100")
    p = push(["--pyroscope", r.url(), "--every", "1s", str(fx.pid)])
    fx.wait()
    st, err = finish(p)
    r.stop()
    check(st == 0, f"push exited {st}: {err}")
    first = os.path.join(TMP, f"rot.{fx.pid}.lk")
    segs = sorted((f for f in os.listdir(TMP) if f.startswith(f"rot.{fx.pid}.lk.seg")),
                  key=lambda f: int(f.rsplit("seg", 1)[1]))
    check(len(segs) >= 2, f"segments {segs}")
    newest = os.path.join(TMP, segs[-1])
    reqs = sorted(r.requests(), key=lambda q: int(q.query["from"]))
    check(len(reqs) >= 5, f"{len(reqs)} requests in a 7 s run at 1 s")
    alloc = {"alloc_space": 0, "alloc_objects": 0}
    for n, q in enumerate(reqs):
        t = body_totals(q, n)
        for k in alloc:
            check(t[k] >= 0, f"a negative delta {k} {t[k]}")
            alloc[k] += t[k]
    last = t
    seg = export_totals(newest, "--segment-only")
    chain = export_totals(first)
    for k in ("inuse_space", "inuse_objects"):
        check(last[k] == seg[k], f"the last {k} is {last[k]}, the newest segment's {seg[k]}")
    for k in alloc:
        check(seg[k] <= alloc[k] <= chain[k], f"the deltas' {k} sum to {alloc[k]}: the newest "
              f"segment has {seg[k]}, the chain {chain[k]}")


def t_outage():
    """503 for a while, then connections refused for a while: nothing lost, nothing twice."""
    r = push_receiver.Receiver()
    r.set_mode("503")
    out = os.path.join(TMP, "outage.%p.lk")
    fx = profiled([FX, "9", "200K", "1M", "2M", os.path.join(TMP, "outage.tally")], out)
    p = push(["--pyroscope", r.url(), "--every", "1s", "--backoff", "100ms",
              "--backoff-max", "400ms", str(fx.pid)])
    until = time.time() + 30  # a slow start of push's must not end the outage before it
    while len(r.refused) < 3 and time.time() < until:
        time.sleep(0.1)
    r.set_mode("ok")
    time.sleep(1)
    r.stop()  # refused
    time.sleep(2)
    r.start()
    fx.wait()
    st, err = finish(p)
    r.stop()
    check(st == 0, f"push exited {st}: {err}")
    check(any(s == 503 for s, _ in r.refused), "the receiver never failed")
    check(" 0 dropped" in err and "retries" in err and not err.count(" 0 retries"),
          f"stderr: {err}")
    reqs = r.requests()
    ranges = [(q.query["from"], q.query["until"]) for q in reqs]
    check(len(set(ranges)) == len(ranges), f"an interval sent twice: {ranges}")
    check_series(reqs, one_profile(out))


def t_bound():
    """Past --queue, the oldest intervals go, counted; the status says so."""
    r = push_receiver.Receiver()
    r.set_mode("503")
    out = os.path.join(TMP, "bound.%p.lk")
    fx = profiled([FX, "8", "200K", "1M", "2M", os.path.join(TMP, "bound.tally")], out)
    p = push(["--pyroscope", r.url(), "--every", "1s", "--queue", "2", "--backoff", "100ms",
              "--backoff-max", "200ms", str(fx.pid)])
    fx.wait()
    r.set_mode("ok")
    st, err = finish(p)
    r.stop()
    check(st == 3, f"push exited {st} (3: intervals dropped): {err}")
    last = err.strip().splitlines()[-1]
    sent = int(last.split("push: ")[1].split()[0])
    dropped = int(last.split("), ")[1].split()[0])
    reqs = r.requests()
    check(dropped >= 2 and sent == len(reqs) and 1 <= sent <= 3,
          f"sent {sent} ({len(reqs)} received), dropped {dropped}: {last}")
    check("dropped" in err.splitlines()[0], f"no status line before the end: {err}")
    # What arrived is the newest intervals, whole: contiguous among themselves, and the last
    # in-use snapshot is the profile's end.
    ref = reference(one_profile(out))[0]
    newest = max(reqs, key=lambda q: int(q.query["until"]))
    t = body_totals(newest, 0)
    check(t["inuse_space"] == ref["inuse_space"], f"the last inuse_space {t}, the export's {ref}")
    ranges = sorted((int(q.query["from"]), int(q.query["until"])) for q in reqs)
    for (f0, u0), (f1, u1) in zip(ranges, ranges[1:]):
        check(u0 == f1, f"the newest intervals not contiguous: {ranges}")


def t_https():
    if not shutil.which("openssl"):
        raise Skip("no openssl to make a certificate (Debian: openssl)")
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], capture_output=True, text=True)
    check(r.returncode == 0, f"openssl: {r.stderr}")
    out = os.path.join(TMP, "tls.%p.lk")
    fx = profiled([FX, "1", "200K", "1M", "2M", os.path.join(TMP, "tls.tally")], out)
    fx.wait()
    profile = one_profile(out)
    auth = os.path.join(TMP, "auth")
    with open(auth, "w") as f:
        f.write("user7:pa:ss\n")
    rv = push_receiver.Receiver(cert, key)
    # The certificate is not trusted without --cacert: nothing goes, and the status says so.
    st, err = finish(push(["--pyroscope", rv.url(), "--flush-timeout", "1s", "--backoff",
                           "100ms", profile]))
    check(st == 3 and not rv.requests(), f"untrusted certificate: exit {st}, "
          f"{len(rv.requests())} accepted: {err}")
    st, err = finish(push(["--pyroscope", rv.url(), "--cacert", cert, "--auth-file", auth,
                           profile]))
    rv.stop()
    check(st == 0, f"push exited {st}: {err}")
    reqs = rv.requests()
    check(len(reqs) == 1, f"{len(reqs)} requests for an ended profile")
    want = "Basic " + base64.b64encode(b"user7:pa:ss").decode()
    check(reqs[0].headers.get("authorization") == want,
          f"authorization {reqs[0].headers.get('authorization')}")
    check_series(reqs, profile)


def t_session():
    """--session: every profile of a session, a child that starts later included."""
    r = push_receiver.Receiver()
    out = os.path.join(TMP, "sess.%p.lk")
    t1, t2 = os.path.join(TMP, "sess1.tally"), os.path.join(TMP, "sess2.tally")
    sh = profiled(["sh", "-c", f"{FX} 4 200K 1M 2M {t1} & sleep 2; {FX} 2 100K 0 2M {t2}; wait"],
                  out, LEEK_SESSION="424242")
    p = push(["--pyroscope", r.url(), "--every", "1s", "--session", "424242", "--output", out])
    sh.wait()
    os.kill(p.pid, signal.SIGTERM)
    st, err = finish(p)
    r.stop()
    check(st == 0, f"push exited {st}: {err}")
    series = by_pid(r.requests())
    fx_profiles = []
    for f in os.listdir(TMP):
        if f.startswith("sess.") and f.endswith(".lk"):
            pid = int(f.split(".")[1])
            with open(f"{TMP}/{f}", "rb") as fh:
                exe_len = int.from_bytes(fh.read(88)[80:84], "little")
                exe = fh.read(exe_len).decode()
            if exe.endswith("fx-service"):
                fx_profiles.append((pid, os.path.join(TMP, f)))
    check(len(fx_profiles) == 2, f"fx-service profiles {fx_profiles}")
    for pid, prof in fx_profiles:
        check(pid in series, f"no request for pid {pid} ({sorted(series)})")
        check_series(series[pid], prof)


def t_run_push():
    """`leek run --push`: the agent beside the program, flushed at its exit."""
    r = push_receiver.Receiver()
    out = os.path.join(TMP, "run.%p.lk")
    t1 = os.path.join(TMP, "run1.tally")
    cmd = [LEEK, "run", "--no-compress", "-p", PERIOD, "-o", out, "--push", r.url(),
           "--push-every", "1s", "--push-label", "job=ci", "--push-tenant", "t9", "--",
           "sh", "-c", f"sleep 1; {FX} 3 200K 1M 2M {t1}; exit 5"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=120)
    r.stop()
    check(res.returncode == 5, f"leek run exited {res.returncode}: {res.stderr}")
    check("intervals sent" in res.stderr, f"no counts from push: {res.stderr}")
    series = by_pid(r.requests())
    fx_pid = None
    for f in os.listdir(TMP):
        if f.startswith("run.") and f.endswith(".lk") and "fx-service" in subprocess.run(
                [LEEK, "dump", "--summary", os.path.join(TMP, f)], capture_output=True,
                text=True, env=env()).stdout:
            fx_pid = int(f.split(".")[1])
    check(fx_pid in series, f"no request for fx-service ({fx_pid}; {sorted(series)})")
    for q in series[fx_pid]:
        labels = parse_name(q.query["name"])[1]
        check(labels.get("job") == "ci" and q.headers.get("x-scope-orgid") == "t9",
              f"labels {labels}, headers {q.headers}")
    check_series(series[fx_pid], os.path.join(TMP, f"run.{fx_pid}.lk"))


def t_usage():
    for args, want in ((["x.lk"], "--pyroscope URL is needed"),
                       (["--pyroscope", "ftp://h", "x.lk"], "not an http:// or https://"),
                       (["--pyroscope", "http://h", "--label", "a b=c", "x.lk"], "--label"),
                       (["--pyroscope", "http://h", "--label", "a=b}", "x.lk"], "--label"),
                       (["--pyroscope", "http://h", "--every", "100ms", "x.lk"],
                        "--every '100ms': too short (at least 1s)"),
                       (["--pyroscope", "http://h", "--auth-env", "LEEK_NO_SUCH_VAR", "x.lk"],
                        "not set"),
                       (["--pyroscope", "http://h", "--session", "1", "x.lk"], "not both")):
        st, err = finish(push(args))
        check(st == 1 and want in err and err.count("\n") == 1, f"{args}: exit {st}: {err}")
    st, err = finish(push(["--pyroscope", "http://h", os.path.join(TMP, "none.lk")]))
    check(st == 2 and "none.lk" in err, f"a missing file: exit {st}: {err}")


def t_ended():
    """A profile whose process has ended: one interval, of the whole file; then the same to a
    port that refuses: retried until --flush-timeout, counted as left unsent, exit 3."""
    profile = os.path.join(TMP, "sample.lk")
    r = subprocess.run([SAMPLE, profile], capture_output=True, text=True)
    check(r.returncode == 0, f"push-sample: {r.returncode}")
    rv = push_receiver.Receiver()
    st, err = finish(push(["--pyroscope", rv.url() + "/", "--label", "k=v", profile]))
    rv.stop()
    check(st == 0 and "1 intervals sent" in err, f"exit {st}: {err}")
    st, err = finish(push(["--pyroscope", rv.url(), "--flush-timeout", "300ms", "--backoff",
                           "10ms", "--backoff-max", "20ms", profile]))
    check(st == 3 and "0 intervals sent" in err and "1 dropped (1 left unsent" in err,
          f"a refused connection: exit {st}: {err}")
    reqs = rv.requests()
    check(len(reqs) == 1 and parse_name(reqs[0].query["name"])[1].get("k") == "v",
          f"{len(reqs)} requests")
    if not GO:
        raise Skip("no go in PATH to read the body with `go tool pprof` (Debian: golang-go)")
    check_series(reqs, profile)


def t_damaged():
    """A damaged record (a reserved tag where push-sample's profile has a FREE): push says where,
    as `leek report` says it, sends nothing of the profile and exits 3 (an interval could not be
    made)."""
    profile = os.path.join(TMP, "damaged.lk")
    r = subprocess.run([SAMPLE, profile], capture_output=True, text=True)
    check(r.returncode == 0, f"push-sample: {r.returncode}")
    r = subprocess.run([LEEK, "dump", profile], capture_output=True, text=True, env=env())
    off = next(int(l.split()[0][1:]) for l in r.stdout.splitlines() if " FREE " in l)
    with open(profile, "r+b") as f:
        f.seek(off)
        f.write(b"\x50")  # a reserved tag (format.h: 18..0x7f)
    rep = subprocess.run([LEEK, "report", profile], capture_output=True, text=True, env=env())
    check(rep.returncode == 2 and f"offset {off}" in rep.stderr, f"leek report: {rep.stderr}")
    rv = push_receiver.Receiver()
    st, err = finish(push(["--pyroscope", rv.url(), "--flush-timeout", "0", profile]))
    rv.stop()
    check(st == 3 and f"offset {off}" in err and "0 intervals sent" in err and
          not rv.requests(), f"exit {st}, {len(rv.requests())} requests: {err}")


TESTS = [("usage", t_usage), ("ended", t_ended), ("damaged", t_damaged), ("basic", t_basic),
         ("incremental", t_incremental), ("rotated", t_rotated), ("outage", t_outage),
         ("bound", t_bound), ("https", t_https), ("session", t_session),
         ("run-push", t_run_push)]


def main():
    passed = failed = skipped = 0
    only = sys.argv[5:] or None
    for name, fn in TESTS:
        if only and name not in only:
            continue
        try:
            if not GO and name not in ("usage", "ended", "damaged"):
                raise Skip("no go in PATH to read the bodies with `go tool pprof` "
                           "(Debian: golang-go)")
            fn()
            print(f"ok   {name}", flush=True)
            passed += 1
        except Skip as e:
            print(f"skipped: {name}: {e}")
            print(f"skip {name}", flush=True)
            skipped += 1
        except Exception as e:  # a Fail, or anything that went wrong on the way
            print(f"{name}: {e}", file=sys.stderr)
            if not isinstance(e, Fail):
                traceback.print_exc()
            print(f"FAIL {name}", flush=True)
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(1 if failed else 0)


main()
