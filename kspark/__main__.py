"""``python -m kspark``: the same command line as the ``kspark`` script."""

import sys

from kspark.cli import main

__all__: list[str] = []

sys.exit(main())
