"""GBNF grammars that constrain every structured answer, and the env vocabularies behind them.

Why grammars: the embedded 135M/270M models are at chance on A/B preferences and write
nonsense goals when left free (``bench/results/labeler_quality.md``), but under a grammar every
answer parses and every goal is made of the environment's own verbs and objects. Bigger models
lose nothing by it. llama.cpp takes these strings as they are (``LlamaGrammar.from_string``);
backends without grammar support get the same vocabulary in the prompt and in the parser.

:data:`ENV_VOCABULARY` gathers the goal language of each env family: the grammar, the
parser's validation (:func:`normalize_goal`) and the oracle all read it, so an LLM, the parser
and the oracle can never disagree about what a valid goal is. The words themselves are written
once, in each family's ``env_registry.<family>.vocabulary`` (plain data, so that importing the
labeler pulls in neither minigrid nor crafter); this module writes them as grammars. The unit
tests check them against the envs.

This module also holds a small GBNF interpreter (:class:`Gbnf`): it checks that a grammar
accepts a string and draws deterministic strings from it. Tests use it without llama.cpp, and
the fake generator uses it to answer "under a grammar" the way a constrained LLM would.
"""

from __future__ import annotations

import json
import random
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
    "chop": "collect", "mine": "collect", "gather": "collect", "get": "collect",
    "harvest": "collect", "pick": "collect", "craft": "make", "build": "make",
    "defeat": "attack", "kill": "attack", "fight": "attack", "hit": "attack", "plant": "place",
}  # fmt: skip
_CRAFTER_ALIASES = {
    "collect tree": "collect wood", "collect water": "drink water", "collect drink": "drink water",
    "drink": "drink water", "place table": "place crafting table",
    "make table": "place crafting table", "make crafting table": "place crafting table",
    "place sapling": "place plant", "collect plant": "collect sapling",
    "make furnace": "place furnace", "collect grass": "collect sapling",
}  # fmt: skip
_NETHACK_ALIASES = {
    "descend": "descend the stairs", "go down the stairs": "descend the stairs",
    "go downstairs": "descend the stairs", "descend the staircase": "descend the stairs",
    "find the staircase": "find the stairs", "collect the gold": "pick up the gold",
    "pick up gold": "pick up the gold", "explore": "explore the level",
    "kill the monsters": "kill the monster", "search": "search for hidden passages",
}  # fmt: skip


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
    return "\n".join((
        f'root ::= {gbnf_literal(normalize_signature(signature) + chr(10))} body',
        "body ::= [\\t\\n\\r\\x20-\\x7E]*",
    ))  # fmt: skip


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


# ------------------------------------------------------------------ a small GBNF interpreter
class GbnfError(ValueError):
    """The grammar text is not GBNF this interpreter understands."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
_NAME = re.compile(r"[a-zA-Z0-9-]+")


class Gbnf:
    """Parses GBNF (literals, classes, groups, ``| * + ? {m,n}``) to check and sample strings.

    A subset of llama.cpp's grammar language, enough for the grammars of this module.
    """

    def __init__(self, text: str, root: str = "root"):
        self.rules: dict[str, tuple] = {}
        self._text = text
        body: list[str] = []
        name = None
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            m = re.match(r"\s*([a-zA-Z0-9-]+)\s*::=(.*)$", line)
            if m:
                if name is not None:
                    self.rules[name] = self._parse(" ".join(body))
                name, body = m.group(1), [m.group(2)]
            elif line.strip():
                if name is None:
                    raise GbnfError(f"text before the first rule: {line!r}")
                body.append(line)
        if name is not None:
            self.rules[name] = self._parse(" ".join(body))
        if root not in self.rules:
            raise GbnfError(f"no {root!r} rule")
        for node in self.rules.values():
            self._check_refs(node)
        self.root = root

    def _check_refs(self, node: tuple) -> None:
        if node[0] == "ref" and node[1] not in self.rules:
            raise GbnfError(f"undefined rule {node[1]!r}")
        children = node[1] if node[0] in ("alt", "seq") else [node[1]] if node[0] == "rep" else []
        for child in children:
            self._check_refs(child)

    # -- parsing
    def _parse(self, s: str) -> tuple:
        self._s, self._i = s, 0
        node = self._alt()
        self._ws()
        if self._i != len(s):
            raise GbnfError(f"unexpected {s[self._i : self._i + 20]!r}")
        return node

    def _ws(self) -> None:
        while self._i < len(self._s) and self._s[self._i].isspace():
            self._i += 1

    def _peek(self) -> str:
        self._ws()
        return self._s[self._i] if self._i < len(self._s) else ""

    def _alt(self) -> tuple:
        seqs = [self._seq()]
        while self._peek() == "|":
            self._i += 1
            seqs.append(self._seq())
        return ("alt", seqs) if len(seqs) > 1 else seqs[0]

    def _seq(self) -> tuple:
        items = []
        while self._peek() not in ("", "|", ")"):
            items.append(self._postfix())
        return ("seq", items)

    def _postfix(self) -> tuple:
        node = self._primary()
        while self._i < len(self._s) and self._s[self._i] in "*+?{":
            op = self._s[self._i]
            self._i += 1
            if op == "{":
                end = self._s.index("}", self._i)
                lo, comma, hi = self._s[self._i : end].partition(",")
                if comma:
                    bounds = (int(lo), int(hi) if hi.strip() else None)
                else:
                    bounds = (int(lo), int(lo))
                self._i = end + 1
            else:
                bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op]
            node = ("rep", node, *bounds)
        return node

    def _char(self) -> str:
        c = self._s[self._i]
        self._i += 1
        if c != "\\":
            return c
        e = self._s[self._i]
        self._i += 1
        if e in "xu":
            n = 2 if e == "x" else 4
            code = self._s[self._i : self._i + n]
            self._i += n
            return chr(int(code, 16))
        if e not in _ESCAPES:
            raise GbnfError(f"unknown escape \\{e}")
        return _ESCAPES[e]

    def _primary(self) -> tuple:
        c = self._peek()
        if c == '"':
            self._i += 1
            out = []
            while self._s[self._i] != '"':
                out.append(self._char())
            self._i += 1
            return ("lit", "".join(out))
        if c == "[":
            self._i += 1
            negated = self._s[self._i] == "^"
            self._i += negated
            ranges = []
            while self._s[self._i] != "]":
                lo = self._char()
                hi = lo
                if self._s[self._i] == "-" and self._s[self._i + 1] != "]":
                    self._i += 1
                    hi = self._char()
                ranges.append((lo, hi))
            self._i += 1
            return ("cls", negated, tuple(ranges))
        if c == "(":
            self._i += 1
            node = self._alt()
            if self._peek() != ")":
                raise GbnfError("unclosed group")
            self._i += 1
            return node
        m = _NAME.match(self._s, self._i)
        if not m:
            raise GbnfError(f"unexpected {self._s[self._i : self._i + 20]!r}")
        self._i = m.end()
        return ("ref", m.group())

    # -- matching
    def matches(self, text: str) -> bool:
        """Whether the grammar generates exactly ``text``."""
        return len(text) in self._ends(self.rules[self.root], text, 0, 0)

    def _ends(self, node: tuple, t: str, pos: int, depth: int) -> set[int]:
        if depth > 200:
            raise GbnfError("grammar nests too deeply (left recursion?)")
        kind = node[0]
        if kind == "lit":
            return {pos + len(node[1])} if t.startswith(node[1], pos) else set()
        if kind == "cls":
            if pos < len(t) and _in_class(t[pos], node[1], node[2]):
                return {pos + 1}
            return set()
        if kind == "ref":
            return self._ends(self.rules[node[1]], t, pos, depth + 1)
        if kind == "alt":
            return set().union(*(self._ends(n, t, pos, depth + 1) for n in node[1]))
        if kind == "seq":
            cur = {pos}
            for item in node[1]:
                cur = set().union(*(self._ends(item, t, p, depth + 1) for p in cur)) if cur else cur
            return cur
        _, item, lo, hi = node  # rep
        out = {pos} if lo == 0 else set()
        frontier, seen, n = {pos}, {pos}, 0
        while frontier and (hi is None or n < hi):
            n += 1
            nxt = set().union(*(self._ends(item, t, p, depth + 1) for p in frontier))
            if n >= lo:
                out |= nxt
            frontier = nxt - seen if n >= lo else nxt
            seen |= nxt
        return out

    # -- sampling
    def sample(self, seed: int | str = 0) -> str:
        """A deterministic string of the grammar (repetitions kept short)."""
        return self._gen(self.rules[self.root], random.Random(str(seed)), 0)

    def _gen(self, node: tuple, rng: random.Random, depth: int) -> str:
        if depth > 200:
            raise GbnfError("grammar nests too deeply to sample")
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "cls":
            if node[1]:
                pool = [c for c in "abcdefghijklmnopqrstuvwxyz " if not _in_class(c, True, node[2])]
                return rng.choice(pool) if pool else ""
            lo, hi = rng.choice(node[2])
            return chr(rng.randint(ord(lo), ord(hi)))
        if kind == "ref":
            return self._gen(self.rules[node[1]], rng, depth + 1)
        if kind == "alt":
            return self._gen(rng.choice(node[1]), rng, depth + 1)
        if kind == "seq":
            return "".join(self._gen(n, rng, depth + 1) for n in node[1])
        _, item, lo, hi = node
        count = rng.randint(lo, lo + 2 if hi is None else min(hi, lo + 2))
        return "".join(self._gen(item, rng, depth + 1) for _ in range(count))


def _in_class(c: str, negated: bool, ranges: tuple[tuple[str, str], ...]) -> bool:
    hit = any(lo <= c <= hi for lo, hi in ranges)
    return hit != negated


@lru_cache(maxsize=128)
def compile_gbnf(text: str) -> Gbnf:
    """Parsed grammars are cached: the same few grammars come back on every request."""
    return Gbnf(text)
