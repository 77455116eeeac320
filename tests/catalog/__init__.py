"""One scenario catalog, run on Java Kafka Streams' driver, kspark's driver and the Spark runner.

The scenarios (:mod:`tests.catalog.scenarios`, data model in
:mod:`tests.catalog.model`) are each written once. What is compared:

* **kspark's driver against Java Kafka Streams 4.1.1's** (``test_java.py``),
  every scenario that Java can express, with the record cache on (the
  default; Kafka's driver commits after every record) and off: the
  ``describe()`` text, every output record (topic, key, value, timestamp)
  with the input step after which it appeared, and the dropped-records
  total. Exactly equal.

* **The Spark runner against the micro-batch reference** (``test_spark.py``,
  harness ``spark.py``): every scenario over real Kafka in every
  configuration that changes its physical plan (record cache on, 10 MB, or
  off; native lowering on or off; direct read on or off), with each of its
  partition counts (``partitions``). A configuration whose plan
  (``physical_plan(...).summary()``) equals an earlier one's with the same
  cache setting is skipped naming that one; the stage each sub-topology gets
  is checked against the reviewed ``plans.txt`` (``test_plans.py``), so a
  lost optimisation fails a test. Per output topic and key (keys and values
  rendered as above), the rules are:

  - **Cache off**: the sequence of (value, timestamp) equals the
    reference's.
  - **Cache on**: exact too. Kafka Streams flushes the record cache at each
    commit, and on Spark a micro-batch is a commit, so the reference is the
    engine committing where the micro-batches end: the **micro-batch
    reference** (``microbatch.py``). For input preloaded into Kafka and
    ``process_available()``: one ``StreamTask`` per (sub-topology,
    partition); each sub-topology, upstream first, runs one micro-batch
    over everything its partitions hold (a task takes records across its
    partitions by smallest head timestamp, as a Kafka Streams task does;
    stream-time punctuation after each record), then commits; what that
    wrote to topics the topology reads (repartition topics; murmur2
    partitioning, as the runner's producer) is the next batch's input, and
    rounds repeat until nothing moves; global tables are read to their end
    before a task processes a batch. A key whose every update the cache
    absorbed appears on neither side. With the cache off this reference is
    the per-record driver, one per task, whenever the input's pipe order
    agrees with its timestamps across topics (``test_microbatch.py`` checks
    that claim on every scenario it applies to).
  - **Several partitions**: one task per partition, input written to the
    partition of its key (a null key's to partition 0). Where Kafka Streams
    defines no order either (records that several tasks of a batch write to
    one partition: a repartition topic, or an output key, fed by several
    upstream tasks; records with a null key, which the producer places at
    random), the scenario says what is defined (``spark_compare``):
    ``exact``, ``multiset`` (each key's pairs in any order) or ``final``
    (each key's last pair, a tombstone counting as absent). With several
    partitions null-keyed output records compare as a multiset (and are left
    out of ``final``). ``test_microbatch.py`` checks that the reference
    gives the declared part under every interleaving it tries.
  - **Timestamp 0**: librdkafka writes it as "now", so a scenario with an
    input (or a reference output) at 0 runs with every input timestamp
    moved by ``spark.SHIFT`` (1000 weeks, a multiple of every window size
    and advance), and so does its reference.
  - **Wall-clock steps** (``W``) are not replayed on Spark; a scenario whose
    result depends on them has a ``spark_skip`` (``test_microbatch.py``
    checks the others give the same result without them).
  - Whatever does not run (``spark_skip``, a configuration with the same
    plan) is a ``pytest.skip`` with its reason, per scenario and
    configuration: ``pytest -ra`` lists them. A difference found and not
    fixed yet is an xfail naming its cause (``known.py``): strict, unless
    it shows only when Spark schedules tasks in some orders.

  Many scenarios run in one Spark application (``spark.applications``:
  :func:`~tests.catalog.model.combined`, each scenario with topics of its
  own), once per configuration, so the matrix fits CI's budget.
  ``test_spark_runs.py`` keeps what the old conformance suite checked
  besides: a restart mid-stream continues exactly (native counts with the
  cache on among them), results do not depend on the micro-batch cuts
  (``spark.kspark.maxOffsetsPerTrigger``, cache off), and the runner
  conformance scenarios pass on ``local-cluster[2,1,1024]``
  (``local_cluster.py``, a process of its own).
"""
