"""Runner conformance: the same scenarios on the TopologyTestDriver and on the Spark runner."""
