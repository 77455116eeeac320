"""One module per benchmarked system; each runs as its own process (see bench/systems/common.py)."""

__all__: list[str] = []
