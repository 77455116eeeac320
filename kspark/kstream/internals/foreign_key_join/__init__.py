"""Foreign-key table-table joins (KIP-213): ``KTable.join`` / ``left_join`` with a foreign-key extractor.

``join.py`` adds the join to the logical graph, ``processors.py`` holds its
five processors, ``wrappers.py`` what travels on its internal topics and
how its subscription store is keyed, ``murmur3.py`` the hash that tells a
stale response from a fresh one.
"""

from kspark.kstream.internals.foreign_key_join.join import do_join_on_foreign_key

__all__ = ["do_join_on_foreign_key"]
