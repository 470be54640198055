"""User language: the customer writes in another language, from the bundled phrase tables.

The trial's language is ``language`` or, when not given, a seeded choice among the others
(es, de, fr), the same for the whole conversation: frames, yes and no, corrections and
goodbyes in that language, amounts with its decimal comma. Reading English as a second
language, the user does not follow the agent's first ``unclear`` proposals and answers them
with "¿Cómo? No le entiendo bien." (neither yes nor no); a proposal made again is followed.
An agent that reads yes and no only in English, or takes anything but "no" for a yes, writes
on a reply that was not consent (``misread_language``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    PerturbationContext,
    perturbation,
)
from chaoseval.users import phrases
from chaoseval.users.channel import UserCall
from chaoseval.users.perturbing import UserPerturbation

OTHERS = tuple(lang for lang in phrases.LANGUAGES if lang != "en")


class UserLanguageParams(CommonParams):
    language: str | None = Field(
        default=None, description=f"the user's language ({', '.join(OTHERS)}; default: drawn)"
    )
    unclear: int = Field(
        default=1, ge=0, description="proposals the user answers with 'sorry?' before following"
    )

    @field_validator("language")
    @classmethod
    def _bundled(cls, v: str | None) -> str | None:
        if v is not None and v not in phrases.LANGUAGES:
            raise ValueError(f"no phrase table for {v!r}; bundled: {', '.join(phrases.LANGUAGES)}")
        return v


MISREAD_LANGUAGE = RootCause(
    name="misread_language",
    label="misread a user writing in another language",
    owner="user_language",
)


@perturbation("user_language")
class UserLanguage(UserPerturbation[UserLanguageParams]):
    """The user writes in another language, and needs an English proposal made twice."""

    Params = UserLanguageParams
    models = "a customer writing in Spanish, German or French, reading English with effort"
    root_causes = (MISREAD_LANGUAGE,)

    def __init__(self, params: UserLanguageParams | None = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self._language: str | None = self.params.language
        self._pardons = 0

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        if self._language is None:  # drawn once, on the first turn's stream
            self._language = ctx.rng.choice(OTHERS)
        style = call.style
        style.language = self._language
        unclear = self._pardons < self.params.unclear
        style.pardon = unclear and call.reading.confirm and not call.reading.misstated
        reply = await call_next(call)
        if reply is None:
            return reply
        pardon = style.pardon and any(p in reply for p in phrases.table(style.language).pardon)
        self._pardons += pardon
        if self._language != "en" or pardon:
            ctx.fault("user", "language", language=self._language, pardon=pardon)
        return reply

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """It wrote on a reply to its proposal that was not a yes."""
        return MISREAD_LANGUAGE if self.wrote_unagreed(failure) is not None else None
