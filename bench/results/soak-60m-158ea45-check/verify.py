"""A second reader of a running soak's outputs (the harness's own reader lost the broker at its
first restart): reads soak-w2-out / soak-w4-out from the start, rebuilding its consumer whenever
the broker fails it, and checks them against the inputs the input topics hold."""
import sys, time, json, uuid
sys.path.insert(0, "/work/main")
from confluent_kafka import Consumer, TopicPartition, KafkaException
from bench.workloads import Checker

BOOT = sys.argv[1]
def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)

class Reader:
    def __init__(self, topic):
        self.topic, self.pos, self.c = topic, {0: 0, 1: 0}, None
        self.rebuilds = 0
    def consumer(self):
        if self.c is None:
            self.c = Consumer({"bootstrap.servers": BOOT, "group.id": "verify-" + uuid.uuid4().hex,
                               "enable.auto.commit": False, "isolation.level": "read_committed",
                               "auto.offset.reset": "earliest"})
            self.c.assign([TopicPartition(self.topic, p, self.pos[p]) for p in self.pos])
        return self.c
    def rebuild(self, e):
        log(self.topic, "rebuilding consumer after", repr(e)[:200])
        self.rebuilds += 1
        try:
            self.c.close()
        except Exception:
            pass
        self.c = None
    def ends(self):
        c = self.consumer()
        return {p: c.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1] for p in self.pos}
    def read(self, fold, target=None):
        try:
            target = self.ends() if target is None else target
            c = self.consumer()
            while any(self.pos[p] < target[p] for p in target):
                msgs = c.consume(num_messages=50_000, timeout=1.0)
                for m in msgs:
                    if m.error():
                        continue
                    fold(m.key(), m.value())
                    self.pos[m.partition()] = m.offset() + 1
                for tp in c.position([TopicPartition(self.topic, p) for p in self.pos]):
                    if tp.offset >= 0:
                        self.pos[tp.partition] = max(self.pos[tp.partition], tp.offset)
            return True
        except KafkaException as e:
            self.rebuild(e)
            return False

inputs = Reader("soak-w2-in"), Reader("soak-w4-in")
def produced(r):
    try:
        return sum(r.ends().values())
    except KafkaException as e:
        r.rebuild(e)
        return None

w2_last = {}
w2_records = 0
def fold_w2(k, v):
    global w2_records
    w2_records += 1
    w2_last[k.decode()] = int.from_bytes(v, "big", signed=True)
w4 = Checker("W4", 0)
w2r, w4r = Reader("soak-w2-out"), Reader("soak-w4-out")
stable_since, last_inputs = None, None
while True:
    # The outputs' ends first, then the inputs: every output up to those ends answers an input
    # counted (the other way round, an output of an input produced in between is "unexpected").
    try:
        t2, t4 = w2r.ends(), w4r.ends()
    except KafkaException as e:
        w2r.rebuild(e); w4r.rebuild(e); time.sleep(5); continue
    n2, n4 = produced(inputs[0]), produced(inputs[1])
    if n2 is None or n4 is None:
        time.sleep(5); continue
    if n4 > w4.n:
        w4.resize(n4)
    ok2, ok4 = w2r.read(fold_w2, t2), w4r.read(w4.add, t4)
    chk = Checker("W2", n2)
    chk.last = w2_last
    w2_done, w4_done = chk.complete(), w4.complete()
    log(f"inputs W2 {n2:,} W4 {n4:,} | W2 outputs {w2_records:,} complete {w2_done} | W4 outputs {w4.records:,} distinct {w4.distinct:,} dup {w4.duplicates} complete {w4_done} | rebuilds {w2r.rebuilds}/{w4r.rebuilds}")
    if (n2, n4) == last_inputs:
        stable_since = stable_since or time.time()
    else:
        stable_since, last_inputs = None, (n2, n4)
    if stable_since and time.time() - stable_since > 90 and ok2 and ok4 and w2_done and w4_done:
        log("FINAL W2", n2, "inputs", w2_records, "outputs verdict", chk.verdict() or "exact")
        log("FINAL W4", n4, "inputs", w4.records, "outputs", w4.distinct, "distinct", w4.duplicates, "duplicates verdict", w4.verdict() or "exact")
        break
    time.sleep(20)
