"""An LLM plays the user: ``chaoseval run --user-model-endpoint URL --user-model NAME``.

A drop-in for the deterministic user behind ``UserSession``: it reads each agent message the
same way (``DeterministicUser.read``: what is asked, stated, misstated), keeps ``told`` (what
it says each fact is, which a contradiction plugin may change) and leaves after ``max_turns``;
only the reply's words come from a model, through the real ``openai`` SDK on any
OpenAI-compatible chat endpoint. The user-channel perturbations still apply: the turn's
``Style`` (language, withholding, a demand, paraphrase) becomes an instruction of that turn,
and the reply text goes back through the plugins as the deterministic user's does.

The simulator's own failures are never the agent's (tau2-bench found up to 30% of failed runs
were the user simulator's): a reply stating a value of a fact's kind it was never given (it
broke its script), a reply that repeats its goal's text (it leaked what only it may know), or
an endpoint still failing after retries (tenacity) raise ``UserSimulatorError``: the trial is
not evaluable with root cause ``user_simulator`` and the reports count it apart.

The endpoint's key comes from an environment variable (``key_env``) and is registered with
the redactor before any request, so it is never written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from chaoseval import redact
from chaoseval.errors import ConfigError, UserSimulatorError
from chaoseval.model.conversation import RenderedUser
from chaoseval.users import phrases, reading
from chaoseval.users.simulator import DeterministicUser, Reply, Style

__all__ = ["STOP", "LLMUser", "UserModel", "system_prompt"]

STOP = "###STOP###"  # the model ends the conversation with it (tau2-bench's convention)
LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "de": "German", "fr": "French"}
PERSONAS = {
    "plain": "You are polite and to the point.",
    "terse": "You write very short messages, a few words each.",
    "chatty": "You are chatty and friendly, and add small talk.",
    "upset": "You are upset and impatient, and it shows.",
}
# The whole goal repeated is a leak, and so are this many of its words in a row (as written):
# fewer would take a customer's own "the cold brew that never came out" for one.
LEAK_WORDS = 12
# Amounts are checked only where written as money (decimals or a currency sign): "10 minutes"
# is no amount the user misstated.
_MONEY = re.compile(r"[$€£]\s?\d+(?:[.,]\d{1,2})?|(?<![\w.,])\d+[.,]\d{2}(?![\w.,]*\d)")


@dataclass(frozen=True)
class UserModel:
    """Where the LLM user's words come from; the key is only named, never held here."""

    endpoint: str
    model: str
    key_env: str = "OPENAI_API_KEY"
    attempts: int = 3  # requests per reply before the endpoint counts as failed
    wait: float = 0.5  # seconds before the first retry, doubled each time (at most 8)
    timeout: float = 60.0  # seconds per request

    def __post_init__(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise ConfigError(
                f"--user-model-endpoint must be an http(s) URL of an OpenAI-compatible API "
                f"(such as http://127.0.0.1:8000/v1), not {self.endpoint!r}"
            )
        if not self.model:
            raise ConfigError("--user-model-endpoint needs --user-model NAME: the model to ask")
        # Where the run is configured (the journal's writer), as well as in each worker.
        redact.add_secret(os.environ.get(self.key_env))

    def describe(self) -> str:
        """What the manifest records: the model and the endpoint, never the key."""
        return f"{self.model} at {self.endpoint}"

    def client(self) -> Any:
        """A client for one trial (openai's AsyncOpenAI; its own retries off: tenacity's)."""
        import openai  # imported when an LLM user is asked for: no cost to other runs

        key = os.environ.get(self.key_env)
        redact.add_secret(key)  # whatever the variable is called, its value is never written
        return openai.AsyncOpenAI(
            base_url=self.endpoint,
            api_key=key or "unused",  # a local server may need none; the SDK wants a value
            max_retries=0,
            timeout=self.timeout,
        )


def system_prompt(user: RenderedUser, told: dict[str, str], style: Style) -> str:
    """What the model is told it is: the goal, persona, facts (as it says them now), script,
    and this turn's style."""
    spec = user.spec
    facts = "\n".join(f"- {f.spoken}: {told[f.name]}" for f in spec.facts) or "- (nothing)"
    volunteer = [f.spoken for f in spec.facts if f.volunteer and not style.withhold]
    script = "\n".join(f'- in your reply to message {n}, say: "{line}"' for n, line in
                       sorted(user.script.items()))  # fmt: skip
    lines = [
        "You are role-playing a customer writing to a company's support agent. You are the "
        "customer, never the agent: write only the customer's next message.",
        f"Your goal (keep it to yourself: pursue it in your own words, never quote it): "
        f"{user.goal}",
        PERSONAS.get(spec.persona, ""),
        "What you know (give a fact when the agent asks for it, written exactly as here; never "
        f"invent, change or guess any other value):\n{facts}",
    ]
    if volunteer:
        lines.append(f"Mention these yourself in your first reply: {', '.join(volunteer)}.")
    if script:
        lines.append(f"Your script (the agent's messages are numbered from 1):\n{script}")
    lines.append(
        "When the agent proposes something and states your facts right, agree, starting with "
        '"Yes". When it states one wrong, start with "No" and correct it. Write one to three '
        f"sentences of plain text. When your goal is met or you give up, end with {STOP}."
    )
    lines += _style_lines(user, told, style)
    return "\n\n".join(x for x in lines if x)


def _style_lines(user: RenderedUser, told: dict[str, str], style: Style) -> list[str]:
    """The user-channel perturbations' style for this turn, as instructions. The fields a
    newer ``Style`` may carry (how a fact is written this turn, facts taken back, a proposal
    not followed) are read where present."""
    out = []
    if style.language != "en":
        out.append(f"Write this reply in {LANGUAGE_NAMES.get(style.language, style.language)}.")
    if style.withhold:
        out.append("Answer only what the agent asks directly; volunteer nothing.")
    if style.demand and user.demand:
        out.append(f'If the agent proposes anything, refuse and insist: "{user.demand}"')
    if getattr(style, "pardon", False):
        out.append("If the agent proposes anything, say you do not follow it: neither yes nor no.")
    if style.paraphrase is not None:
        out.append("Word this reply differently from your earlier ones.")
    for name, written in written_values(style).items():
        fact = user.fact(name)
        out.append(f"If you give your {fact.spoken} in this reply, write it exactly as {written}.")
    for name in getattr(style, "recant", None) or ():
        fact = user.fact(name)
        out.append(f"Say you gave the wrong {fact.spoken} before: it is {told[name]}.")
    return out


def written_values(style: Style) -> dict[str, str]:
    """How the user writes facts this turn instead of what it believes (a typo, another
    form, a wrong value it believes): ``Style.values`` where the style has it."""
    return dict(getattr(style, "values", None) or {})


class LLMUser(DeterministicUser):
    """One trial's LLM user: ``await converse(text, style)`` where the deterministic user's
    ``respond`` is called (``users.channel.UserSession`` awaits either)."""

    def __init__(self, user: RenderedUser, config: UserModel, client: Any):
        super().__init__(user)
        self.config = config
        self._client = client
        # The conversation from the model's side: it is the assistant, the agent its user.
        self.history: list[dict[str, str]] = [{"role": "assistant", "content": user.opening}]
        self.idle = 0  # messages in a row that asked nothing and proposed nothing (withholding)

    def respond(self, text: str, style: Style) -> Reply:
        raise TypeError("an LLM user answers through `await converse(text, style)`")

    async def close(self) -> None:
        await self._client.close()

    async def converse(self, text: str, style: Style) -> Reply:
        if self.left:
            return Reply(None, self.read(text))
        self.turns += 1
        seen = self.read(text)
        table = phrases.table(style.language)
        self.idle = 0 if seen.asked or seen.confirm else self.idle + 1
        patience = getattr(style, "patience", None)  # withholding's reluctance, where set
        if self.turns > self.user.spec.max_turns or (
            style.withhold and patience is not None and self.idle > patience
        ):  # the scenario's and the plugins' rules, not the model's
            self.left = True
            return Reply(table.bye[0], seen, ended=True)
        messages = [
            {"role": "system", "content": system_prompt(self.user, self.told, style)},
            *self.history,
            {"role": "user", "content": text},
        ]
        raw = await self._complete(messages)
        ended = STOP in raw
        reply = " ".join(raw.replace(STOP, " ").split())
        line = None if style.withhold else self.user.script.get(self.turns)
        if line and line.casefold() not in reply.casefold():
            reply = f"{reply} {line}".strip()  # the script is said whatever the model wrote
        demand = self.user.demand if style.demand and seen.confirm else None
        if demand and demand.casefold() not in reply.casefold():
            reply = f"{reply} {demand}".strip()  # a pushy user's demand, as the plugin set it
        written = written_values(style)
        self._check(reply, written)
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
        self._said(reply, written, style)
        agreed = bool(seen.confirm and not seen.misstated and not demand) and reading.starts_with(
            reply, table.yes_words
        )
        self.left = ended
        return Reply(reply or table.bye[0], seen, agreed=agreed, ended=ended)

    async def _complete(self, messages: list[dict[str, str]]) -> str:
        """The model's next message, retried on a connection failure, a timeout, a 429 or a
        5xx; still failing, or no text, is the simulator's failure."""
        import openai
        from tenacity import (
            AsyncRetrying,
            RetryError,
            retry_if_exception_type,
            stop_after_attempt,
            wait_exponential,
        )

        transient = (
            openai.APIConnectionError,  # (APITimeoutError is one)
            openai.RateLimitError,
            openai.InternalServerError,
        )
        where = f"user model {self.config.model!r} at {self.config.endpoint}"
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.config.attempts),
                wait=wait_exponential(multiplier=self.config.wait, max=8),
                retry=retry_if_exception_type(transient),
            ):
                with attempt:
                    done = await self._client.chat.completions.create(
                        model=self.config.model, messages=messages
                    )
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise UserSimulatorError(
                f"{where} failed {self.config.attempts} times: {type(last).__name__}: "
                f"{redact.head(str(last), 300)}; check that the endpoint serves chat "
                "completions for that model"
            ) from exc
        except openai.APIError as exc:
            raise UserSimulatorError(
                f"{where} refused the request: {type(exc).__name__}: {redact.head(str(exc), 300)}"
            ) from exc
        content = done.choices[0].message.content if done.choices else None
        if not content or not content.strip():
            raise UserSimulatorError(f"{where} answered turn {self.turns} with no text")
        return str(content)

    def _said(self, reply: str, written: dict[str, str], style: Style) -> None:
        """The facts the reply states, as it believes or writes them: ``given``, and the
        style's ``said`` where it has one (the plugins log what reached the agent by it)."""
        said = getattr(style, "said", None)
        for f in self.facts:
            value = written.get(f.name, self.told[f.name])
            if f.kind == "text":
                hit = value.casefold() in reply.casefold()
            else:
                reads = set(reading.values(f.kind, value, strict=False))
                reads = reads or {reading.canonical(f.kind, value)}
                hit = bool(reads & set(reading.values(f.kind, reply, strict=False)))
            if hit:
                self.given.add(f.name)
                if isinstance(said, list):
                    said.append(f.name)
        if style.paraphrase is not None and hasattr(style, "varied"):
            style.varied = True  # a model's reply is never the default user's frame

    def _check(self, reply: str, written: dict[str, str] | None = None) -> None:
        """The reply against what the user knows: a leaked goal, a value it was never given
        (``written``: the values the plugins made it write this turn are its own)."""
        if leaked := _leak(self.user.goal, reply):
            # Not quoted: the error reaches the agent too (ask_user's error result).
            said = (
                "its whole goal"
                if leaked == " ".join(_words(self.user.goal))
                else (f"{len(leaked.split())} words of its goal in a row")
            )
            raise UserSimulatorError(
                f"the LLM user leaked its goal verbatim in its reply to message {self.turns} "
                f"({said}); a prompt or model that keeps the goal to itself is needed"
            )
        heard = " ".join(
            [m["content"] for m in self.history] + [self.user.goal, *self.user.script.values()]
            + [self.user.demand or ""]
        )  # fmt: skip
        for f in self.facts:
            if f.kind == "text":
                continue  # free text: no way to tell another value from other words
            known = {reading.canonical(f.kind, self.told[g.name])
                     for g in self.facts if g.kind == f.kind}  # fmt: skip
            for name, value in (written or {}).items():
                if self.user.fact(name).kind == f.kind:
                    known |= {reading.canonical(f.kind, value), *_stated(f.kind, value)}
            wrong = set(_stated(f.kind, reply)) - known - set(_stated(f.kind, heard))
            if wrong:
                # Its true values left out: the error reaches the agent too (ask_user).
                raise UserSimulatorError(
                    f"the LLM user broke its script in its reply to message {self.turns}: it "
                    f"stated {f.kind} {', '.join(sorted(wrong))}, not a value it was given "
                    f"(its {f.spoken} is another)"
                )


def _stated(kind: Any, text: str) -> list[str]:
    """The values of ``kind`` a text states, canonical (amounts only where written as money)."""
    if kind == "amount":
        return [reading.canonical("amount", m.lstrip("$€£ ")) for m in _MONEY.findall(text)]
    return reading.values(kind, text, strict=True)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _leak(goal: str, reply: str) -> str | None:
    """The goal's words the reply repeats in a row: the whole goal, or ``LEAK_WORDS`` of it."""
    g, r = _words(goal), " ".join(_words(reply))
    n = min(LEAK_WORDS, len(g))
    if not n:
        return None
    for i in range(len(g) - n + 1):
        run = " ".join(g[i : i + n])
        if re.search(rf"(?<!\w){re.escape(run)}(?!\w)", r):
            return run
    return None
