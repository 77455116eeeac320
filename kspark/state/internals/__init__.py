"""Store implementations: in-memory bytes stores, change-logging and typed layers, builders."""

__all__: list[str] = []
