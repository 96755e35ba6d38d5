"""The statute structure graph (SPEC §6): one node per unit, ``contains`` and ``cites`` edges.

Nodes are the acts (node id = act id, ``BGB``), the divisions above the articles where an act has
them (:class:`~lexir.types.Division`: ``BGB::buch:2/abschnitt:8/titel:27``, levels ``buch``,
``teil``, ``abschnitt``, ``titel``, ``untertitel``, ``kapitel``, ... ``gliederung``) and every unit
of their provision trees (node id = the unit's path id, ``BGB::823/abs:1/satz:2``). Edges:

``contains``
    from a unit to each of its children, in document order (act -> Buch -> Abschnitt -> Titel ->
    article -> Absatz -> ...; an article in no division hangs under its act). A division's
    ``words`` are its articles' words.
``cites``
    from a unit to each unit its *own* text references (the text outside its children, so that a
    reference printed in a Satz is one edge from that Satz, not one more from its Absatz and
    article). References are found by the German citation finder with ``default_act`` = the
    unit's act, so ``§ 5 Abs. 2`` inside the BGB links within the BGB. A reference that names only
    a path (``Absatz 1 Satz 2``, ``Satz 1``) is taken relative to the citing unit's article. Each
    reference resolves to the deepest unit that exists: ``§ 2 Nr. 1`` finds ``§ 2 Abs. 1 Satz 1
    Nr. 1`` when that is the only Nummer 1 of § 2 (cited levels must appear in the unit's path in
    order; levels the citation skips may be filled in); when the cited Absatz (etc.) does not
    exist or is ambiguous, the edge goes to the deepest cited ancestor that does (the article,
    and failing that the act node). A reference whose act was *not* written (the citing unit's
    act by default) to an article that act lacks gets no edge: the default was a wrong guess
    (typically an act designation the finder did not recognise, ``§ 149 des Sechsten Buches
    Sozialgesetzbuch``). References naming an act the finder does not know (``act=None``) get no
    edge. Self-loops and duplicate edges are dropped.

Adjacency is stored as CSR arrays (``int32``) over interned node numbers, for ``contains`` (built
from the parent array), ``cites`` and its transpose ``cited_by``; a one-hop lookup is a slice plus
id look-ups, about a microsecond (``benchmarks/bench_graph.py``).

Persistence: :meth:`StatuteGraph.save` writes ``graph.npz`` (arrays) and ``graph.json`` (node ids,
level names, statistics) into a folder; :meth:`StatuteGraph.load` reads them back. Exports:
:meth:`to_jsonl` (one JSON object per node, then per edge) and :meth:`to_graphml`.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from lexir.arrays import DAMAGED, load_members, refuse_outside
from lexir.io.markers import read_marker, write_marker
from lexir.structure.packed import available_cpus, gc_paused
from lexir.types import ID_SEP, PATH_SEP, Act, Provision

FORMAT_VERSION = 1
EDGE_KINDS = ("contains", "cites")
NEIGHBOUR_KINDS = ("contains", "parent", "cites", "cited_by")

# A citation finder: text, default act -> citations (objects with .act, .article, .path).
Finder = Callable[[str, str], list]


def own_text(unit: Provision) -> str:
    """The text of ``unit`` outside its children (markers, list intros, trailing text).

    Children's texts are located in order in the unit's text and cut out; a child whose text
    cannot be found leaves the parent's text unchanged there (so nothing is silently lost).
    """
    if not unit.children:
        return unit.text
    text, pos, parts = unit.text, 0, []
    for child in unit.children:
        if not child.text:
            continue
        at = text.find(child.text, pos)
        if at < 0:
            continue
        parts.append(text[pos:at])
        pos = at + len(child.text)
    parts.append(text[pos:])
    return "\n".join(p.strip() for p in parts if p.strip())


def _csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of edges ``src -> dst``; a stable sort keeps each row's input order."""
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst[order].astype(np.int32)


class StatuteGraph:
    """Units of acts as nodes; ``contains`` / ``cites`` adjacency in CSR form."""

    def __init__(
        self,
        ids: Sequence[str],
        level_names: Sequence[str],
        levels: np.ndarray,
        parent: np.ndarray,
        words: np.ndarray,
        cites_src: np.ndarray,
        cites_dst: np.ndarray,
        info: dict | None = None,
    ) -> None:
        self.ids: list[str] = list(ids)
        self.index: dict[str, int] = {node: i for i, node in enumerate(self.ids)}
        self.level_names: list[str] = list(level_names)
        self.levels = np.asarray(levels, dtype=np.int8)
        self.parent = np.asarray(parent, dtype=np.int32)
        self.words = np.asarray(words, dtype=np.int32)
        self.cites_src = np.asarray(cites_src, dtype=np.int32)
        self.cites_dst = np.asarray(cites_dst, dtype=np.int32)
        self.info: dict = dict(info or {})
        n = len(self.ids)
        has_parent = self.parent >= 0
        child = np.nonzero(has_parent)[0].astype(np.int32)
        self._contains = _csr(self.parent[has_parent], child, n)
        self._cites = _csr(self.cites_src, self.cites_dst, n)
        self._cited_by = _csr(self.cites_dst, self.cites_src, n)

    # -- lookups ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, node: object) -> bool:
        return node in self.index

    def level(self, node: str | int) -> str:
        i = node if isinstance(node, int | np.integer) else self.index[node]
        return self.level_names[self.levels[i]]

    def parent_of(self, node: str) -> str | None:
        p = int(self.parent[self.index[node]])
        return self.ids[p] if p >= 0 else None

    def neighbour_indices(self, i: int, kind: str | None = None) -> np.ndarray:
        """Node numbers one hop from node number ``i`` (see :meth:`neighbours`)."""
        if kind == "contains":
            indptr, indices = self._contains
        elif kind == "cites":
            indptr, indices = self._cites
        elif kind == "cited_by":
            indptr, indices = self._cited_by
        elif kind == "parent":
            return self.parent[i:i + 1] if self.parent[i] >= 0 else self.parent[:0]
        elif kind is None:
            parts = [self.neighbour_indices(i, k) for k in ("parent", "contains", "cites", "cited_by")]
            merged = np.concatenate(parts)
            _, first = np.unique(merged, return_index=True)
            return merged[np.sort(first)]
        else:
            raise ValueError(f"unknown neighbour kind {kind!r}; valid: {', '.join(NEIGHBOUR_KINDS)} or None")
        return indices[indptr[i]:indptr[i + 1]]

    def neighbours(self, node: str, kind: str | None = None) -> list[str]:
        """Ids one hop from ``node``: its children (``contains``), ``parent``, the units it
        ``cites``, the units citing it (``cited_by``), or all of these (``None``, deduplicated)."""
        ids = self.ids
        i = self.index[node]
        if kind is None:
            seen: dict[int, None] = {}
            for k in ("parent", "contains", "cites", "cited_by"):
                seen.update(dict.fromkeys(self.neighbour_indices(i, k).tolist()))
            return [ids[j] for j in seen]
        return [ids[j] for j in self.neighbour_indices(i, kind).tolist()]

    def cites_within(self, node: str) -> list[str]:
        """What ``node``'s whole subtree cites (the references printed anywhere in its text),
        in document order, deduplicated, leaving out targets inside the subtree itself."""
        start = self.index[node]
        inside = set(self._subtree(start))
        seen: dict[int, None] = {}
        indptr, indices = self._cites
        for i in self._subtree(start):
            for j in indices[indptr[i]:indptr[i + 1]].tolist():
                if j not in inside:
                    seen.setdefault(j, None)
        return [self.ids[j] for j in seen]

    def _subtree(self, i: int) -> Iterator[int]:
        indptr, indices = self._contains
        stack = [i]
        while stack:
            j = stack.pop()
            yield j
            stack.extend(reversed(indices[indptr[j]:indptr[j + 1]].tolist()))

    # -- statistics -------------------------------------------------------------------------

    def stats(self) -> dict[str, object]:
        counts = np.bincount(self.levels, minlength=len(self.level_names))
        return {
            "nodes": len(self.ids),
            "nodes_by_level": {name: int(c) for name, c in zip(self.level_names, counts, strict=True) if c},
            "edges": {"contains": int((self.parent >= 0).sum()), "cites": int(len(self.cites_src))},
            "cites_cross_act": int(self._cross_act().sum()),
            **{k: v for k, v in self.info.items() if k.startswith("cites_") or k.startswith("build_")},
        }

    def _cross_act(self) -> np.ndarray:
        act = self._act_numbers()
        return act[self.cites_src] != act[self.cites_dst]

    def _act_numbers(self) -> np.ndarray:
        """For each node, the node number of its act (roots are their own act)."""
        act = np.arange(len(self.ids), dtype=np.int32)
        parent = self.parent
        has = parent >= 0
        act[has] = parent[has]
        # Depth is small (<= 16 with divisions): follow parents until every node points at a root.
        for _ in range(32):
            nxt = np.where(parent[act] >= 0, parent[act], act)
            if np.array_equal(nxt, act):
                break
            act = nxt
        return act

    # -- export -----------------------------------------------------------------------------

    def edges(self, kind: str) -> Iterator[tuple[str, str]]:
        ids = self.ids
        if kind == "contains":
            for child in np.nonzero(self.parent >= 0)[0].tolist():
                yield ids[int(self.parent[child])], ids[child]
        elif kind == "cites":
            for s, d in zip(self.cites_src.tolist(), self.cites_dst.tolist(), strict=True):
                yield ids[s], ids[d]
        else:
            raise ValueError(f"unknown edge kind {kind!r}; valid: {', '.join(EDGE_KINDS)}")

    def to_jsonl(self, path: str | Path) -> Path:
        """One JSON object a line: every node (``{"type": "node", "id", "level", "parent",
        "words"}``) then every edge (``{"type": "edge", "kind", "source", "target"}``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        ids, names = self.ids, self.level_names
        with path.open("w", encoding="utf-8") as f:
            for i, (lv, p, w) in enumerate(zip(self.levels.tolist(), self.parent.tolist(), self.words.tolist(),
                                             strict=True)):
                row = {"type": "node", "id": ids[i], "level": names[lv], "parent": ids[p] if p >= 0 else None,
                       "words": w}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            for kind in EDGE_KINDS:
                for s, d in self.edges(kind):
                    f.write(json.dumps({"type": "edge", "kind": kind, "source": s, "target": d},
                                       ensure_ascii=False) + "\n")
        return path

    def to_graphml(self, path: str | Path) -> Path:
        """GraphML (directed), node attributes ``level`` and ``words``, edge attribute ``kind``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        ids, names = self.ids, self.level_names
        with path.open("w", encoding="utf-8") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
                    '  <key id="level" for="node" attr.name="level" attr.type="string"/>\n'
                    '  <key id="words" for="node" attr.name="words" attr.type="int"/>\n'
                    '  <key id="kind" for="edge" attr.name="kind" attr.type="string"/>\n'
                    '  <graph id="statutes" edgedefault="directed">\n')
            for i, (lv, w) in enumerate(zip(self.levels.tolist(), self.words.tolist(), strict=True)):
                f.write(f'    <node id={quoteattr(ids[i])}><data key="level">{escape(names[lv])}</data>'
                        f'<data key="words">{w}</data></node>\n')
            for kind in EDGE_KINDS:
                for s, d in self.edges(kind):
                    f.write(f'    <edge source={quoteattr(s)} target={quoteattr(d)}>'
                            f'<data key="kind">{kind}</data></edge>\n')
            f.write("  </graph>\n</graphml>\n")
        return path

    # -- persistence ------------------------------------------------------------------------

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            folder / "graph.npz", levels=self.levels, parent=self.parent, words=self.words,
            cites_src=self.cites_src, cites_dst=self.cites_dst,
        )
        write_marker(folder / "graph.json",
                     {"format": FORMAT_VERSION, "level_names": self.level_names, "info": self.info, "ids": self.ids})
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> StatuteGraph:
        folder = Path(folder)
        meta = read_marker(folder / "graph.json", "statute graph", FORMAT_VERSION)
        path, n = folder / "graph.npz", len(meta["ids"])
        z = load_members(path, {"levels": ("int8",), "parent": ("int32",), "words": ("int32",),
                                "cites_src": ("int32",), "cites_dst": ("int32",)})
        for name in ("levels", "parent", "words"):
            if len(z[name]) != n:
                raise ValueError(f"{path}: {len(z[name])} {name} for {n} nodes ({DAMAGED})")
        if len(z["cites_src"]) != len(z["cites_dst"]):
            raise ValueError(f"{path}: {len(z['cites_src'])} citing and {len(z['cites_dst'])} cited nodes ({DAMAGED})")
        for name in ("parent", "cites_src", "cites_dst"):  # a parent may be -1: none
            refuse_outside(path, name, z[name], n, f"not one of the {n} nodes", low=-1 if name == "parent" else 0)
        return cls(meta["ids"], meta["level_names"], z["levels"], z["parent"], z["words"],
                   z["cites_src"], z["cites_dst"], meta.get("info"))


# ---------------------------------------------------------------------------
# building


class _Resolver:
    """Finds the deepest existing unit for (act, article, path steps)."""

    def __init__(self, index: dict[str, int], articles: dict[str, Provision]) -> None:
        self.index = index
        self.articles = articles  # canonical id -> article provision
        self._paths: dict[str, list[tuple[tuple[tuple[str, str], ...], str]]] = {}
        self.outcomes: Counter[str] = Counter()

    def _descendants(self, article_id: str) -> list[tuple[tuple[tuple[str, str], ...], str]]:
        """(path steps below the article, unit id) for every unit of the article."""
        got = self._paths.get(article_id)
        if got is None:
            got = []
            cut = len(article_id)
            for unit in self.articles[article_id].walk():
                rest = unit.id[cut:]
                steps = tuple(tuple(s.split(":", 1)) for s in rest.split(PATH_SEP)[1:]) if rest else ()
                got.append((steps, unit.id))  # type: ignore[arg-type]
            self._paths[article_id] = got
        return got

    def resolve(self, act: str, article: str | None, steps: list[tuple[str, str]],
                explicit: bool = True) -> int | None:
        """``explicit``: the act was named in the text (not the citing unit's act by default)."""
        if act not in self.index:
            self.outcomes["unknown_act"] += 1
            return None
        if article is None:
            self.outcomes["act"] += 1
            return self.index[act]
        article_id = f"{act}{ID_SEP}{article}"
        if article_id not in self.articles:
            if not explicit:
                # "§ 149 des Sechsten Buches ..." with the act not recognised: the default act
                # is a guess that the missing article refutes, so no edge.
                self.outcomes["missing_article"] += 1
                return None
            self.outcomes["act"] += 1  # the cited article does not exist: fall back to the act
            return self.index[act]
        units = self._descendants(article_id)
        for keep in range(len(steps), 0, -1):
            wanted = tuple(steps[:keep])
            exact = f"{article_id}" + "".join(f"{PATH_SEP}{lv}:{lb}" for lv, lb in wanted)
            if exact in self.index:
                self.outcomes["exact" if keep == len(steps) else "ancestor"] += 1
                return self.index[exact]
            found = [uid for path, uid in units if path and path[-1] == wanted[-1] and _subsequence(wanted, path)]
            if len(found) == 1:
                self.outcomes["filled" if keep == len(steps) else "ancestor"] += 1
                return self.index[found[0]]
        self.outcomes["article" if not steps else "ancestor"] += 1
        return self.index[article_id]


def _division_chains(act: Act) -> dict[str, list]:
    """For each article standing in a division: the divisions from the outermost down to the
    innermost it stands in (``act.divisions``; none for a flat act)."""
    chain: dict[str, list] = {}

    def visit(divisions: list, above: list) -> None:
        for d in divisions:
            path = [*above, d]
            for a in d.articles:
                chain[a] = path
            visit(d.children, path)

    visit(act.divisions, [])
    return chain


def _subsequence(wanted: tuple, path: tuple) -> bool:
    it = iter(path)
    return all(step in it for step in wanted)


def _jurisdiction_finder(acts: list[Act], jurisdiction: str | None) -> tuple[Finder | None, re.Pattern | None]:
    """The citation finder of the acts' legal order (``jurisdiction``, else the acts' own, else the
    order at home in their language) and its quick test of whether a text may cite; (None, None)
    for an order without a finder."""
    from lexir.jurisdiction import find_jurisdiction

    first = acts[0] if acts else None
    order = find_jurisdiction(jurisdiction or (first.jurisdiction if first else None) or None,
                              first.language if first else None)
    if order is None or order.find_citations is None:
        return None, None
    find, default = order.find_citations, order.graph_default_act

    def finder(text: str, act: str) -> list:
        return find(text, default_act=act if default else None)

    return finder, order.may_cite


def build_graph(
    acts: Iterable[Act],
    progress: Callable[[int], None] | None = None,
    finder: Finder | None = None,
    cites: bool = True,
    workers: int | None = None,
    jurisdiction: str | None = None,
) -> StatuteGraph:
    """The graph of ``acts``; ``progress(1)`` is called after each act.

    ``finder(text, default_act)`` returns citations (objects with ``act``, ``article``, ``path``);
    by default the finder of the acts' legal order (``jurisdiction``, else theirs; see
    :mod:`lexir.jurisdiction`), none for an order without one. ``cites=False`` builds the
    hierarchy only. Citations in large corpora are found in ``workers`` forked processes
    (default: one per available CPU; the same edges as one process finds).
    """
    acts = list(acts)
    may_cite = None
    if cites and finder is None:
        finder, may_cite = _jurisdiction_finder(acts, jurisdiction)
        cites = finder is not None
    with gc_paused():  # a million acyclic objects: the cycle collector would only cost time
        return _build_graph(acts, progress, finder, cites, workers, may_cite)


def _build_graph(acts: list[Act], progress: Callable[[int], None] | None, finder: Finder | None, cites: bool,
                 workers: int | None, may_cite: re.Pattern | None = None) -> StatuteGraph:
    t0 = time.perf_counter()
    ids: list[str] = []
    level_of: dict[str, int] = {"act": 0}
    levels: list[int] = []
    parent: list[int] = []
    words: list[int] = []
    articles: dict[str, Provision] = {}
    texts: list[tuple[int, str, str, str]] = []  # node, own text, act, article id

    def add(node_id: str, level: str, up: int, n_words: int) -> int:
        ids.append(node_id)
        levels.append(level_of.setdefault(level, len(level_of)))
        parent.append(up)
        words.append(n_words)
        return len(ids) - 1

    for act in acts:
        root = add(act.id, "act", -1, 0)
        total = 0
        # Divisions (Buch, Abschnitt, ...) stand between the act and its articles; each is added
        # just before its first article, so nodes stay in document order.
        chain = _division_chains(act)
        made: dict[str, int] = {}
        for article in act.articles:
            articles[article.id] = article
            up_of = root
            for division in chain.get(article.id, ()):
                if division.id not in made:
                    made[division.id] = add(division.id, division.level, up_of, 0)
                up_of = made[division.id]
            stack: list[tuple[Provision, int]] = [(article, up_of)]
            while stack:
                unit, up = stack.pop()
                n = len(unit.text.split())
                if unit is article:
                    total += n
                    for division in chain.get(article.id, ()):
                        words[made[division.id]] += n
                me = add(unit.id, unit.level, up, n)
                if cites:
                    mine = own_text(unit)
                    if may_cite is None or may_cite.search(mine):  # a finder that needs a keyword
                        texts.append((me, mine, act.id, article.id))
                stack.extend((child, me) for child in reversed(unit.children))
        words[root] = total
        if progress:
            progress(1)
    t_nodes = time.perf_counter() - t0

    index = {node: i for i, node in enumerate(ids)}
    src: list[int] = []
    dst: list[int] = []
    outcomes: Counter[str] = Counter()
    found = 0
    if cites:
        job = (texts, _Resolver(index, articles), finder)
        for part in _run_parts(job, len(texts), workers):
            src.extend(part[0])
            dst.extend(part[1])
            found += part[2]
            outcomes.update(part[3])
    t_cites = time.perf_counter() - t0 - t_nodes
    pairs = np.unique(np.array([src, dst], dtype=np.int64).reshape(2, -1), axis=1) if src else np.zeros((2, 0))
    # np.unique sorts by source then target; keep that (stable, reproducible) order.
    names = [name for name, _ in sorted(level_of.items(), key=lambda kv: kv[1])]
    info = {
        "build_seconds_nodes": round(t_nodes, 2),
        "build_seconds_cites": round(t_cites, 2),
        "cites_found": found,
        "cites_resolution": dict(outcomes),
        "acts": len(acts),
    }
    return StatuteGraph(ids, names, np.array(levels), np.array(parent), np.array(words),
                        pairs[0], pairs[1], info)


# What forked workers read: (texts, resolver, finder), set by the parent just before it forks.
_JOB: tuple | None = None
_PARALLEL_MIN = 20_000  # fewer texts than this are not worth starting processes for


def _run_parts(job: tuple, n: int, workers: int | None) -> list[tuple[list[int], list[int], int, Counter]]:
    """The citation edges of texts ``0..n``, in text order: in forked workers when there are many
    and fork is safe (one thread; the finder and resolver are read, not pickled), else here."""
    global _JOB
    workers = workers if workers is not None else available_cpus()
    safe = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    if workers <= 1 or n < _PARALLEL_MIN or not safe:
        return [_edges_of(job, 0, n)]
    bounds = np.linspace(0, n, 4 * workers + 1).astype(int).tolist()
    _JOB = job
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_edges_in_worker, bounds[:-1], bounds[1:]))
    finally:
        _JOB = None


def _edges_in_worker(lo: int, hi: int) -> tuple[list[int], list[int], int, Counter]:
    assert _JOB is not None, "graph workers must be forked from the building process"
    with gc_paused():
        return _edges_of(_JOB, lo, hi)


def _edges_of(job: tuple, lo: int, hi: int) -> tuple[list[int], list[int], int, Counter]:
    """(sources, targets, citations found, resolution outcomes) of texts ``lo..hi``."""
    texts, resolver, finder = job
    resolver.outcomes = Counter()
    src: list[int] = []
    dst: list[int] = []
    found = 0
    for me, text, act_id, article_id in texts[lo:hi]:
        for c in finder(text, act_id):
            found += 1
            if c.act is None and getattr(c, "act_raw", ""):
                resolver.outcomes["unknown_act"] += 1  # names an act the finder does not know
                continue
            # every unit one citation names: "Satz 1 und 4" is one citation of two Sätze
            for unit in getattr(c, "paths", None) or (c.path,):
                path = list((unit or {}).items())
                if c.article is None:
                    if not path:
                        continue
                    # "Absatz 1 Satz 2" with no § / Art: relative to the citing unit's article.
                    target_act, article = act_id, article_id.split(ID_SEP, 1)[1]
                else:
                    target_act, article = (c.act or act_id), c.article
                explicit = bool(getattr(c, "act_raw", "x")) and c.article is not None
                target = resolver.resolve(target_act, article, path, explicit)
                if target is not None and target != me:
                    src.append(me)
                    dst.append(target)
    return src, dst, found, resolver.outcomes


def graph_of(corpus, progress: Callable[[int], None] | None = None) -> StatuteGraph:
    """The graph of a corpus's acts, its ``cites`` edges found by the citation finder of the
    corpus's legal order (none for an order without a finder)."""
    return build_graph(corpus.acts.values(), progress, jurisdiction=corpus.jurisdiction or None)


def graph_folder(corpus) -> Path:
    """Where the graph of ``corpus`` is cached: keyed by its name, its text fingerprint and the code
    that builds graphs (the citation finders with their tables, the parsers, this module), so a
    graph built before a finder changed is never served after it; and by its legal order where its
    language alone does not give it (a folder read as Austrian law: its citations are Austria's)."""
    from lexir.io.paths import safe_name
    from lexir.jurisdiction import named_order

    order = named_order(corpus)
    return graph_cache_root() / (f"{safe_name(corpus.name, 'corpus')}-{corpus.fingerprint[:16]}-{graph_code_digest()[:10]}"
                                 + (f"-{order}" if order else ""))


def graph_cache_root() -> Path:
    from lexir.io.paths import cache_dir

    return cache_dir() / "graphs"


@lru_cache(maxsize=1)
def graph_code_digest() -> str:
    """The digest of the code a graph depends on (see :func:`graph_folder`)."""
    from lexir.io.paths import code_digest

    package = Path(__file__).resolve().parents[1]
    return code_digest(package / "citations", package / "structure", package / "jurisdictions",
                       salt=f"graph-format:{FORMAT_VERSION}")


def cached_graph(corpus, progress: Callable[[int], None] | None = None,
                 notify: Callable[[str], None] | None = None) -> StatuteGraph:
    """The graph of ``corpus`` from the cache, or built by :func:`graph_of` and saved there (a
    damaged cache entry is rebuilt, never trusted)."""
    folder = graph_folder(corpus)
    if (folder / "graph.json").is_file():
        try:
            return StatuteGraph.load(folder)
        except (OSError, ValueError, KeyError):
            pass
    if notify:
        notify(f"building the statute graph of {corpus.name} (once; cached)")
    graph = graph_of(corpus, progress)
    graph.save(folder)
    stem = folder.name.rsplit("-", 1)[0]  # the same corpus and text, built by older code: remove
    for old in folder.parent.glob(f"{stem}-*"):
        if old != folder and old.name.rsplit("-", 1)[0] == stem and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return graph


