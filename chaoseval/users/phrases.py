"""What the deterministic user says, by language and persona: bundled phrase tables.

The default user speaks English with the first frame of each table; the ``user_paraphrase``
and ``user_language`` perturbations draw other frames and other languages from these tables
with the trial's seeded streams, so a conversation needs no model and no network. Amounts
are written as the language writes them (a decimal comma in Spanish, German and French).
"""

from __future__ import annotations

from dataclasses import dataclass

LANGUAGES = ("en", "es", "de", "fr")


@dataclass(frozen=True)
class Phrases:
    """One language's frames: each list's first is the default user's."""

    state: tuple[str, ...]  # a fact: {label} (English frames only) and {value}
    yes: tuple[str, ...]  # agreeing to what the agent proposed
    correct: tuple[str, ...]  # "no": {label} and the right {value}
    refuse: tuple[str, ...]  # "no" to a proposal, before a demand
    what: tuple[str, ...]  # asked nothing it can answer, while withholding
    bye: tuple[str, ...]  # leaving: the conversation is over
    generic: dict[str, tuple[str, ...]]  # by persona: nothing asked, nothing to add
    yes_words: tuple[str, ...]  # how a reply in this language starts when it agrees
    no_words: tuple[str, ...]
    decimal: str = "."
    # Taking back a fact it said wrong, unasked: {label} (English frames only) and {value}.
    recant: tuple[str, ...] = ()
    # A proposal it did not follow (a reader of another language): neither yes nor no.
    pardon: tuple[str, ...] = ()
    hurry: tuple[str, ...] = ()  # an impatient user's aside: it will not wait long


TABLES: dict[str, Phrases] = {
    "en": Phrases(
        state=("My {label} is {value}.", "It's {value}, the {label}.", "The {label}? {value}.",
               "{value} is the {label}."),
        yes=("Yes, that's right. Please go ahead.", "Yes, correct, go ahead.",
             "That's right, yes."),
        correct=("No, my {label} is {value}.", "No, that's wrong: the {label} is {value}.",
                 "No. It's {value}, the {label}."),
        refuse=("No.", "No, that's not what I want."),
        what=("What do you need to know?", "What exactly do you need?"),
        bye=("I don't have time for this. Goodbye.", "Forget it, I'm leaving."),
        generic={
            "plain": ("I just want this sorted out.", "Can you help me with it?"),
            "terse": ("Fix it.", "Well?"),
            "chatty": ("Honestly it's been a long day and I just want this sorted out, you "
                       "know how it is.", "I'd really appreciate your help with this."),
            "upset": ("This is ridiculous. Sort it out.", "I'm really annoyed about this."),
        },
        yes_words=("yes", "yeah", "yep", "correct", "that's right", "right", "sure", "ok"),
        no_words=("no", "nope", "wrong"),
        recant=("Sorry, I gave you the wrong {label}: it's {value}.",
                "Wait, that's not right. My {label} is actually {value}."),
        pardon=("Sorry?", "Sorry, what do you mean?"),
        hurry=("Please be quick, I don't have much time.", "Can we hurry this up?"),
    ),
    "es": Phrases(
        state=("Es {value}.", "Mire: {value}.", "{value}, ese es."),
        yes=("Sí, correcto. Adelante, por favor.", "Sí, así es."),
        correct=("No, es {value}.", "No, eso está mal: es {value}."),
        refuse=("No.", "No, eso no es lo que quiero."),
        what=("¿Qué necesita saber?",),
        bye=("No tengo tiempo para esto. Adiós.",),
        generic={
            "plain": ("Solo quiero que lo resuelvan.",), "terse": ("Arréglenlo.",),
            "chatty": ("La verdad es que ha sido un día largo y solo quiero resolverlo.",),
            "upset": ("Esto es ridículo. Resuélvanlo.",),
        },
        yes_words=("sí", "si", "correcto", "así es", "claro", "vale"),
        no_words=("no", "incorrecto"),
        recant=("Perdón, me equivoqué: es {value}.", "Espere, no: en realidad es {value}."),
        pardon=("¿Cómo? No le entiendo bien.", "Perdone, ¿qué quiere decir?"),
        hurry=("Rápido, por favor, no tengo mucho tiempo.", "¿Podemos darnos prisa?"),
        decimal=",",
    ),
    "de": Phrases(
        state=("Es ist {value}.", "Also: {value}.", "{value}, genau."),
        yes=("Ja, das stimmt. Bitte machen Sie weiter.", "Ja, richtig."),
        correct=("Nein, es ist {value}.", "Nein, das ist falsch: es ist {value}."),
        refuse=("Nein.", "Nein, das will ich nicht."),
        what=("Was müssen Sie wissen?",),
        bye=("Dafür habe ich keine Zeit. Auf Wiedersehen.",),
        generic={
            "plain": ("Ich möchte nur, dass das geklärt wird.",), "terse": ("Regeln Sie das.",),
            "chatty": ("Ehrlich gesagt war es ein langer Tag, ich möchte das nur klären.",),
            "upset": ("Das ist lächerlich. Regeln Sie das.",),
        },
        yes_words=("ja", "richtig", "genau", "stimmt"),
        no_words=("nein", "falsch"),
        recant=("Entschuldigung, das war falsch: es ist {value}.",
                "Moment, nein: eigentlich ist es {value}."),
        pardon=("Wie bitte? Ich verstehe Sie nicht ganz.", "Entschuldigung, was meinen Sie?"),
        hurry=("Bitte schnell, ich habe nicht viel Zeit.", "Geht das etwas schneller?"),
        decimal=",",
    ),
    "fr": Phrases(
        state=("C'est {value}.", "Voilà : {value}.", "{value}, c'est ça."),
        yes=("Oui, c'est exact. Allez-y, s'il vous plaît.", "Oui, c'est ça."),
        correct=("Non, c'est {value}.", "Non, c'est faux : c'est {value}."),
        refuse=("Non.", "Non, ce n'est pas ce que je veux."),
        what=("Que voulez-vous savoir ?",),
        bye=("Je n'ai pas le temps pour ça. Au revoir.",),
        generic={
            "plain": ("Je veux juste que ce soit réglé.",), "terse": ("Réglez ça.",),
            "chatty": ("Franchement la journée a été longue, je veux juste régler ça.",),
            "upset": ("C'est ridicule. Réglez ça.",),
        },
        yes_words=("oui", "exact", "c'est ça", "d'accord"),
        no_words=("non", "faux"),
        recant=("Pardon, je me suis trompé : c'est {value}.",
                "Attendez, non : en fait c'est {value}."),
        pardon=("Pardon ? Je ne comprends pas bien.", "Excusez-moi, que voulez-vous dire ?"),
        hurry=("Vite, s'il vous plaît, je n'ai pas beaucoup de temps.", "On peut faire vite ?"),
        decimal=",",
    ),
}


def table(language: str) -> Phrases:
    try:
        return TABLES[language]
    except KeyError:
        raise ValueError(
            f"no phrase table for language {language!r}; bundled: {', '.join(LANGUAGES)}"
        ) from None
