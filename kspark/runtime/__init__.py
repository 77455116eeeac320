"""Runners that execute a kspark topology on an engine.

The model (``kspark.kstream``, ``kspark.processor``, ...) never imports from
here; a runner depends on the model. ``kspark.runtime.spark`` compiles a
topology to Spark Structured Streaming.
"""

__all__: list[str] = []
