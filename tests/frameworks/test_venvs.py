"""Where the framework venvs live: one directory per lock's contents (tests/frameworks/venvs.py).
Runs in `make test` (no framework needed); building them is `make frameworks`."""

from __future__ import annotations

from pathlib import Path

from tests.frameworks.venvs import ENVS, Env, build, default_root


def test_a_changed_pin_is_another_venv_and_the_same_pins_the_same(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.txt"
    lock.write_text("openai==2.1.0\n")
    before = Env("x", (lock,)).path(tmp_path)
    assert Env("x", (tmp_path / "requirements.txt",)).path(tmp_path) == before
    lock.write_text("openai==2.1.1\n")
    after = Env("x", (lock,)).path(tmp_path)
    assert after != before
    assert after.parent == tmp_path and after.name.startswith("x-")


def test_every_framework_has_its_lock_and_a_cache_outside_the_clone() -> None:
    clone = Path(__file__).resolve().parents[2]
    assert set(ENVS) == {"openai-agents", "pydantic-ai", "langgraph", "smolagents", "anthropic",
                         "node"}  # fmt: skip
    for env in ENVS.values():
        assert all(lock.is_file() for lock in env.locks), env.name
    assert clone not in default_root().parents


def test_a_venv_marked_complete_is_reused_not_rebuilt(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.txt"
    lock.write_text("# nothing\n")
    env = Env("x", (lock,))
    env.path(tmp_path).mkdir()
    (env.path(tmp_path) / ".installed").write_text("1\n")
    assert env.ready(tmp_path)
    assert build(env, tmp_path) == 0.0  # nothing built: no venv made, no pip run
    assert sorted(p.name for p in env.path(tmp_path).iterdir()) == [".installed"]
