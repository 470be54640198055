"""Seed derivation: every random draw comes from its own named stream.

A stream is keyed by a path such as (run seed, scenario, perturbation, trial, call index), so
the same path always yields the same draws and adding a plugin never shifts another's draws.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from a path of parts; stable across processes and Python versions."""
    text = "\x1f".join(repr(p) if not isinstance(p, str) else p for p in parts)
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def stream(*parts: object) -> random.Random:
    """A ``random.Random`` for one stream."""
    return random.Random(derive_seed(*parts))


def np_stream(*parts: object) -> np.random.Generator:
    """A numpy Generator for one stream."""
    return np.random.default_rng(derive_seed(*parts))
