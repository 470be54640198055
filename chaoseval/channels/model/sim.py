"""``chaoseval-sim``: the bundled offline model, the seeded simulated policy behind a chat API.

One policy coroutine runs per trial (the scenario's reference-driven plan with the simulated
LLM's slips, exactly as the ``naive`` agent's model). Its tool calls do not reach the tools:
each becomes a ``tool_calls`` answer to the pending request, and the policy waits for the next
request to bring that call's result (chaoseval.channels.model.observations reads every common
client's shape; a client's own refusal of the call, said without naming it, is its outcome, so
a refused call is not asked for again). A code-writing agent, which offers no function tools
but lists them as Python functions in its prompt, gets each call as a code block instead
(chaoseval.channels.model.codeprompt). In a conversational scenario what the policy says to
the user is a call of the request's ``ask_user`` tool, else plain text, and the user's replies
are read back from the conversation (chaoseval.channels.model.simuser). Its answer becomes the
final message (JSON with
``answer``, ``gave_up``, ``data``), or a call of the framework's own answer tool. The sampling
temperature and seed are those of the first request that reached it, so a wire agent's success
varies with them as the simulated agents' does. The same request body always gets the same
completion (a client's retry after a fault must not step the policy twice).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
from anyio.abc import TaskGroup

from chaoseval.agents.actor import run_solution
from chaoseval.agents.simulated import SimActor
from chaoseval.channels.model.calls import ModelCall
from chaoseval.channels.model.codeprompt import CodePrompt, code_prompt
from chaoseval.channels.model.observations import (
    Observation,
    observation_for,
    refusal,
    refusals,
)
from chaoseval.channels.model.simuser import (
    Reply,
    UserAction,
    WireUser,
    offers_ask_user,
    reply_for,
    user_messages,
)
from chaoseval.channels.model.toolresults import REJECTED, as_exception
from chaoseval.channels.model.wire import body_hash, completion, estimate_tokens, usage
from chaoseval.channels.tasks import hosting
from chaoseval.engine.askuser import ASK_USER
from chaoseval.errors import (
    AgentVisibleError,
    ToolConnectionError,
    ToolError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.model.records import AgentOutput, ModelSettings, Usage
from chaoseval.model.scenario import ToolDescription
from chaoseval.seams.agent import Episode

SIM_MODEL = "chaoseval-sim"
REISSUES = 2  # how often the model repeats a call the agent refused before it gives up on it
DEFAULT_TEMPERATURE = 1.0  # the OpenAI API's default when a request sets none
FINAL_TOOLS = ("final_answer", "final_result")  # frameworks' answer tools (smolagents, pydantic-ai)


@dataclass
class ToolAction:
    call_id: str
    name: str
    args: dict[str, Any]


@dataclass
class FinalAction:
    output: AgentOutput


class WireTools:
    """The policy's ``episode.tools``: a call is a turn of the conversation, not a tool run."""

    def __init__(self, episode: Episode, model: SimModel):
        self.specs = episode.tools.specs
        self._describe = episode.tools.describe
        self._model = model

    def describe(self) -> list[ToolDescription]:
        return self._describe()

    def listed(self) -> list[str]:
        """The descriptions of the tools the latest request offers, as the model reads them."""
        return self._model.described

    def note_model_call(self, input_tokens: int, output_tokens: int, cost: float) -> None:
        """The channel records each request itself."""

    async def call(self, name: str, /, **args: Any) -> Any:
        for _ in range(REISSUES + 1):
            offered = self._model.offered
            if name not in offered:
                raise ToolNotOffered(name)
            known = set(self.specs[name].params_schema().get("properties", {}))
            seen = await self._model.ask_tool(name, fit_arguments(args, known, offered[name]))
            if seen.error is None:
                return seen.value
            if seen.error.get("kind") not in REJECTED:
                raise as_exception(seen.error)
        raise as_exception({"kind": "tool_error", "message": f"the agent kept refusing {name}"})


class ToolNotOffered(ToolError):
    """The plan needs a tool the request does not offer: the model says so, calls nothing."""

    def __init__(self, name: str):
        self.tool = name
        super().__init__(f"{name} is not among the tools I was given")


def fit_arguments(
    args: dict[str, Any], known: set[str], offered: set[str] | None
) -> dict[str, Any]:
    """The arguments named as the request's schema names them (tool_schema_drift's rename):
    when exactly one argument's name is missing from the offered parameters and exactly one
    offered parameter is new (not in the scenario's schema), the argument takes the new name.
    Anything else is left as the scenario names it (the server then refuses a stale call)."""
    if offered is None:
        return args
    missing = [k for k in args if k not in offered]
    new = [p for p in offered if p not in known and p not in args]
    if len(missing) != 1 or len(new) != 1:
        return args
    return {new[0] if k == missing[0] else k: v for k, v in args.items()}


class SimModelActor(SimActor):
    """The simulated LLM as a model: slips as the naive policy does; the harness (retries,
    validation) is the wire agent's own. A plan's fallback is taken when the agent reports an
    outage, as a model reading the error would. It is as susceptible to planted instructions as
    the naive model (chaoseval.agents.susceptibility), in the tool results the agent relays and
    in the tool descriptions the request offers (a poisoned or rug-pulled MCP tool): it reads
    those before each call it makes and before it answers, as a model reads its tool list
    every turn."""

    async def call(self, tool: str, /, **args: Any) -> Any:
        await self.heed(cast(WireTools, self.episode.tools).listed())
        return await super().call(tool, **args)

    async def try_call(self, tool: str, /, **args: Any) -> Any:
        try:
            return await self.call(tool, **args)
        except (ToolTimeout, ToolConnectionError, ToolHTTPError):
            return None

    async def last_turn(self, output: AgentOutput) -> AgentOutput:
        """The answering turn reads the tool list too: a description that changed in the
        request that brought the last result (a rug pull) is read before the answer, as a model
        reads its tools every turn. Following it may call a tool first, or add words."""
        said = len(self.said)
        await self.heed(cast(WireTools, self.episode.tools).listed())
        if len(self.said) == said:
            return output
        return output.model_copy(update={"answer": " ".join([output.answer, *self.said[said:]])})


class SimModel:
    """The ``chaoseval-sim`` upstream of one trial."""

    def __init__(self, episode: Episode, task_group: TaskGroup, model: str = SIM_MODEL):
        self._episode = episode
        self._tg = task_group
        self._model = model
        self._lock = anyio.Lock()
        self._cache: dict[str, dict[str, Any]] = {}
        self._actions_in, self._actions = anyio.create_memory_object_stream[
            ToolAction | UserAction | FinalAction
        ](1)
        self._results_in, self._results = anyio.create_memory_object_stream[Observation](1)
        self.offered: dict[str, set[str] | None] = {}  # the request's tools: parameter names
        self.described: list[str] = []  # the request's tool and parameter descriptions
        self._pending: ToolAction | UserAction | None = None
        self._refusals = 0  # refusals the conversation held when the pending call was made
        self._final: FinalAction | None = None
        self._started = False
        self._calls = 0

    async def complete(self, call: ModelCall) -> dict[str, Any]:
        async with self._lock:  # one conversation: requests of a trial are answered in order
            digest = body_hash(call.body)
            if digest not in self._cache:
                action = await self._next_action(call.body)
                self._cache[digest] = self._render(action, call.body, digest)
            fresh: dict[str, Any] = json.loads(json.dumps(self._cache[digest]))  # plugins edit it
            return fresh

    async def ask_tool(self, name: str, args: dict[str, Any]) -> Observation:
        """From the policy: emit a tool call, wait for the request that carries its result."""
        self._calls += 1
        await self._actions_in.send(ToolAction(f"call_{self._calls:03d}", name, args))
        return await self._results.receive()

    async def ask_user(self, text: str) -> Reply:
        """From the policy: say ``text`` to the user, wait for the request that relays the
        reply (chaoseval.channels.model.simuser)."""
        self._calls += 1
        await self._actions_in.send(UserAction(f"call_{self._calls:03d}", text))
        seen = await self._results.receive()
        return seen.value

    async def _next_action(self, body: dict[str, Any]) -> ToolAction | UserAction | FinalAction:
        if self._final is not None:
            return self._final
        # what the policy may call while answering this
        self.offered, self.described, _ = listing(body)
        messages = body.get("messages") or []
        if not self._started:
            self._started = True
            self._tg.start_soon(self._drive, _settings(body))
        elif isinstance(self._pending, UserAction):
            reply = reply_for(messages, self._pending)
            if reply is None:
                return self._pending  # not relayed: the model says it again
            await self._results_in.send(Observation(reply))
        elif self._pending is not None:
            seen = observation_for(messages, self._pending.call_id)
            refused = refusals(messages) if seen is None else []
            if len(refused) > self._refusals:
                # The client refused the call before sending it and said so without naming
                # it: that is the call's outcome (asking again would be refused again).
                seen = refusal(refused[-1])
            if seen is None:
                return self._pending  # no result for the call: the model asks for it again
            await self._results_in.send(seen)
        action = await self._actions.receive()
        if isinstance(action, FinalAction):
            self._final, self._pending = action, None
        else:
            self._pending, self._refusals = action, len(refusals(messages))
        if isinstance(action, UserAction):  # said through ask_user when the request offers it
            action.tool = offers_ask_user(self.offered, self._episode.tools.specs)
            action.users_before = len(user_messages(messages))
        return action

    async def _drive(self, settings: ModelSettings) -> None:
        # WireTools stands in for the ToolBox: the policy only calls, describes and reads specs.
        tools = cast(Any, WireTools(self._episode, self))
        # The model knows the memory the agent read (and from then on), not the trial's: its
        # own reads of it deliver nothing (an agent that never read its memory kept it out of
        # every prompt).
        on_read = self._episode._on_read
        user = self._episode.user  # reached through the agent, never directly
        episode = dataclasses.replace(
            self._episode,
            tools=tools,
            _model=settings,
            usage=Usage(),
            _memory=self._episode.memory_read,
            _on_read=lambda channel: None if channel == "memory" else on_read(channel),
            user=None if user is None else WireUser(user, self.ask_user),
        )
        actor = SimModelActor(episode)
        try:
            output = await run_solution(actor, _reference(episode))
        except ToolNotOffered as exc:
            output = actor.give_up(
                f"I cannot finish this: I need the tool {exc.tool!r}, which is not among the "
                "tools I was given."
            )
        except AgentVisibleError as exc:
            output = actor.give_up(f"a dependency kept failing ({exc}); escalating to a human")
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            # The plan tripped over data it could not read: a model answers something anyway.
            output = AgentOutput(answer=f"I could not make sense of the results ({exc}).")
        await self._actions_in.send(FinalAction(await actor.last_turn(output)))

    def _render(
        self, action: ToolAction | UserAction | FinalAction, body: dict[str, Any], digest: str
    ) -> dict[str, Any]:
        offered, _, code = listing(body)
        call = self._call(action, offered)
        message: dict[str, Any]
        if isinstance(action, UserAction) and not action.tool:  # words to the user
            message, finish = {"role": "assistant", "content": action.text}, "stop"
        elif call is None:
            assert isinstance(action, FinalAction)
            message, finish = {"role": "assistant", "content": _final_text(action)}, "stop"
        elif code is not None:  # a code-writing agent: the call is code in the text
            message = {"role": "assistant", "content": code.call(*call, body.get("stop"))}
            finish = "stop"
        else:
            message, finish = _tool_calls(*call), "tool_calls"
        prompt = estimate_tokens([body.get("messages"), body.get("tools")])
        return completion(
            str(body.get("model") or self._model),
            message,
            finish,
            usage(prompt, estimate_tokens(message)),
            ident=f"chatcmpl-{digest}",
        )

    def _call(
        self, action: ToolAction | UserAction | FinalAction, offered: dict[str, set[str] | None]
    ) -> tuple[str, str, dict[str, Any]] | None:
        """The call that answers the request (id, tool, arguments): the policy's tool call (or
        ask_user), or its answer through the framework's answer tool; None for text."""
        if isinstance(action, ToolAction):
            return action.call_id, action.name, action.args
        if isinstance(action, UserAction):
            return (action.call_id, ASK_USER, {"message": action.text}) if action.tool else None
        final_tool = self._final_tool(offered)
        if final_tool is None:
            return None
        return "call_final", final_tool, _final_args(action, offered.get(final_tool))

    def _final_tool(self, offered: dict[str, set[str] | None]) -> str | None:
        """A framework's own answer tool (smolagents' ``final_answer``, pydantic-ai's
        ``final_result``) when the request offers one the scenario does not have."""
        specs = self._episode.tools.specs
        return next((n for n in FINAL_TOOLS if n in offered and n not in specs), None)


def _tool_calls(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args, default=str)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def _final_args(action: FinalAction, offered: set[str] | None) -> dict[str, Any]:
    """The answer in the answer tool's parameters (``offered``): the fields it has by name,
    else the whole answer's JSON in its one parameter."""
    params = sorted(offered or [])
    out = action.output
    fields = {"answer": out.answer, "gave_up": out.gave_up, "data": out.data}
    if "answer" in params and len(params) > 1:
        return {k: v for k, v in fields.items() if k in params}
    return {params[0] if params else "answer": _final_text(action)}


def _final_text(action: FinalAction) -> str:
    out = action.output
    return json.dumps({"answer": out.answer, "gave_up": out.gave_up, "data": out.data}, default=str)


def listing(
    body: dict[str, Any],
) -> tuple[dict[str, set[str] | None], list[str], CodePrompt | None]:
    """The tools a request offers (parameter names), their descriptions, and the code-writing
    prompt they came from: its function tools, else the Python functions its system prompt
    lists for a code-writing agent (chaoseval.channels.model.codeprompt)."""
    offered = offered_tools(body)
    code = None if offered else code_prompt(body.get("messages") or [])
    if code is not None:
        return code.tools, code.described, code
    return offered, described_tools(body), None


def offered_tools(body: dict[str, Any]) -> dict[str, set[str] | None]:
    """The function tools a chat request offers, with their parameter names (None: no schema)."""
    offered: dict[str, set[str] | None] = {}
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not fn.get("name"):
            continue
        schema = fn.get("parameters")
        props = schema.get("properties") if isinstance(schema, dict) else None
        offered[str(fn["name"])] = set(props) if isinstance(props, dict) else None
    return offered


def described_tools(body: dict[str, Any]) -> list[str]:
    """The descriptions a chat request gives its function tools and their parameters."""
    texts: list[str] = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict):
            continue
        texts.append(str(fn.get("description") or ""))
        schema = fn.get("parameters")
        props = schema.get("properties") if isinstance(schema, dict) else None
        for prop in (props or {}).values() if isinstance(props, dict) else ():
            if isinstance(prop, dict) and isinstance(prop.get("description"), str):
                texts.append(prop["description"])
    return [t for t in texts if t]


@asynccontextmanager
async def sim_upstream(episode: Episode) -> AsyncIterator[SimModel]:
    """A ``chaoseval-sim`` for one trial; its policy is cancelled when the trial ends."""
    _reference(episode)
    async with hosting() as tg:
        yield SimModel(episode, tg)


def _settings(body: dict[str, Any]) -> ModelSettings:
    temperature = body.get("temperature")
    seed = body.get("seed")
    return ModelSettings(
        model=str(body.get("model") or SIM_MODEL),
        temperature=DEFAULT_TEMPERATURE if temperature is None else float(temperature),
        seed=None if seed is None else int(seed),
    )


def _reference(episode: Episode) -> Any:
    if episode.reference is None:
        raise RuntimeError("chaoseval-sim follows the scenario's reference solution")
    return episode.reference
