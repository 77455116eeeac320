"""Secrets in settings: which names hold one, and settings with their values hidden.

A setting whose name says it holds a secret (a password, a JAAS config, a private key, a token,
the schema registry's user info; any prefix, Java's or librdkafka's name) never reaches a log, an
error message or an answer of the query server; nor does the password of a URL's
``user:password@``. ``StreamsConfig``'s ``repr``, the Kafka clients' errors, the schema-registry
client and the query server's answers hide them through this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["HIDDEN", "is_secret", "redacted"]

_SECRET = re.compile(
    r"password|secret|jaas|\.pem$|keystore\.key$|oauthbearer\.config$|token$|user\.info$", re.IGNORECASE
)
# A URL's user info (http://user:password@host), e.g. in schema.registry.url.
_URL_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@/\s]+@")

HIDDEN = "[hidden]"


def is_secret(name: str) -> bool:
    """Whether the setting ``name`` (any prefix, Java's or librdkafka's name) holds a secret."""
    return bool(_SECRET.search(name))


def redacted(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with every secret's value replaced by ``[hidden]``, and the password of any
    URL's ``user:password@``."""
    return {
        k: HIDDEN
        if is_secret(k) and v not in (None, "")
        else _URL_PASSWORD.sub(rf"\g<1>{HIDDEN}@", v)
        if isinstance(v, str)
        else v
        for k, v in settings.items()
    }
