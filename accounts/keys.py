"""The API key format: `lgk_<prefix>_<secret>`, stored only as a hash. Shared by services (issuing) and selectors
(authenticating), so neither imports the other."""

from __future__ import annotations

import hashlib

KEY_PREFIX = "lgk"


def hash_key(raw_key: str) -> str:
    # A fast hash is right here: the secret has 256 bits of entropy, nothing to brute-force.
    return hashlib.sha512(raw_key.encode()).hexdigest()
