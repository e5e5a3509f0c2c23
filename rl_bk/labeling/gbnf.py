"""A small GBNF interpreter: checks that a grammar accepts a string (:meth:`Gbnf.matches`), and
draws strings from it (:meth:`Gbnf.sample`). The grammars of :mod:`rl_bk.labeling.grammars`
are llama.cpp's language, but neither the tests nor the fake backend, which answers "under a
grammar" as a constrained LLM would, should need llama.cpp to use them. It reads the subset of
GBNF those grammars use (literals, classes, groups, ``| * + ? {m,n}``).
"""

from __future__ import annotations

import random
import re
from functools import lru_cache


class GbnfError(ValueError):
    """The grammar text is not GBNF this interpreter understands."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
_NAME = re.compile(r"[a-zA-Z0-9-]+")


class Gbnf:
    """Parses GBNF (literals, classes, groups, ``| * + ? {m,n}``) to check and sample strings.

    A subset of llama.cpp's grammar language, enough for :mod:`rl_bk.labeling.grammars`.
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
