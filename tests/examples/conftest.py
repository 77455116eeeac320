"""Makes the example applications in ``examples/`` importable by their module names.

``kspark run examples/NAME.py`` imports an application as ``NAME`` with its
directory on ``sys.path``; the tests import them the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

_EXAMPLES_DIR = str(Path(__file__).resolve().parents[2] / "examples")

if _EXAMPLES_DIR not in sys.path:
    sys.path.insert(0, _EXAMPLES_DIR)
