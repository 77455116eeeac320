"""The JVM parts kspark needs, wherever they are needed: jar bundles from Maven Central, Java itself.

Used by the Spark runner (Spark's Kafka connector), by the developer tools
(the local Kafka broker) and by the Java reference harnesses; it depends on
neither, so the runner does not depend on the developer tools.
"""

from kspark.jvm.errors import ArtifactResolutionError, JavaNotFoundError, JvmSetupError

__all__ = ["JvmSetupError", "JavaNotFoundError", "ArtifactResolutionError"]
