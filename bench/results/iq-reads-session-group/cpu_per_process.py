"""Per-process CPU while wrk runs (the HTTP reads), by label and nice."""
import os, sys, time, json, collections
HZ = os.sysconf("SC_CLK_TCK")
def label(pid):
    try:
        cmd = open(f"/proc/{pid}/cmdline","rb").read().split(b"\0")
    except OSError:
        return None
    s = b" ".join(cmd).decode(errors="replace")
    if "kafka.Kafka" in s or "kafka.server" in s or "KafkaRaftServer" in s or "kafka-server" in s: return "broker"
    if "SparkSubmit" in s or "pyspark-shell" in s: return "spark-jvm"
    if "kspark.runtime.spark.serving" in s: return "serving-child"
    if "bench.interactive_queries" in s: return "driver(app+bench)"
    if "bench.http_lookups" in s: return "http_lookups"
    if s.startswith("wrk") or "/wrk " in s: return "wrk"
    if "pyspark.daemon" in s or "worker_daemon" in s or "pyspark" in s or "python-" in s: return "spark-python-worker"
    return (cmd[0].decode(errors="replace").split("/")[-1] or "?")[:30]
def snap():
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit(): continue
        try:
            st = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        rest = st[st.rindex(")")+2:].split()
        ut, stt, nice = int(rest[11]), int(rest[12]), int(rest[16])
        out[int(d)] = (ut+stt, nice)
    return out
tot = collections.Counter(); secs = 0.0; labels = {}
prev = snap(); tprev = time.monotonic()
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    time.sleep(1.0)
    cur = snap(); now = time.monotonic()
    wrk = any(label(p) == "wrk" for p in cur)
    if wrk:
        secs += now - tprev
        for p, (t, nice) in cur.items():
            d = t - prev.get(p, (t, 0))[0]
            if d:
                if p not in labels: labels[p] = label(p)
                tot[f"{labels[p]} nice={nice}"] += d / HZ
    prev, tprev = cur, now
json.dump({"seconds": round(secs,1), "cpu_s": {k: round(v,2) for k, v in tot.most_common()}}, open(sys.argv[1],"w"), indent=1)
