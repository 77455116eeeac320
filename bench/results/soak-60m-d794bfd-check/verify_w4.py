import sys, time
sys.path.insert(0, "/work/main")
from bench.workloads import Checker
from bench.kafka_output import OutputWatcher
c = Checker("W4", 28844262)
w = OutputWatcher("127.0.0.1:49663", "soak-w4-out", 2, c)
t = time.time(); w.drain(); print("read", c.records, "distinct", c.distinct, "dups", c.duplicates, "unexpected", c._unexpected, c._unexpected_examples, "wrong", c._wrong, time.time() - t, flush=True)
print(c.verdict() if hasattr(c, "verdict") else "")
