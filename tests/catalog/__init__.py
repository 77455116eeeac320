"""One scenario catalog, run on Java Kafka Streams' driver, kspark's driver and the Spark runner.

The scenarios (:mod:`tests.catalog.scenarios`, data model in
:mod:`tests.catalog.model`) are each written once. What is compared:

* **kspark's driver against Java Kafka Streams 4.1.1's** (``test_java.py``),
  every scenario that Java can express, with the record cache on (the
  default; Kafka's driver commits after every record) and off: the
  ``describe()`` text, every output record (topic, key, value, timestamp)
  with the input step after which it appeared, and the dropped-records
  total. Exactly equal.
"""
