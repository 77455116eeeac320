"""W4's outputs of a soak whose input has stopped: read from the start, every id once and right."""
import sys, time, uuid
sys.path.insert(0, "/work/main")
from confluent_kafka import Consumer, TopicPartition
from bench.workloads import Checker
BOOT = sys.argv[1]
def log(*a): print(time.strftime("%H:%M:%S"), *a, flush=True)
c = Consumer({"bootstrap.servers": BOOT, "group.id": "v4-" + uuid.uuid4().hex, "enable.auto.commit": False,
              "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
n4 = sum(c.get_watermark_offsets(TopicPartition("soak-w4-in", p), timeout=10)[1] for p in (0, 1))
log("W4 inputs", n4)
chk = Checker("W4", n4)
c.assign([TopicPartition("soak-w4-out", p, 0) for p in (0, 1)])
deadline = time.time() + 480
while time.time() < deadline:
    for m in c.consume(num_messages=50_000, timeout=1.0):
        if not m.error():
            chk.add(m.key(), m.value())
    if chk.complete():
        # read on to the ends for duplicates
        ends = {p: c.get_watermark_offsets(TopicPartition("soak-w4-out", p), timeout=10)[1] for p in (0, 1)}
        pos = {tp.partition: tp.offset for tp in c.position([TopicPartition("soak-w4-out", p) for p in (0, 1)])}
        if all(pos[p] >= ends[p] for p in ends):
            break
log("W4", n4, "inputs,", chk.records, "outputs,", chk.distinct, "distinct,", chk.duplicates, "duplicates; verdict:", chk.verdict() or "exact")
