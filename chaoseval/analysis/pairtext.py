"""The JSON report's ``cells`` written as text from the pairs' numbers.

:func:`chaoseval.analysis.pairs.pair_json`'s objects, as ``json.dumps(indent=2)`` writes them
in a list whose items are at ``pad``, without making them: at 100k tasks (300k pairs) making
each object and encoding it took ~13 s of a report's ~17 s of writing; here each field is
written for a chunk of pairs at once (a float as its repr, as json writes it) and each pair's
text put together in one format. ``tests/analysis/test_pairs.py`` holds the text to the
objects' encoding.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.curves import Heatmap
from chaoseval.analysis.pairs import Chunk, chunks, texts
from chaoseval.store.columns import Trials

__all__ = ["heatmap_text", "long_list", "pair_text"]

RUN = 512  # pairs' text written at once

# A string as json.dumps writes it (made once: dumps with an option builds an encoder a call).
_string = json.JSONEncoder().encode


def long_list(
    lists: Callable[[Iterable[Any]], Any],
    text: Callable[[str], Iterable[str]],
    items: Callable[[], Iterable[Any]],
) -> Any:
    """One of the JSON report's long lists, made by ``lists``: from its ``text`` (as
    :func:`pair_text` writes it) when ``lists`` can take text (render.jsonstream.Streamed,
    whose ``rendered`` does), else of its ``items()`` (asked for only then). The one place
    that tells the two apart."""
    rendered = getattr(lists, "rendered", None)
    if rendered is not None:
        return rendered(text)
    return lists(items())


def pair_text(t: Trials, ks: Sequence[int], pad: str) -> Iterator[str]:
    """The pairs in runs (:data:`RUN` pairs each), every pair as ``"\\n" + pad`` and its
    lines, joined by "," (render.jsonstream.Streamed.rendered)."""
    text = _Text(pad)
    for chunk in chunks(t, ks):
        written = text.pairs(chunk)
        # Runs of a few hundred KB: the writer redacts and encodes each as a whole.
        for start in range(0, len(written), RUN):
            yield ",".join(written[start : start + RUN])


def heatmap_text(h: Heatmap, key: str, pad: str) -> Iterator[str]:
    """The JSON report's heatmap (each perturbed pair's ``{"scenario", "cell", key: its
    value}`` by scenario, then cell) as :func:`pair_text` writes the pairs."""
    t = h.trials
    if t is None:
        return
    vocab = t.vocab
    tasks, cells = vocab["scenario"], list(map(_string, vocab["cell"]))
    scenario, cell, value = h.sorted_codes()
    keep = cell != t.code("cell", CLEAN)
    scenario, cell, value = scenario[keep], cell[keep], value[keep]
    p0, p1 = "\n" + pad, "\n" + pad + "  "
    named = f"{p1}{_string(key)}: "  # (after the cell's ",")
    for start in range(0, len(value), RUN):
        values = value[start : start + RUN]
        yield ",".join(
            f'{p0}{{{p1}"scenario": {_string(tasks[s])},{p1}"cell": {cells[c]},{named}{v}{p0}}}'
            for s, c, v in zip(
                scenario[start : start + RUN].tolist(),
                cell[start : start + RUN].tolist(),
                texts(values, ~np.isnan(values)),
                strict=True,
            )
        )


class _Text:
    def __init__(self, pad: str) -> None:
        self.p0, self.p1 = "\n" + pad, "\n" + pad + "  "
        self.p2, self.p3 = self.p1 + "  ", self.p1 + "    "
        self._names: dict[int, tuple[list[str], list[str]]] = {}

    def obj(self, entries: list[str]) -> str:
        """An object of entries (each '"key": value') two spaces deeper than its key."""
        if not entries:
            return "{}"
        return "{" + self.p2 + ("," + self.p2).join(entries) + self.p1 + "}"

    def _names_of(self, ch: Chunk) -> tuple[list[str], list[str]]:
        """The tasks' names, and the cells' as JSON (once per journal; a task's is written
        when used: 100k of them held as JSON were ~7 MB more while the report was written)."""
        vocab = ch.p.t.vocab
        got = self._names.get(id(vocab))
        if got is None:
            got = self._names[id(vocab)] = (vocab["scenario"], list(map(_string, vocab["cell"])))
        return got

    def _by_k(self, ch: Chunk, prefix: str) -> tuple[list[str], list[str]]:
        """Each pair's pass@k (``prefix`` "at") or pass^k ("hat") object, and its change from
        clean's pair on its task (for pairs whose task ran clean)."""
        ks = ch.ks
        if not ks:
            empty = ["{}"] * len(ch.pairs)
            return empty, empty
        template = self.obj([f"{json.dumps(str(k))}: %s" for k in ks])
        own = [ch.values[f"{prefix}{k}"].texts(ch.pairs) for k in ks]
        change = [ch.values[f"{prefix}{k}"].change_texts(ch.pairs, ch.same) for k in ks]
        changes = zip(zip(*change, strict=True), ch.clean, strict=True)
        return (
            [template % v for v in zip(*own, strict=True)],
            [template % v if clean else "{}" for v, clean in changes],
        )

    def pairs(self, ch: Chunk) -> list[str]:
        """Each pair of the chunk as its text."""
        p0, p1 = self.p0, self.p1
        tasks, cells = self._names_of(ch)
        mean = ch.values["mean"].texts(ch.pairs)
        mean_change = ch.values["mean"].change_texts(ch.pairs, ch.same)
        at, delta_at = self._by_k(ch, "at")
        hat, delta_hat = self._by_k(ch, "hat")
        causes = ch.causes.texts(ch.pairs, self.obj)
        most = max(ch.ks, default=0)
        out = []
        for x, row in enumerate(ch.rows()):
            _, sc, cell, missed, n, trials, ne, hall, safety, injected, dlv, perturbed, clean = row
            task = _string(tasks[sc])
            scored = not missed and n >= 1
            listed = "[" + self.p2 + task + p1 + "]"
            excluded = self._excluded(ch.ks, task, n) if scored and n < most else "{}"
            vetoes = "{}"
            if not missed and (hall or safety):
                vetoes = self.obj(
                    [*([f'"hallucination": {hall}'] if hall else []),
                     *([f'"safety": {safety}'] if safety else [])]
                )  # fmt: skip
            out.append(
                f'{p0}{{{p1}"scenario": {task},{p1}"name": {cells[cell]},'
                f'{p1}"tasks": {int(scored)},{p1}"trials": {trials},'
                f'{p1}"scored": {n if scored else 0},{p1}"not_evaluable": {ne},'
                f'{p1}"mean": {mean[x]},{p1}"pass_at": {at[x]},{p1}"pass_hat": {hat[x]},'
                f'{p1}"excluded": {excluded},'
                f'{p1}"unscored": {listed if not missed and not scored else "[]"},'
                f'{p1}"delta_mean": {mean_change[x] if clean else "null"},'
                f'{p1}"delta_pass_at": {delta_at[x]},{p1}"delta_pass_hat": {delta_hat[x]},'
                f'{p1}"root_causes": {causes[x]},{p1}"vetoes": {vetoes},'
                f'{p1}"faults_injected": {injected},{p1}"faults_delivered": {dlv},'
                f'{p1}"did_not_land": {"true" if perturbed and not dlv else "false"},'
                f'{p1}"not_landed": {listed if missed else "[]"}{p0}}}'
            )
        return out

    def _excluded(self, ks: list[int], task: str, n: int) -> str:
        """The ks a scored pair has fewer than k trials for, each listing its task."""
        return self.obj([f"{json.dumps(str(k))}: [{self.p3}{task}{self.p2}]" for k in ks if n < k])
