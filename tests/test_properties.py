"""Property tests (Hypothesis) of the citation finders and the statute parsers, on any text.

Citation finders (``lexir.find_citations`` and each language's finder): for arbitrary unicode and
for text built from real fragments (real citations mixed with noise, cut at random points, odd
whitespace, lone combining marks, very long numbers), no exception; every span lies inside the
text and its text is ``text[start:end]``; every act found is one of the act table the finder
resolves against (whose ids are the corpus's); ids are ``act::article``; the output is
deterministic and the same through the one entry point.

Statute parsers (German Markdown, Polish articles, Greek gazette JSON): for any text, including
real laws mutated (lines dropped, duplicated, headings garbled, truncated), no exception other
than the parser's documented error naming the input; ids unique, each a parseable lexir id under
its parent's (the hierarchy is consistent); each unit's text comes from the input (its characters
other than whitespace are a subsequence of its parent's, the article's of the input's).

Bounded and reproducible: ``derandomize=True``, no example database, a fixed ``max_examples``.
The examples that found bugs are kept as plain regression tests at the end of this file.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import signal
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lexir.citations.extract import find_citations
from lexir.citations.model import KINDS, read_act_table
from lexir.jurisdiction import get_jurisdiction
from lexir.jurisdictions.de import citations as german
from lexir.jurisdictions.de.statutes import LawSyntaxError, law_texts, parse_law, safe_act_id
from lexir.jurisdictions.el import citations as greek
from lexir.jurisdictions.el.statutes import iter_greek_files, parse_greek_law, source_id_for
from lexir.jurisdictions.pl import citations as polish
from lexir.jurisdictions.pl.statutes import parse_article
from lexir.types import Act, Provision, UnitId, canonical_id

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
PL_CODES = ("kc", "kk", "kks", "kpa", "kpc")
FINDERS = {"de": german.find_citations, "pl": polish.find_citations, "el": greek.find_citations}


# ---------------------------------------------------------------------------
# real fragments


@cache
def _table(lang: str) -> frozenset[str]:
    return frozenset(e.source for e in read_act_table(get_jurisdiction(lang).acts))


def _chunks(texts: list[str], size: int, step: int, limit: int) -> list[str]:
    return [t[i : i + size] for t in texts for i in range(0, len(t), step) if t[i : i + size].strip()][:limit]


@pytest.fixture(scope="module")
def fragments(data_dir: Path) -> dict[str, list[str]]:
    """Per language: real citations as written and pieces of the real texts they occur in."""
    docs = [json.loads(line) for line in (data_dir / "de" / "refex" / "documents.jsonl").open(encoding="utf-8")]
    spans = sorted({c["span"]["text"]
                    for line in (data_dir / "de" / "refex" / "annotations.jsonl").open(encoding="utf-8")
                    for c in json.loads(line)["citations"] if c.get("type") == "law"})
    exams = [json.loads(line) for line in (data_dir / "pl" / "exams_2012_2023.jsonl").open(encoding="utf-8")]
    kk = json.loads((data_dir / "pl" / "codes" / "kk.json").read_text(encoding="utf-8"))
    el = [p.get("content") or "" for _, obj in iter_greek_files(data_dir / "el") for p in obj["provisions"]]
    el_cites = sorted({c.text for t in el[::10] for c in greek.find_citations(t)})
    return {
        "de": spans + _chunks([d["text"] for d in docs], 300, 1500, 400),
        "pl": sorted({e["legal_basis"] for e in exams if e.get("legal_basis")})
        + _chunks([e["question"] for e in exams[::20]] + list(kk.values())[::10], 200, 400, 400),
        "el": el_cites + _chunks(el, 200, 900, 400),
    }


_NOISE = ["\xa0", "\u2009", "\u202f", "\t", "\n", "\r\n", "\u2028", "\ufeff", "\u200b", "  " * 20,
          "\u0301", "\u0308", "\u0342", "\u0307",  # lone combining marks
          "9" * 40, "1" + "0" * 25, "0", ",", ";", ".", "-", "–", "(", ")", "/", "^", "¹",
          "§", "§§", "Art.", "Abs.", " und ", " bis ", "art.", "ust.", " i ", "άρθρο", "παρ.", " και ", " του "]


@st.composite
def _mutated(draw, frags: list[str]) -> str:
    """A real fragment with a few edits: noise inserted, numbers made long, spaces made odd, case
    changed, characters dropped, another fragment spliced in; then maybe cut at a random point."""
    s = draw(st.sampled_from(frags))
    for _ in range(draw(st.integers(0, 5))):
        op = draw(st.integers(0, 6))
        i = draw(st.integers(0, len(s)))
        if op == 0:
            s = s[:i] + draw(st.sampled_from(_NOISE)) + s[i:]
        elif op == 1:
            s = re.sub(r"\d+", draw(st.sampled_from(["9" * 40, "0", "00", "1" + "0" * 25])), s, count=1)
        elif op == 2:
            s = s.replace(" ", draw(st.sampled_from(["\xa0", "\u2009", "\t", "\n", "   "])))
        elif op == 3:
            s = s.upper() if draw(st.booleans()) else s.lower()
        elif op == 4:
            s = s[:i] + s[i + 1 :]
        elif op == 5:
            s = s[:i] + draw(st.sampled_from(frags)) + s[i:]
        else:
            s = s[:i] + draw(st.text(max_size=4)) + s[i:]
    if s and draw(st.booleans()):
        i = draw(st.integers(0, len(s)))
        s = s[i:] if draw(st.booleans()) else s[:i]
    return s


def _texts(frags: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(),  # arbitrary unicode
        st.text(alphabet=st.characters(codec=None, exclude_categories=())),  # lone surrogates too
        _mutated(frags),
        st.lists(st.one_of(_mutated(frags), st.sampled_from(_NOISE)), max_size=6).map("".join),
    )


# ---------------------------------------------------------------------------
# citation finders


def _check_citations(text: str, cites: list, sources: frozenset[str], default_act: str | None = None) -> None:
    for c in cites:
        assert 0 <= c.start <= c.end <= len(text), (c, len(text))
        assert c.text == text[c.start : c.end], c
        assert c.act is None or c.act in sources or c.act == default_act, c
        if c.act and c.article:
            assert c.id == canonical_id(c.act, c.article), c
        else:
            assert c.id is None, c


def _same(a: list, b: list) -> bool:
    return [c.to_json() for c in a] == [c.to_json() for c in b]


@pytest.mark.parametrize("lang", ["de", "pl", "el"])
@PROPERTY
@given(data=st.data())
def test_finders_on_any_text(fragments, lang, data):
    text = data.draw(_texts(fragments[lang]), label="text")
    default_act = data.draw(st.sampled_from([None, {"de": "BGB", "pl": None, "el": "PK"}[lang]]), label="default_act")
    kw = {"default_act": default_act} if default_act else {}
    cites = FINDERS[lang](text, **kw)
    _check_citations(text, cites, _table(lang), default_act)
    assert _same(FINDERS[lang](text, **kw), cites)  # deterministic
    assert _same(find_citations(text, lang, **kw), cites)  # the one entry point gives the same


@PROPERTY
@given(data=st.data())
def test_german_finder_other_kinds_and_range_ends(fragments, data):
    text = data.draw(_texts(fragments["de"]), label="text")
    every = german.find_citations(text, kinds=None)
    _check_citations(text, every, _table("de"))
    assert {c.kind for c in every} <= set(KINDS)
    ends = german.find_citations(text, expand_ranges=False)
    _check_citations(text, ends, _table("de"))
    assert {(c.start, c.end) for c in ends} <= {(c.start, c.end) for c in german.find_citations(text)}


@PROPERTY
@given(data=st.data())
def test_polish_legal_basis_and_known_articles(fragments, known_pl, data):
    text = data.draw(_texts(fragments["pl"]), label="text")
    for parse in (polish.find_citations, polish.parse_legal_basis):
        plain = parse(text)
        _check_citations(text, plain, _table("pl"))
        resolved = parse(text, known_pl)
        _check_citations(text, resolved, _table("pl"))
        # the corpus only changes how a flattened superscript is read, into a label it has
        assert [(c.start, c.end, c.act) for c in resolved] == [(c.start, c.end, c.act) for c in plain]
        for a, b in zip(plain, resolved, strict=True):
            assert b.article == a.article or b.article in known_pl[b.act], (a, b)


@pytest.fixture(scope="module")
def known_pl(data_dir: Path) -> dict[str, set[str]]:
    return {s: set(json.loads((data_dir / "pl" / "codes" / f"{s}.json").read_text(encoding="utf-8")))
            for s in PL_CODES}


def test_act_tables_name_the_corpora(data_dir, known_pl):
    """The ids the finders resolve to are the corpora's: every German table source is a law of
    ``laws_index.tsv`` (by ``safe_act_id``; the 20 laws whose jurabk the index lost take it from
    the archive's front matter), the Polish codes and the Greek files have their ids in the tables."""
    with (data_dir / "de" / "laws_index.tsv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    ids = {safe_act_id(r["jurabk"] or "", r["slug"]) for r in rows}
    assert len(_table("de")) == len(rows)
    assert len(_table("de") - ids) <= sum(not r["jurabk"] for r in rows)
    assert set(known_pl) <= _table("pl")
    assert {source_id_for(obj) for _, obj in iter_greek_files(data_dir / "el")} <= _table("el")


# ---------------------------------------------------------------------------
# statute parsers


def _nonspace(text: str) -> str:
    return "".join(text.split())


def _within(small: str, big: str) -> bool:
    """Whether ``small`` is a subsequence of ``big``."""
    it = iter(big)
    return all(ch in it for ch in small)


def _check_tree(act_id: str, articles: list[Provision], source: str) -> None:
    source = _nonspace(source)
    seen: set[str] = set()
    for article in articles:
        assert _within(_nonspace(article.text), source), (article.id, article.text[:300])
        stack: list[tuple[Provision, Provision | None]] = [(article, None)]
        while stack:
            node, parent = stack.pop()
            assert node.id not in seen, f"duplicate id {node.id}"
            seen.add(node.id)
            uid = UnitId.parse(node.id)
            assert uid.source == act_id, (node.id, act_id)
            if parent is None:
                assert (uid.article, uid.path) == (node.label, ()), node.id
            else:  # the parent exists: it is the unit one step up
                assert node.id == f"{parent.id}/{node.level}:{node.label}", (node.id, parent.id)
                assert _within(_nonspace(node.text), _nonspace(parent.text)), (node.id, node.text[:200])
            stack.extend((child, node) for child in node.children)


_LINES = {
    "de": ["## § 1", "### § 2 Titel", "## §§ 3 bis 6 (weggefallen)", "#### Art 1", "## Art I bis Art III",
           "## Anlage 1", "## Anlage", "## Anhang (zu § 2)", "## (XXXX)", "# Titel", "##", "## § 1a bis 1c",
           "## § 99999999999999", "## § 1 bis 9999999", "## Art. 229 § 1", "## § 1.2.3", "## Anlage 1/2",
           "---", "jurabk: X", "jurabk: A:", "slug: y", "(1)", "(2) Text.", "1.", "a)", "aa)", "\\", "[^1]: x",
           "[^1]", "**", "| a |", "  1. x", "\t(2) y", "## Eingangsformel"],
    "pl": ["§ 1.", "§ 2.", "§ 2a.", "§ 2^1.", "1)", "2)", "1^1)", "a)", "b)", "– podlega karze", "(uchylony)",
           " " * 30 + "Rozdział II", "wy-", "-mierzoną", "\u00ad", "art. 5"],
    "el": ["Άρθρο 5", "Άρθρο 82 Α", "Άρθρα 3 - 4", "Άρθρα 9 - 1", "Άρθρα 1 - 99999999", "Άρθρα 137Β - 137Δ",
           "«", "».", "1. Κείμενο", "2. x", "α) ", "β) κ", "αα) y", "στ) z", "1) x", "ΚΕΦΑΛΑΙΟ Α",
           "ΕΦΗΜΕΡΙΔΑ ΤΗΣ ΚΥΒΕΡΝΗΣΕΩΣ", "12", "Παραγγέλλομε τη δημοσίευση", "x-", "-y", "\u2212", "\u00ad"],
}


@st.composite
def _mutated_law(draw, text: str, lang: str) -> str:
    """``text`` with lines dropped, duplicated, garbled or replaced by a unit or heading line of
    the language; then maybe truncated."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        op = draw(st.integers(0, 4))
        i = draw(st.integers(0, len(lines) - 1))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            lines[i] = draw(st.sampled_from(_LINES[lang]))
        elif op == 3:
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(st.one_of(st.text(max_size=5), st.sampled_from(_NOISE))) + lines[i][j:]
        else:
            lines.insert(i, draw(st.sampled_from(_LINES[lang])))
    out = "\n".join(lines)
    if draw(st.booleans()):
        out = out[: draw(st.integers(0, len(out)))]
    return out


@pytest.fixture(scope="module")
def german_laws(data_dir: Path) -> list[str]:
    """The first laws of the archive under 30,000 characters: notices without §, ordinances with
    annexes, laws with Art and §."""
    laws = [text for _, text in itertools.islice(law_texts(data_dir / "de" / "gesetze_markdown_all.tar.gz"), 40)]
    return [t for t in laws if len(t) < 30_000]


@PROPERTY
@given(data=st.data())
def test_german_parser_on_mutated_laws(german_laws, data):
    markdown = data.draw(st.one_of(st.text(), st.sampled_from(german_laws).flatmap(lambda t: _mutated_law(t, "de"))),
                         label="markdown")
    try:
        act = parse_law(markdown, "x/law/index.md")
    except LawSyntaxError as err:  # the documented error, naming the file
        assert str(err).startswith("x/law/index.md:")
        return
    assert isinstance(act, Act) and act.id
    _check_tree(act.id, act.articles, markdown)


@pytest.fixture(scope="module")
def polish_articles(data_dir: Path) -> list[tuple[str, str, str]]:
    return [(s, label, text) for s in ("kc", "kk", "kpc")
            for label, text in list(json.loads((data_dir / "pl" / "codes" / f"{s}.json").read_text()).items())[::25]]


@PROPERTY
@given(data=st.data())
def test_polish_parser_on_mutated_articles(polish_articles, data):
    source, label, text = data.draw(st.sampled_from(polish_articles), label="article")
    text = data.draw(st.one_of(st.text(), _mutated_law(text, "pl")), label="text")
    article = parse_article(source, label, text)
    _check_tree(source, [article], text.replace("\u00ad", ""))  # soft hyphens are dropped as documented


@pytest.fixture(scope="module")
def greek_laws(data_dir: Path) -> list[dict]:
    """Runs of four provisions of every Greek file."""
    return [dict(obj, provisions=obj["provisions"][i : i + 4])
            for _, obj in iter_greek_files(data_dir / "el") for i in range(0, len(obj["provisions"]), 12)]


@st.composite
def _mutated_greek(draw, laws: list[dict]) -> dict:
    obj = draw(st.sampled_from(laws))
    provisions = []
    for prov in obj["provisions"]:
        if draw(st.booleans()):
            prov = dict(prov, content=draw(_mutated_law(prov.get("content") or "", "el")))
        if draw(st.integers(0, 4)) == 0:
            prov = dict(prov, title=draw(st.sampled_from(["", "Άρθρο 1 - Τίτλος", (prov.get("content") or "").split("\n")[0]])))
        provisions.append(prov)
    return dict(obj, provisions=provisions)


@PROPERTY
@given(data=st.data())
def test_greek_parser_on_mutated_laws(greek_laws, data):
    obj = data.draw(_mutated_greek(greek_laws), label="law")
    act = parse_greek_law(obj, "law.json")
    # the text is cleaned as documented: U+2212 is a hyphen, soft hyphens go
    source = "\n".join(f"{p.get('title', '')}\n{p.get('content', '')}" for p in obj["provisions"])
    _check_tree(act.id, act.articles, source.replace("\u2212", "-").replace("\u00ad", ""))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@PROPERTY
@given(provisions=st.lists(st.one_of(json_values, st.fixed_dictionaries(
    {}, optional={"section": json_values, "provision_ref": json_values, "title": json_values, "content": json_values}))))
def test_greek_parser_on_any_provisions(provisions):
    """Any JSON in ``provisions``: an Act with valid ids, or a ValueError naming the file."""
    try:
        act = parse_greek_law({"id": "x", "provisions": provisions}, "law.json")
    except ValueError as err:
        assert str(err).startswith("law.json: ")
        return
    fields = [str(p.get(k, "")) for p in provisions for k in ("title", "content")]
    _check_tree(act.id, act.articles, "\n".join(fields).replace("\u2212", "-").replace("\u00ad", ""))


# ---------------------------------------------------------------------------
# regression tests: the examples the properties found, shrunk


def _law(body: str, jurabk: str = "X") -> str:
    return f"---\nTitle: Gesetz\njurabk: {jurabk}\nslug: x\n---\n# Gesetz\n\n{body}\n"


def test_german_annex_label_with_a_slash_gives_a_parseable_id():
    act = parse_law(_law("## § 1\n\nText.\n\n## Anlage 1/2\n\nText der Anlage."), "x/law/index.md")
    annex = act.articles[-1]
    assert annex.label == "Anlage 1_2" and UnitId.parse(annex.id) == UnitId("X", "Anlage 1_2")


def test_german_jurabk_with_a_colon_at_an_end_gives_ids_of_its_act():
    assert safe_act_id("BGB:") == safe_act_id(":BGB") == safe_act_id("BGB") == "BGB"
    assert safe_act_id("A:::B") == "A:B" and safe_act_id(":", "slug/x") == "slug_x"
    act = parse_law(_law("## § 1\n\n(1) Satz eins.", jurabk="A:"), "x/law/index.md")
    assert act.id == "A"
    assert {UnitId.parse(u.id).source for u in act.units()} == {"A"}


def test_greek_item_that_fails_to_continue_a_list_stays_in_source_order():
    obj = {"id": "law-x", "provisions": [{"section": "1", "content": "1. Ορίζονται τα εξής:\nαα) πρώτο\nβ) δεύτερο\n2. Τέλος."}]}
    par = parse_greek_law(obj, "law.json").articles[0].children[0]
    assert par.text == "1. Ορίζονται τα εξής:\nαα) πρώτο β) δεύτερο"  # was "… β) δεύτερο\nαα) πρώτο"
    assert [(c.label, c.text) for c in par.children] == [("αα", "αα) πρώτο β) δεύτερο")]


def test_greek_real_article_whose_list_is_interrupted_keeps_its_order(data_dir):
    """N4070_2012 art. 30 par. 17: "γ) Η Ε.Ε.Τ.Τ., …" after the items αα)-γγ) cannot continue the
    list of α)-ζ); its text stays after them, in the paragraph's and the item's text."""
    (_, obj), = [(p, o) for p, o in iter_greek_files(data_dir / "el") if p.name == "law-4070-2012.json"]
    art = next(a for a in parse_greek_law(obj, "law-4070-2012.json").articles if a.label == "30")
    par = next(c for c in art.children if c.label == "17")
    tail = "γ) Η Ε.Ε.Τ.Τ., μετά την πάροδο τεσσάρων μηνών από την ημερομηνία παραλαβής"
    assert par.text.index(tail) > par.text.index("γγ) για την αιτιολογημένη απόρριψη")
    source = _nonspace(obj["provisions"][[p["section"] for p in obj["provisions"]].index("30")]["content"])
    assert _within(_nonspace(par.text), source)


@pytest.mark.parametrize("provisions, message", [
    ([1], "provisions[0] is not an object"),
    ([{"section": "1", "content": "x"}, {"content": "1. Κείμενο."}], "provisions[1] has no usable 'section'"),
    ([{"section": None, "provision_ref": "", "content": "x"}], "provisions[0] has no usable"),
    ([{"section": "1/2", "content": "x"}], "provisions[0] has no usable"),
])
def test_greek_provision_that_is_no_article_is_a_clear_error(provisions, message):
    with pytest.raises(ValueError, match=re.escape(f"law.json: {message}")):
        parse_greek_law({"id": "x", "provisions": provisions}, "law.json")


def _alarm(seconds: int):
    """Fail a call that runs longer than ``seconds`` (a quadratic one runs for hours on these)."""

    def stop(*_):
        raise TimeoutError(f"over {seconds} s")

    class _Guard:
        def __enter__(self):
            self.old = signal.signal(signal.SIGALRM, stop)
            signal.alarm(seconds)

        def __exit__(self, *exc):
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self.old)

    return _Guard()


# Inputs that took time quadratic in their length: each takes well under a second now, and took
# over an hour before (measured on 8,000 spaces: 7.7 s German, 10.9 s Polish; 2,000 Greek units: 20 s).
def test_german_long_run_of_spaces_after_a_citation_is_linear():
    with _alarm(30):
        (c,) = german.find_citations("§ 1 " + " " * 200_000 + "x")
    assert (c.article, c.text) == ("1", "§ 1")


def test_polish_long_run_of_spaces_in_an_unknown_title_is_linear():
    with _alarm(30):
        (c,) = polish.find_citations("art. 5 ustawy o " + " " * 200_000 + "x")
    assert (c.article, c.act) == ("5", None) and c.text.startswith("art. 5 ustawy o")


def test_greek_long_chain_of_units_is_read_once():
    with _alarm(30):
        cites = greek.find_citations("παρ. 1 του " * 10_000 + "άρθρου 5")
    assert [(c.article, c.path) for c in cites] == [("5", {"par": "1"})]  # only the last unit fits


def test_german_context_lookup_is_linear(monkeypatch):
    """A reference with no act looks up the act named before it on its line: once per reference,
    not over every citation and mention before it (``Art. 1 GG. § 1.`` repeated: GG has no §)."""
    calls = 0
    fits = german._fits

    def counting(source, keyword, *profile):
        nonlocal calls
        calls += 1
        return fits(source, keyword, *profile)

    monkeypatch.setattr(german, "_fits", counting)
    counts = []
    for n in (500, 1000):
        calls = 0
        german.find_citations("Art. 1 GG. § 1. " * n)
        counts.append(calls)
    assert counts[1] < 2.5 * counts[0], counts  # linear: twice the text, twice the look-ups
    with _alarm(30):
        assert len(german.find_citations("§ 1. " * 40_000)) == 40_000
