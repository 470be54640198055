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


def derive_trial_seed(run_seed: int, scenario: str, index: int) -> int:
    """``derive_seed(run_seed, scenario, "trial", index)``, asked for once per trial: the
    prefix's digest is looked up by the run seed and scenario themselves, without encoding
    the path again (0.7 us a seed here against :func:`derive_seed_under`'s 2.1 us)."""
    if type(run_seed) is not int or type(scenario) is not str or type(index) is not int:
        return derive_seed_under((run_seed, scenario, "trial"), index)
    digest = _trial_prefix(run_seed, scenario).copy()
    digest.update(repr(index).encode())
    return _seed(digest)


# Only an int and a str reach it (derive_trial_seed checks their types): equal keys of those
# types encode alike, so no key can be handed another's digest.
@functools.lru_cache(maxsize=1024)
def _trial_prefix(run_seed: int, scenario: str) -> Any:
    return _prefix(_path((run_seed, scenario, "trial")))


def stream(*parts: object) -> random.Random:
    """A ``random.Random`` for one stream."""
    return random.Random(derive_seed(*parts))


def np_stream(*parts: object) -> np.random.Generator:
    """A numpy Generator for one stream."""
    return np.random.default_rng(derive_seed(*parts))
