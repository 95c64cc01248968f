"""Ranked search over the tool catalogue (the gateway's `switchboard_search_tools`).

SQLite's FTS5 (in Python's standard library: no new dependency, BM25 ranking in C)
indexes, per tool, five weighted fields: the server's own name for it split into words
(and its title); the related words of those name words (`thesaurus.GROUPS`: "folder" for
`create_directory`); its description; its parameters' names and descriptions; and its
server's name and description.  The Porter stemmer folds "listing" onto "list"; query
words of four letters or more also match as prefixes ("repo" finds "repository").  A
request loses the words that name an item rather than a tool (ids, quoted text, file
names).  BM25 picks the candidates; a second look orders them by which field says each
request word (the name most), and one server's look-alikes give way a little to other
servers' matches.  The index is built once per catalogue (the registry drops it when it rebuilds) and is only
read by queries.  Ranking runs over the whole catalogue; the caller's set of usable
tools filters the ranked list afterwards, so one index serves every user.
"""

from __future__ import annotations

import bisect
import functools
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .models import ToolInfo
from .thesaurus import GROUPS

__all__ = ["SearchHit", "ToolIndex", "summary_of"]

SUMMARY_CHARS = 160
_RERANK = 40  # how many BM25 candidates the second look reorders
# Column weights for bm25(): name, related words, description, parameters, server.
# Parameter text is weighed low: it often names other tools ("the id, as returned by
# search_tickets"); the server's words only break ties between servers.
_WEIGHTS = (5.0, 2.0, 1.0, 0.2, 0.5)
_FIELD_SCORES = (1.0, 0.7, 0.4, 0.4)  # a query word found in: name, related words, description, server
_BM25_SHARE = 1.0  # the best BM25 candidate gets this much on top
_SAME_SERVER = 0.05  # less per result already listed from the same server
_PREFIX_FROM = 4  # shorter words match whole only ("add" must not find "address")
_WORD = re.compile(r"[A-Za-z0-9]+")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_QUOTED = re.compile(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])|\"[^\"]*\"")
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:[ap]\.?m\b\.?)|\b\d{1,2}:\d{2}\b", re.IGNORECASE)  # 5pm, 9 a.m., 14:00
_EMAIL = re.compile(r"\S+@\S+")
_FILENAME = re.compile(r"(?<![\w.])[\w-]+\.([A-Za-z][A-Za-z0-9]{0,4})\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
# Words that say nothing about which tool is meant; dropped from queries only.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "tell",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "this",
        "to",
        "up",
        "us",
        "want",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "everything",
        "anything",
        "something",
    ]
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    server: str
    summary: str


def summary_of(description: str) -> str:
    """The first sentence of a description, at most 160 characters (cut at a word)."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    sentence = _SENTENCE_END.split(paragraph, 1)[0]
    if len(sentence) <= SUMMARY_CHARS:
        return sentence
    cut = sentence[: SUMMARY_CHARS + 1].rsplit(" ", 1)[0] if " " in sentence[:SUMMARY_CHARS] else sentence
    return cut[: SUMMARY_CHARS - 1].rstrip(" ,;:-") + "…"


def _words(text: str) -> str:
    """`git_diff-staged` / `getCurrentTime` -> "git diff staged" / "get Current Time"."""
    return " ".join(_WORD.findall(_CAMEL.sub(" ", text)))


@functools.lru_cache(maxsize=16384)  # a catalogue says the same few thousand words again and again
def _stem(word: str) -> str:
    """A crude plural/tense fold, enough to compare query words with name words."""
    for suffix, repl in (
        ("ies", "y"),
        ("ys", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("e", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    return word


_RELATED: dict[str, frozenset[str]] = {}
for _group in GROUPS:
    for _word in _group:
        _RELATED[_stem(_word)] = _RELATED.get(_stem(_word), frozenset()) | _group


def _related(words: Iterable[str]) -> set[str]:
    """The thesaurus words related to these words, without the words themselves."""
    stems = {_stem(w) for w in words}
    return {r for s in stems for r in _RELATED.get(s, ()) if _stem(r) not in stems}


def _query_words(query: str, known: Callable[[str], bool]) -> list[str]:
    """The words of a request that can say which tool is meant.  Quoted text, e-mail
    addresses and a file's own name ("notes" in "notes.txt") say which item, not which
    tool, so they go (a file name leaves "file" and its extension, a time of day "time");
    so do ids, numbers and names ("INV-22", "abc123", a capitalised word inside the
    sentence) unless the catalogue itself uses the word (`known`)."""
    text = _QUOTED.sub(" ", query)
    text = _EMAIL.sub(" ", text)
    text = _CLOCK.sub(" time ", text)
    text = _FILENAME.sub(lambda m: f" file {m.group(1)} ", text)
    words: list[str] = []
    for i, raw in enumerate(_TOKEN.findall(text)):
        parts = [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", raw)) if len(w) > 1]
        if any(c.isdigit() for c in raw) or (i > 0 and raw[:1].isupper() and not raw.isupper()):
            parts = [w for w in parts if known(w)]
        words.extend(parts)
    return words


def _parameters(schema: dict[str, Any]) -> str:
    parts: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            parts.append(_words(str(name)))
            if isinstance(spec, dict) and isinstance(spec.get("description"), str):
                parts.append(spec["description"])
    return " ".join(parts)


class ToolIndex:
    def __init__(self, tools: Iterable[ToolInfo], servers: Mapping[str, str] | None = None) -> None:
        """`servers`: each server's description, searched with a low weight."""
        self._tools = {tool.qualified_name: tool for tool in tools}
        self._order = {name: i for i, name in enumerate(self._tools)}
        servers = servers or {}
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5(name, related, description, parameters, server, tokenize='porter unicode61')"
        )
        rows = []
        # Per tool, the stems of each field, for the second look at BM25's candidates.
        self._fields: dict[str, tuple[set[str], ...]] = {}
        server_words = {s: f"{_words(s)} {_words(d)}".lower().split() for s, d in servers.items()}
        for tool in self._tools.values():
            name_words = f"{_words(tool.name)} {_words(tool.title or '')}".lower().split()
            related = _related(name_words)
            home = server_words.get(tool.server) or _words(tool.server).lower().split()
            home = [*home, *_related(_words(tool.server).lower().split())]
            description = _words(tool.description).lower().split()
            description += _related(_words(summary_of(tool.description)).lower().split())
            self._fields[tool.qualified_name] = tuple(
                {_stem(w) for w in words} for words in (name_words, related, description, home)
            )
            rows.append(
                (
                    self._order[tool.qualified_name],
                    " ".join(name_words),
                    " ".join(sorted(related)),
                    tool.description,
                    _parameters(tool.input_schema),
                    " ".join(home),
                )
            )
        self._db.executemany(
            "INSERT INTO tools(rowid, name, related, description, parameters, server) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
        self._vocabulary = sorted(set().union(*(f for fields in self._fields.values() for f in fields)))
        self._names = list(self._tools)
        self._summaries = {name: summary_of(tool.description) for name, tool in self._tools.items()}

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def close(self) -> None:
        self._db.close()

    def hit(self, name: str) -> SearchHit:
        tool = self._tools[name]
        return SearchHit(tool.qualified_name, tool.server, self._summaries[name])

    def _known(self, word: str) -> bool:
        stem = _stem(word)
        i = bisect.bisect_left(self._vocabulary, stem)
        return i < len(self._vocabulary) and self._vocabulary[i] == stem

    def _forms(self, word: str) -> frozenset[str]:
        """The index's stems a query word stands for: its own, and those it starts (four letters or more)."""
        stem = _stem(word)
        if len(word) < _PREFIX_FROM:
            return frozenset((stem,))
        start = bisect.bisect_left(self._vocabulary, stem)
        end = bisect.bisect_left(self._vocabulary, stem + "\x7f", start)
        return frozenset((stem, *self._vocabulary[start : min(end, start + 50)]))

    def _score(self, name: str, forms: list[frozenset[str]]) -> float:
        """How well the tool's fields say each query word: its name most, then a related
        word of its name, its description, its server."""
        fields = self._fields[name]
        score = 0.0
        for word in forms:
            for field, weight in zip(fields, _FIELD_SCORES):
                if not word.isdisjoint(field):
                    score += weight
                    break
        return score

    def search(self, query: str, allowed: set[str], *, server: str | None = None, limit: int = 8) -> list[SearchHit]:
        """The best `limit` tools for `query` among `allowed` (qualified names), best first."""
        terms = _query_words(query, self._known)
        wanted = list(dict.fromkeys(w for w in terms if w not in _STOP)) or terms
        if not wanted or limit <= 0:
            return []
        match = " OR ".join(f'"{w}"*' if len(w) >= _PREFIX_FROM else f'"{w}"' for w in wanted)
        rows = self._db.execute(
            "SELECT rowid, bm25(tools, ?, ?, ?, ?, ?) FROM tools WHERE tools MATCH ? ORDER BY 2", (*_WEIGHTS, match)
        )
        forms = [self._forms(w) for w in wanted]
        candidates: list[tuple[str, float]] = []
        try:
            for rowid, bm25 in rows:
                name = self._names[rowid]
                if name in allowed and (server is None or self._tools[name].server == server):
                    candidates.append((name, bm25))
                    if len(candidates) == max(limit, _RERANK):
                        break
        finally:
            rows.close()
        if not candidates:
            return []
        # BM25 finds the candidates; among them, a tool whose own name says more of what was
        # asked comes first ("give ticket 881 to Maria": assign_ticket, not the ticket tool
        # with the shortest description).  bm25() is negative, best lowest.
        best = candidates[0][1] or -1.0
        scored = sorted(
            (
                (self._score(name, forms) + _BM25_SHARE * bm25 / best, -i, name)
                for i, (name, bm25) in enumerate(candidates)
            ),
            reverse=True,
        )
        # Then a server's tools give way a little for each one already listed, so one server's
        # look-alikes (ten "folder" tools) do not fill the list while another has a close match.
        queues: dict[str, list[tuple[float, str]]] = {}
        for score, _, name in scored:
            queues.setdefault(self._tools[name].server, []).append((score, name))
        taken = dict.fromkeys(queues, 0)
        picked: list[str] = []
        while len(picked) < limit and any(taken[s] < len(q) for s, q in queues.items()):
            server = max(
                (s for s, q in queues.items() if taken[s] < len(q)),
                key=lambda s: queues[s][taken[s]][0] - _SAME_SERVER * taken[s],
            )
            picked.append(queues[server][taken[server]][1])
            taken[server] += 1
        return [self.hit(name) for name in picked]
