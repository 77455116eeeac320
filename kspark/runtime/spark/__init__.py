"""The Spark runner: a kspark topology executed as Spark Structured Streaming queries over Kafka.

Driver side in :mod:`.runner`, executor side in :mod:`.tasks`, Kafka I/O in
:mod:`.kafka_io`, session set-up in :mod:`.session` and :mod:`.jars`. Users
reach it through :class:`kspark.KafkaStreams`.
"""
