"""Seed derivation: every random draw comes from its own named stream.

A stream is keyed by a path such as (run seed, scenario, perturbation, trial, call index), so
the same path always yields the same draws and adding a plugin never shifts another's draws.
"""

from __future__ import annotations

import functools
import hashlib
import random
from typing import Any

import numpy as np


def _path(parts: tuple[object, ...]) -> bytes:
    return "\x1f".join(repr(p) if not isinstance(p, str) else p for p in parts).encode()


def _seed(digest: Any) -> int:
    return int.from_bytes(digest.digest(), "big") >> 1


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from a path of parts; stable across processes and Python versions."""
    return _seed(hashlib.blake2b(_path(parts), digest_size=8))


def derive_seed_under(prefix: tuple[object, ...], *rest: object) -> int:
    """``derive_seed(*prefix, *rest)``, the fixed ``prefix`` hashed once and copied (blake2b
    reads its input as a stream): for a path asked for once per trial, such as a trial's."""
    if not prefix or not rest:
        return derive_seed(*prefix, *rest)  # no separator between them to hash
    digest = _prefix(_path(prefix)).copy()
    digest.update(_path(rest))
    return _seed(digest)


# Keyed by the encoded prefix, not the tuple: (1,), (1.0,) and (True,) are equal keys to a
# dict but encode differently, so a tuple key could hand one the other's digest.
@functools.lru_cache(maxsize=1024)
def _prefix(encoded: bytes) -> Any:
    return hashlib.blake2b(encoded + b"\x1f", digest_size=8)


def stream(*parts: object) -> random.Random:
    """A ``random.Random`` for one stream."""
    return random.Random(derive_seed(*parts))


def np_stream(*parts: object) -> np.random.Generator:
    """A numpy Generator for one stream."""
    return np.random.default_rng(derive_seed(*parts))
