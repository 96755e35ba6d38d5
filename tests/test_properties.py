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

import re
import signal

import pytest

from lexir.citations import german, greek, polish
from lexir.structure.german import parse_law, safe_act_id
from lexir.structure.greek import iter_greek_files, parse_greek_law
from lexir.types import UnitId


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


def _nonspace(text: str) -> str:
    return "".join(text.split())


def _within(small: str, big: str) -> bool:
    """Whether ``small`` is a subsequence of ``big``."""
    it = iter(big)
    return all(ch in it for ch in small)


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

    def counting(source, keyword):
        nonlocal calls
        calls += 1
        return fits(source, keyword)

    monkeypatch.setattr(german, "_fits", counting)
    counts = []
    for n in (500, 1000):
        calls = 0
        german.find_citations("Art. 1 GG. § 1. " * n)
        counts.append(calls)
    assert counts[1] < 2.5 * counts[0], counts  # linear: twice the text, twice the look-ups
    with _alarm(30):
        assert len(german.find_citations("§ 1. " * 40_000)) == 40_000
