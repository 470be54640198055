"""model.seeding: a seed under a hashed-once prefix is the seed of the whole path."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chaoseval.model.seeding import derive_seed, derive_seed_under, derive_trial_seed

part = st.one_of(st.integers(), st.text(max_size=12), st.floats(allow_nan=False))


@given(prefix=st.lists(part, max_size=4), rest=st.lists(part, max_size=3))
def test_a_seed_under_a_prefix_is_the_seed_of_the_whole_path(
    prefix: list[object], rest: list[object]
) -> None:
    assert derive_seed_under(tuple(prefix), *rest) == derive_seed(*prefix, *rest)


def test_equal_but_differently_written_prefixes_do_not_share_a_cached_digest() -> None:
    # 1 == 1.0 == True as dict keys, but each is its own path (hypothesis found them mixed).
    for prefix in [(1,), (1.0,), (True,), (0.0,), (-0.0,), (0,)]:
        assert derive_seed_under(prefix, "x") == derive_seed(*prefix, "x")


@given(run_seed=st.integers(), scenario=st.text(max_size=12), index=st.integers(0, 10**12))
def test_a_trial_seed_is_the_seed_of_its_path(run_seed: int, scenario: str, index: int) -> None:
    assert derive_trial_seed(run_seed, scenario, index) == derive_seed(
        run_seed, scenario, "trial", index
    )


def test_a_trial_seed_of_an_equal_run_seed_of_another_type_is_its_own() -> None:
    # True == 1 == 1.0 as cache keys, but each writes its own path: only ints share the cache.
    for run_seed in [1, True, 1.0, 1, False, 0.0, -0.0, 0]:
        got = derive_trial_seed(run_seed, "s", 3)  # type: ignore[arg-type]
        assert got == derive_seed(run_seed, "s", "trial", 3)
