"""One trial's model channel: requests in, the perturbation chain, the upstream, the trajectory.

Each request becomes a ``model`` step (request hash, attempt, message and tool counts, the tool
calls returned, tokens, latency, faults). A client SDK retries 429/5xx/resets on its own: a
request whose retry-count header is above 0 (or, from a client that sends no such header,
whose bytes repeat the request that just got a fault) is the next attempt of it, and the
earlier attempt's faults are marked *absorbed* (``detail.absorbed``): they reached the agent's
process, and its SDK hid them from the agent's code. They stay delivered (they landed); the
last fault of a chain is the one the code saw.

The step keeps no messages; the trial's ``model.jsonl`` artifact does (``transcript``: per
request, references to its body's bytes and its answer, read and written when the trial ends).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from chaoseval.channels.model.calls import Endpoint, ModelCall, ModelReply
from chaoseval.channels.model.prices import FREE, Prices, cost, current
from chaoseval.channels.model.resent import ConversationReader
from chaoseval.channels.model.transcript import Transcript
from chaoseval.channels.model.wire import (
    answer_fields,
    asks_stream,
    fingerprint,
    members_text,
    with_text,
)
from chaoseval.errors import HarnessError
from chaoseval.model.clock import round6
from chaoseval.model.records import ModelSettings
from chaoseval.model.trajectory import ModelCallData, Step, assign
from chaoseval.seams.agent import Episode, TrialLink
from chaoseval.seams.perturbation import PerturbationContext, build_chain, ctx_stream
from chaoseval.store import artifacts

RETRY_HEADER = "x-stainless-retry-count"
SAMPLED = ("temperature", "seed")  # the sampling settings a request may leave to the channel


class Upstream(Protocol):
    """Where requests go once past the plugins: answers with a whole chat completion. One
    that sends the request on as bytes says so with a true ``sends_bytes`` attribute: it is
    then given them (``ModelCall.raw``) whenever the agent's own can stand for the body. One
    with a ``complete_reply(call, summarize)`` method (forwarding) is called through it: a
    ModelReply, whose completion is decoded only when read if ``summarize`` (the step's
    record alone reads it: the agent is written the upstream's bytes)."""

    async def complete(self, call: ModelCall) -> dict[str, Any]: ...


def trial_link(episode: Episode) -> TrialLink:
    """The trial behind an episode, which every wire channel records into."""
    if episode.link is None:
        raise HarnessError("a wire channel needs an episode built by a trial (episode.link)")
    return episode.link


@dataclass(slots=True)  # made per request: no __dict__ to allocate
class Exchange:
    """One request and what was written back for it."""

    call: ModelCall
    request_hash: str
    step: Step
    started: float
    contexts: list[PerturbationContext] = field(default_factory=list)
    upstream_seconds: float = 0.0  # the upstream's share of the step's latency
    base_seconds: float = 0.0  # the upstream call as a whole (forwarding's own work too)
    injected_seconds: float = 0.0  # the faults' share: delays, hangs, the plugins' own time
    finished: bool = False
    received: bytes = b""  # the body's bytes as they came (the trial's transcript reads them)

    @property
    def fault_ids(self) -> list[int]:
        if not self.contexts:  # no plugin ran: no comprehension to make
            return []
        return [i for c in self.contexts for i in c.fired]


@dataclass(slots=True)
class _Earlier:
    """The last request with a given body, as a later one with the same body needs it: its
    place, its attempt and its faults. Its exchange is kept only while it is in flight (a
    hang's faults are absorbed before it finishes); once written, only its fault ids are:
    a conversation resends its whole history each request, and every body kept to the
    trial's end made both its memory and the collector's full passes grow with it."""

    index: int
    attempt: int
    exchange: Exchange | None
    faults: list[int] = field(default_factory=list)

    @property
    def fault_ids(self) -> list[int]:
        return self.exchange.fault_ids if self.exchange is not None else self.faults


_NO_COST = ModelCallData(input_tokens=0, output_tokens=0, cost=0.0)  # a step without an answer


class TrialModelChannel:
    """The model channel of one trial, addressed by its token (the agent's API key)."""

    def __init__(
        self,
        token: str,
        link: TrialLink,
        upstream: Upstream,
        *,
        prices: Prices | None = None,
        settings: ModelSettings | None = None,
    ):
        self.token = token
        self.link = link
        self.upstream = upstream
        self.prices = prices if prices is not None else current()  # the run's (--prices)
        self.settings = settings  # the trial's configured sampling (--temperature, --model-seed)
        # No plugin on this channel: a reply is the upstream's answer untouched.
        self.unplugged = not any(p.channel == "model" for p in link.plugins)
        # The agent's request bytes are passed on (ModelCall.raw) only where no plugin could
        # change the body, and only to an upstream that sends bytes. Then the server reads
        # of a chat request only what the step records (wire.read_top), and only where it
        # grew since a request it repeats (a conversation is resent whole each turn).
        self.passes_bytes = self.unplugged and bool(getattr(upstream, "sends_bytes", False))
        self.reader = ConversationReader() if self.passes_bytes else None
        # The members the configured settings add to a request's bytes, by what they add.
        self._added: dict[tuple[Any, ...], bytes] = {}
        # An upstream that answers with a ModelReply itself (Upstream: complete_reply).
        self._replies = getattr(upstream, "complete_reply", None)
        self.closed = anyio.Event()
        self._count = 0
        self._last_by_hash: dict[str, _Earlier] = {}
        self._in_flight: dict[int, Exchange] = {}  # by call index: what close() must finish
        # Each request's messages and answer, for the trial's model.jsonl (only when the run
        # keeps artifacts: the trial's, bound while the channel is made).
        kept = artifacts.current()
        self.transcript = Transcript(kept) if kept is not None else None

    def begin(
        self,
        endpoint: Endpoint,
        body: dict[str, Any],
        retry: str,
        received: bytes,
        raw: bytes | None = None,
        digest: str | None = None,
    ) -> Exchange:
        """Record a new request: its step, and whether it retries one that got a fault.
        ``retry``: the request's retry-count header (RETRY_HEADER), "" when it has none.
        ``received``: the request's body as it came (its fingerprint's). ``raw``: the same
        bytes where they can stand for ``body`` (UTF-8 JSON any reader takes alike, whose
        read is ``body`` or, read at its top level only, holds it: the server's check), for
        an upstream that sends bytes. ``digest``: ``fingerprint(received)`` where the
        server's reader took it already (ConversationReader)."""
        state, clock = self.link.state, self.link.world.clock
        if digest is None:
            digest = fingerprint(received)
        previous = self._last_by_hash.get(digest)
        header = retry
        by_header = header.isdigit() and int(header) > 0
        # A client that sends the header says when it retries: the same body with count 0 is
        # the agent's own new request (re-asking after an answer it could not use). Only a
        # client without the header is judged by its body.
        by_body = (
            not header
            and previous is not None
            and previous.index == self._count - 1  # the request just before this one
            and bool(previous.fault_ids)
        )
        attempt = 1
        if previous is not None and (by_header or by_body):
            attempt = previous.attempt + 1
            self._absorb(previous.fault_ids)
        elif by_header:
            attempt = int(header) + 1
        state.turn += 1
        step = state.trajectory.add_bare_step("model", clock.monotonic())
        stream = bool(body.get("stream"))  # (the settings applied below never add it)
        passes = raw is not None and self.passes_bytes
        absent = ("temperature" not in body, "seed" not in body) if passes else (False, False)
        sent = self._apply_settings(body)
        call = ModelCall(
            endpoint=endpoint,
            body=body,
            stream=stream,
            index=self._count,
            attempt=attempt,
            turn=state.turn,
            step=step.index,
            sent=sent,  # given, not the default's dict made and replaced
        )
        if passes and raw is not None:
            call.raw = self._as_sent(raw, body, absent, sent)
        self._count += 1
        exchange = Exchange(call, digest, step, time.perf_counter())
        exchange.received = received
        self._last_by_hash[digest] = _Earlier(call.index, attempt, exchange)
        self._in_flight[call.index] = exchange
        return exchange

    def _apply_settings(self, body: dict[str, Any]) -> dict[str, Any]:
        """The trial's configured temperature and seed, where the request sends none (after
        the request's hash: a client's retry is judged on what it sent); what it did send."""
        sent = {"temperature": body.get("temperature"), "seed": body.get("seed")}  # SAMPLED
        if self.settings is not None:
            if sent["temperature"] is None:
                body["temperature"] = self.settings.temperature
            if sent["seed"] is None and self.settings.seed is not None:
                body["seed"] = self.settings.seed
        return sent

    def _as_sent(
        self, raw: bytes, body: dict[str, Any], absent: tuple[bool, bool], sent: dict[str, Any]
    ) -> bytes | None:
        """The agent's request bytes as the upstream gets the body: the sampling settings the
        channel added (``absent``: whether each of SAMPLED was missing before, now in
        ``body``) at their end. None when they cannot be: a setting the agent sent as null was
        replaced in place, or the body asks for a stream (the upstream is asked for a whole
        completion: the body is written anew without ``stream`` and ``stream_options``)."""
        if asks_stream(body):
            return None
        temperature, seed = body.get("temperature"), body.get("seed")  # SAMPLED
        t_missing, s_missing = absent
        if (not t_missing and sent["temperature"] is None and temperature is not None) or (
            not s_missing and sent["seed"] is None and seed is not None
        ):
            return None
        # What the channel added: the trial's configured values, the same each request (a
        # missing setting is None only where none is configured). Written once per pattern.
        t_added, s_added = temperature if t_missing else None, seed if s_missing else None
        key = (type(t_added), t_added, type(s_added), s_added)  # (1 and 1.0 are written apart)
        added = self._added.get(key)
        if added is None:
            members = {"temperature": t_added, "seed": s_added}
            added = members_text({k: v for k, v in members.items() if v is not None})
            if len(self._added) < 8:
                self._added[key] = added
        return with_text(raw, added)

    def close(self) -> None:
        """The trial ended: a request still held (a hang) was delivered by now."""
        self.closed.set()
        for exchange in list(self._in_flight.values()):
            self.finish(exchange, status=0, result_class="timeout", error="the trial ended")
        if self.transcript is not None:
            self.transcript.write()

    def run(self, exchange: Exchange) -> Awaitable[ModelReply]:
        """The plugins, then the upstream. Raises WireFault for what must replace a reply."""
        if self.unplugged:  # the upstream alone: no chain to build, no plugins' time
            return self._base(exchange, exchange.call)
        return self._chain(exchange)

    async def _chain(self, exchange: Exchange) -> ModelReply:
        link = self.link

        async def base(call: ModelCall) -> ModelReply:
            return await self._base(exchange, call)

        def make_ctx(plugin: Any, call: ModelCall) -> PerturbationContext:
            ctx = PerturbationContext(
                run_seed=link.run_seed,
                scenario=link.scenario,
                trial=link.trial,
                perturbation=plugin.label,
                clock=link.world.clock,
                world=link.world,
                record=link.state.record_fault,
                call_index=call.index,
                step=call.step,
                # Apart from the plugin's tool-channel and setup streams.
                rng=ctx_stream(
                    link.run_seed, link.scenario, f"{plugin.label}@model", link.trial, call.index
                ),
            )
            exchange.contexts.append(ctx)
            return ctx

        chain = build_chain("model", link.plugins, base, make_ctx)
        started = time.perf_counter()
        try:
            reply: ModelReply = await chain(exchange.call)
        finally:
            # The plugins' time around the upstream is the faults' (model_latency sleeps there).
            plugins = time.perf_counter() - started - exchange.base_seconds
            exchange.injected_seconds += plugins
        return reply

    async def _base(self, exchange: Exchange, call: ModelCall) -> ModelReply:
        """The upstream's answer to ``call`` (the chain's innermost step), timed."""
        started = time.perf_counter()
        try:
            if self._replies is not None:
                # With no plugin, a chat completion asked without a stream reaches the agent as
                # the upstream's bytes (server.exchange_response): only its record reads it.
                summarize = self.unplugged and call.endpoint == "chat" and not call.stream
                reply: ModelReply = await self._replies(call, summarize)
                return reply
            return ModelReply(completion=await self.upstream.complete(call))
        finally:
            exchange.base_seconds = time.perf_counter() - started
            told = call.upstream_seconds
            exchange.upstream_seconds = (
                exchange.base_seconds if told is None else min(told, exchange.base_seconds)
            )

    def finish(
        self,
        exchange: Exchange,
        *,
        status: int,
        result_class: str,
        reply: ModelReply | None = None,
        error: str | None = None,
    ) -> None:
        """The answer (or fault) was written: mark the faults delivered, fill in the step."""
        if exchange.finished:
            return
        exchange.finished = True
        step, call = exchange.step, exchange.call
        ids = exchange.fault_ids
        self._in_flight.pop(call.index, None)
        earlier = self._last_by_hash.get(exchange.request_hash)
        if earlier is not None and earlier.exchange is exchange:
            earlier.exchange, earlier.faults = None, ids  # the step's list: read, never changed
        latency = round6(time.perf_counter() - exchange.started)
        get, sent = call.body.get, call.sent.get
        # The request in ``args``, the answer in ``result``, what it cost in ``data`` (the
        # same three numbers as any model step, so usage totals read every agent alike).
        args = {
            "endpoint": call.endpoint,
            "request_hash": exchange.request_hash,
            "attempt": call.attempt,
            "model": get("model"),
            "messages": len(get("messages") or ()),
            "tools": len(get("tools") or ()),
            "stream": call.stream,
            # As the upstream got them (configured, the agent's own, or the sampling
            # plugin's), and as the agent sent them (None: it sent none).
            "temperature": get("temperature"),
            "seed": get("seed"),
            "sent_temperature": sent("temperature"),
            "sent_seed": sent("seed"),
        }
        answer: dict[str, Any] = {
            "status": status,
            # The rest of the step's latency is the channel's own overhead and injected delays.
            "upstream_latency": round6(exchange.upstream_seconds),
        }
        data = _NO_COST
        if reply is not None:
            summary = reply.summary
            names, reason, tin, tout, model = (
                answer_fields(reply.completion) if summary is None else summary.fields()
            )
            answer["tool_calls"] = names
            answer["finish_reason"] = reason
            data = self._account(model, tin, tout)
        assign(
            step,
            faults=ids,
            result_class=result_class,
            error=error,
            latency=latency,
            args=args,
            data=data,
            result=answer,
        )
        if ids:
            self.link.state.deliver(ids)
        if self.transcript is not None:  # references only: read when the trial ends
            self.transcript.add(call, exchange.received, reply, status, result_class, error)

    def _account(self, model: str, tin: int, tout: int) -> ModelCallData:
        spent = cost(self.prices.get(model, FREE), tin, tout)
        usage = self.link.usage
        assign(
            usage,
            model_calls=usage.model_calls + 1,
            input_tokens=usage.input_tokens + tin,
            output_tokens=usage.output_tokens + tout,
            cost=usage.cost + spent,
        )
        return ModelCallData(input_tokens=tin, output_tokens=tout, cost=spent)

    def _absorb(self, fault_ids: list[int]) -> None:
        for i in fault_ids:
            fault = self.link.state.trajectory.faults[i]
            fault.delivered = True  # a hang is absorbed before its own exchange finishes
            fault.detail["absorbed"] = True
