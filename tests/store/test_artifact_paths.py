"""Names are data, never paths: no cell name, trial id, artifact name or journal line makes
chaoseval write, delete or read a file outside ``<journal>.d`` (issue 19, items 1 and 3)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.analysis.browser import BrowserFailure, BrowserView
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput
from chaoseval.render.browser import browser_failures_html
from chaoseval.seams.agent import Episode
from chaoseval.store import artifacts
from chaoseval.store.artifacts import ArtifactStore, trial_dir_name


class Writer:
    """An agent that leaves an artifact, as an exec agent's stdout or a screenshot would."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        kept = artifacts.current()
        if kept is not None:
            kept.write("stdout.txt", "hello\n")
            kept.write_bytes("../../../../escaped.png", b"\x89PNG")
        return AgentOutput(answer="done")


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _plant(tmp_path: Path) -> None:
    """The working directory tmp/a/b/c/d and a victim's files one to four levels above it."""
    work = tmp_path / "a" / "b" / "c" / "d"
    work.mkdir(parents=True)
    for victim in (tmp_path / "a/b/c/victim/0", tmp_path / "victim2)/0"):
        victim.mkdir(parents=True)
        (victim / "precious.txt").write_text("keep me")
    (work / "spec.json").write_text(json.dumps({"name": "../../../victim", "perturbations": [
        {"name": "latency", "params": {"mean": 0.01}}]}))  # fmt: skip


def _attack(tmp_path: Path, cells: list[str], resume: bool = False) -> Path:
    work = tmp_path / "a" / "b" / "c" / "d"
    spec, journal = work / "spec.json", work / "j.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=Writer(),
            agent_name="writer",
            trials=1,
            seed=1,
            journal=journal,
            cells=parse_cells([str(spec) if c == "SPEC" else c for c in cells]),
            resume=resume,
        )
    )
    return journal


@pytest.mark.parametrize(
    "cell", ["SPEC", "latency:mean=0.01,tools=/../../../../victim2"], ids=["spec", "param"]
)
def test_a_cell_name_cannot_move_a_trial_out_of_the_store(tmp_path: Path, cell: str) -> None:
    _plant(tmp_path)
    before = _files(tmp_path)
    journal = _attack(tmp_path, [cell])
    _attack(tmp_path, [cell], resume=True)  # --resume's removals stay inside the store too
    store = artifacts.store_root(journal)
    after = _files(tmp_path)
    outside = {f for f in after - before if not f.startswith("a/b/c/d/j.jsonl")}
    assert outside == set()  # nothing written outside the journal and its store
    assert before <= after  # and nothing removed: the victims' files are all there
    assert (tmp_path / "a/b/c/victim/0/precious.txt").read_text() == "keep me"
    stored = [p for p in store.rglob("*") if p.is_file()]
    assert len(stored) == 4  # clean and the hostile cell: stdout.txt and the png each
    assert all(p.resolve().is_relative_to(store.resolve()) for p in stored)


HOSTILE = ["..", ".", "", "../../x", "/etc", "a/../../b", "x/0", "%2E%2E", "%", "%-", "é\x00"]


@given(
    scenario=st.sampled_from(["s", "..", "", "a.b"]),
    cell=st.one_of(st.sampled_from(HOSTILE), st.text(max_size=300)),
    index=st.one_of(st.integers(0, 10**6).map(str), st.sampled_from(HOSTILE)),
)
@settings(max_examples=300, deadline=None)
def test_every_trial_id_names_three_components_inside_the_store(scenario, cell, index) -> None:
    trial_id = f"{scenario}/{cell}/{index}"
    name = trial_dir_name(trial_id)
    parts = name.split("/")
    assert len(parts) == 3
    assert all(p and p not in (".", "..") and len(p.encode()) <= 255 for p in parts)
    root = Path("/store/j.jsonl.d")
    assert (root / name).resolve().is_relative_to(root)


CELLS = st.one_of(st.sampled_from([*HOSTILE, "c", "c/0/x", "c/0"]), st.text(max_size=40))


@given(st.lists(CELLS, min_size=2, max_size=2, unique=True))
def test_distinct_trial_ids_never_share_or_nest_a_directory(pair: list[str]) -> None:
    """Removing one trial's directory never removes another's: no two ids share one, and no
    directory is inside another (``s/c/0`` and the cell ``c/0/x``'s ``s/c/0/x/1`` were)."""
    ids = {f"s/{cell}/{i}" for cell in pair for i in (0, 1)} | set(pair)
    names = {trial_dir_name(i) for i in ids}
    assert len(names) == len(ids)
    assert not [(a, b) for a in names for b in names if b.startswith(a + "/")]


def test_ordinary_ids_keep_the_names_earlier_versions_gave_them() -> None:
    # --resume on a journal an earlier version wrote keeps its trials' directories.
    assert trial_dir_name("a/clean/0") == "a/clean/0"
    assert trial_dir_name("a/timeout:p=0.5+latency/1") == "a/timeout%3Ap%3D0.5+latency/1" or (
        trial_dir_name("a/timeout:p=0.5+latency/1") == "a/timeout%3Ap=0.5+latency/1"
    )
    assert trial_dir_name("a/x y%/2") == "a/x%20y%25/2"


def test_a_symlink_in_the_store_is_never_followed_out_of_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "0").mkdir(parents=True)
    (victim / "0" / "precious.txt").write_text("keep me")
    store = ArtifactStore(tmp_path / "j.jsonl.d")
    (store.root / "s").mkdir(parents=True)
    (store.root / "s" / "c").symlink_to(victim)  # planted: s/c/0 would be victim/0
    with pytest.raises(artifacts.OutsideStore, match="s/c/0"):
        store.discard("s/c/0")
    store.keep_only([])  # --resume keeping nothing: walks the store, follows no link out
    with pytest.raises(artifacts.OutsideStore):
        store.trial("s/c/0").write("stdout.txt", "x")
    with pytest.raises(artifacts.OutsideStore):
        store.place("j.jsonl.d/s/c/0/stdout.txt", b"x")  # a Ray worker's shipped file
    with pytest.raises(artifacts.OutsideStore):
        store.place("../outside.txt", b"x")
    assert (victim / "0" / "precious.txt").read_text() == "keep me"
    assert sorted(p.name for p in victim.rglob("*")) == ["0", "precious.txt"]
    assert not (tmp_path.parent / "outside.txt").exists()


def test_the_html_report_embeds_only_screenshots_inside_the_store(tmp_path: Path) -> None:
    journal = tmp_path / "run" / "j.jsonl"
    store = artifacts.store_root(journal)
    (store / "ui/clean/0").mkdir(parents=True)
    (store / "ui/clean/0/shot.png").write_bytes(b"inside-the-store")
    (tmp_path / "run" / "secret.txt").write_text("the secret beside the journal")
    (tmp_path / "outside.png").write_text("outside")
    (store / "ui/clean/1").mkdir(parents=True)
    (store / "ui/clean/1/link.png").symlink_to(tmp_path / "outside.png")
    paths = {
        "ui/clean/0": "j.jsonl.d/ui/clean/0/shot.png",
        "ui/clean/1": "j.jsonl.d/ui/clean/1/link.png",
        "ui/clean/2": "/etc/hostname",
        "ui/clean/3": "../secret.txt",
        "ui/clean/4": "secret.txt",
        "ui/clean/5": "j.jsonl.d/../secret.txt",
    }
    failures = [BrowserFailure(t, "clean", "timeout", p) for t, p in paths.items()]
    a = SimpleNamespace(browser=BrowserView([], failures), journal=str(journal))
    page = browser_failures_html(a)  # type: ignore[arg-type]  # the two fields it reads
    embedded = page.count("data:image/png;base64,")
    assert embedded == 1
    assert base64.b64encode(b"inside-the-store").decode() in page
    for trial_id in list(paths)[1:]:  # each refusal names its trial and the path it gave
        assert f"trial {trial_id}: artifact path" in page
    for text in ("the secret beside", "outside", Path("/etc/hostname").read_text().strip()):
        assert base64.b64encode(text.encode()).decode()[:12] not in page
