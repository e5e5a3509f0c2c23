"""GBNF grammars that constrain every structured answer, and the env vocabularies behind them:
under a grammar every answer parses and every goal is made of the environment's own verbs and
objects. :data:`ENV_VOCABULARY` gathers each family's goal language (written once in
``env_registry.<family>.vocabulary``), which the grammar, the parser and the oracle all read,
so they can never disagree about what a valid goal is. Why:
docs/labeler.md#tasks-prompts-grammars-and-parsers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from env_registry.babyai import vocabulary as babyai
from env_registry.crafter import vocabulary as crafter
from env_registry.nethack import vocabulary as nethack


# ------------------------------------------------------------------------------ vocabularies
@dataclass(frozen=True)
class EnvVocabulary:
    """The goal language of one env family.

    ``goals`` lists every valid goal, canonical form (lowercase, no final full stop);
    ``rules`` are the GBNF rules that define ``goal`` (the same set, as a grammar).
    """

    family: str
    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    goals: frozenset[str]
    rules: str


def gbnf_literal(text: str) -> str:
    """A GBNF string literal (JSON's escapes are a subset GBNF reads the same)."""
    return json.dumps(text, ensure_ascii=True)


def _alts(words: tuple[str, ...] | list[str]) -> str:
    return " | ".join(gbnf_literal(w) for w in words)


ENV_VOCABULARY: dict[str, EnvVocabulary] = {
    "babyai": EnvVocabulary(
        family="babyai",
        verbs=babyai.GOAL_VERBS,
        objects=(*babyai.THINGS, *babyai.COLORS),
        goals=babyai.GOALS,
        rules="\n".join(
            (
                'goal ::= "go to the " thing | "pick up the " portable | "open the " door'
                ' | "put the " portable " next to the " thing',
                "thing ::= portable | door",
                f'portable ::= (color " ")? ({_alts(babyai.PORTABLE)})',
                'door ::= (color " ")? "door"',
                f"color ::= {_alts(babyai.COLORS)}",
            )
        ),
    ),
    "crafter": EnvVocabulary(
        family="crafter",
        verbs=crafter.GOAL_VERBS,
        objects=crafter.GOAL_OBJECTS,
        goals=frozenset(crafter.GOALS),
        rules=f"goal ::= {_alts(crafter.GOALS)}",
    ),
    "nethack": EnvVocabulary(
        family="nethack",
        verbs=nethack.GOAL_VERBS,
        objects=nethack.GOAL_OBJECTS,
        goals=frozenset(nethack.GOALS),
        rules=f"goal ::= {_alts(nethack.GOALS)}",
    ),
}

# Unknown env (or minedojo, whose vocabulary is open): short free strings.
FREE_GOAL_RULES = "goal ::= [-a-zA-Z0-9 ,.']{1,60}"

# ---------------------------------------------------------------------------- normalisation
_ARTICLES = re.compile(r"\b(?:a|an|some)\b")
_CRAFTER_VERBS = {
    "chop": "collect",
    "mine": "collect",
    "gather": "collect",
    "get": "collect",
    "harvest": "collect",
    "pick": "collect",
    "craft": "make",
    "build": "make",
    "defeat": "attack",
    "kill": "attack",
    "fight": "attack",
    "hit": "attack",
    "plant": "place",
}
_CRAFTER_ALIASES = {
    "collect tree": "collect wood",
    "collect water": "drink water",
    "collect drink": "drink water",
    "drink": "drink water",
    "place table": "place crafting table",
    "make table": "place crafting table",
    "make crafting table": "place crafting table",
    "place sapling": "place plant",
    "collect plant": "collect sapling",
    "make furnace": "place furnace",
    "collect grass": "collect sapling",
}
_NETHACK_ALIASES = {
    "descend": "descend the stairs",
    "go down the stairs": "descend the stairs",
    "go downstairs": "descend the stairs",
    "descend the staircase": "descend the stairs",
    "find the staircase": "find the stairs",
    "collect the gold": "pick up the gold",
    "pick up gold": "pick up the gold",
    "explore": "explore the level",
    "kill the monsters": "kill the monster",
    "search": "search for hidden passages",
}


def clean_goal(text: str) -> str:
    """Lowercase, without quotes, bullets, final punctuation or doubled spaces."""
    t = text.strip().strip("\"'`").strip()
    t = re.sub(r"^(?:[-*•]|\d+[.)])\s+", "", t)
    t = t.strip().rstrip(".!;:,").strip().strip("\"'`").lower()
    return re.sub(r"\s+", " ", t)


def normalize_goal(env: str | None, text: str) -> str | None:
    """The canonical form of a goal for ``env``, or None if it is not in the env's vocabulary.

    Forgiving about form (case, articles, common synonyms such as "chop tree" for "collect
    wood"), strict about content. With ``env`` None (or an env without a vocabulary) any
    non-empty string of at most 200 characters is accepted, cleaned.
    """
    t = clean_goal(text)
    vocab = ENV_VOCABULARY.get(env or "")
    if vocab is None:
        return t if 0 < len(t) <= 200 else None
    if env == "babyai":
        t = _ARTICLES.sub("the", t).replace("gray", "grey")
        t = re.sub(r"^(go to|pick up|open|put) (?!the )", r"\1 the ", t)
        t = re.sub(r" next to (?!the )", " next to the ", t)
    elif env == "crafter":
        t = re.sub(r"\s+", " ", _ARTICLES.sub("", t.replace(" the ", " "))).strip()
        t = t.replace("wooden", "wood").replace(" up ", " ")
        verb, _, rest = t.partition(" ")
        if rest.endswith("s") and not rest.endswith("ss"):  # plurals: "collect diamonds"
            rest = rest[:-1]
        t = " ".join(filter(None, (_CRAFTER_VERBS.get(verb, verb), rest)))
        t = _CRAFTER_ALIASES.get(t, t)
    elif env == "nethack":
        t = _ARTICLES.sub("the", t)
        t = _NETHACK_ALIASES.get(t, t)
    return t if t in vocab.goals else None


# --------------------------------------------------------------------------------- grammars
PREFERENCE_GRAMMAR = 'root ::= "A" | "B" | "tie"'
HELPFUL_GRAMMAR = 'root ::= "yes" | "no"'


@lru_cache(maxsize=64)
def goals_grammar(env: str | None, max_goals: int) -> str:
    """A JSON list of 1..``max_goals`` goal strings, each in the env's goal language."""
    if max_goals < 1:
        raise ValueError("max_goals must be at least 1")
    vocab = ENV_VOCABULARY.get(env or "")
    rules = vocab.rules if vocab is not None else FREE_GOAL_RULES
    items = "item"
    for _ in range(max_goals - 1):  # nested optionals: no {m,n}, works with any llama.cpp
        items = f'item ("," " "? {items})?' if items != "item" else 'item ("," " "? item)?'
    return "\n".join((f'root ::= "[" {items} "]"', 'item ::= "\\"" goal "\\""', rules))


def normalize_signature(signature: str) -> str:
    """The signature as a ``def`` line ending with a colon."""
    sig = signature.strip().rstrip(":").rstrip()
    if not sig.startswith("def "):
        sig = "def " + sig
    return sig + ":"


@lru_cache(maxsize=64)
def reward_code_grammar(signature: str) -> str:
    """Forces the answer to start with the requested ``def ...:`` line; the body is free."""
    return "\n".join(
        (
            f"root ::= {gbnf_literal(normalize_signature(signature) + chr(10))} body",
            "body ::= [\\t\\n\\r\\x20-\\x7E]*",
        )
    )


def grammar_for(task: str, request: object) -> str | None:
    """The grammar for one request of ``task``; None where nothing is generated."""
    if task == "preference":
        return PREFERENCE_GRAMMAR
    if task == "helpful":
        return HELPFUL_GRAMMAR
    if task == "goals":
        return goals_grammar(getattr(request, "env", None), getattr(request, "max_goals", 3))
    if task == "reward_code":
        return reward_code_grammar(request.signature)  # type: ignore[attr-defined]
    return None
