"""Hit snippets (:func:`lexir.structure.hits.snippet`) against a reference written here from the
rules alone, slowly and plainly: the text's whitespace collapsed, its ``\\w+`` words, a word marked
when one of its analyzer forms is a query term, the window starting ``width // 5`` before the first
match whose window (``width`` characters from its start) holds the most matches, moved to just after
a space within 30 characters before it, its end moved back to a space in its second half, only the
matches wholly inside marked, everything HTML-escaped. Any change to the window rule, the cut
rules, the marking or the escaping shows as a difference, on generated texts (HTML characters,
whitespace runs, the snippet's own marker characters, words without terms) and on real hits."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lexir.structure.hits import snippet, snippets


def reference_snippet(text: str, terms, analyze, width: int = 280) -> str:
    text = " ".join(text.split())
    terms = set(terms)
    matches = [(m.start(), m.end()) for m in re.finditer(r"\w+", text) if set(analyze(m.group())) & terms]
    start = 0
    if matches and len(text) > width:
        # each match's window: the matches starting at it or after and ending within width of its start
        counts = [sum(1 for s2, e2 in matches if s2 >= s and e2 <= s + width) for s, _ in matches]
        best = counts.index(max(counts))  # the first of the best
        start = max(0, matches[best][0] - width // 5)
        space = text.rfind(" ", 0, start + 1)
        if space > 0 and start - space < 30:
            start = space + 1
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        if space > start + width // 2:
            end = space
    body, pos = "", start
    for s, e in matches:
        if s >= start and e <= end:
            body += html.escape(text[pos:s]) + "<mark>" + html.escape(text[s:e]) + "</mark>"
            pos = e
    body = (body + html.escape(text[pos:end])).strip()
    return ("… " if start > 0 else "") + body + (" …" if end < len(text) else "")


STOP = {"i", "w", "oraz", "und"}  # words with no index term


def toy_analyze(word: str) -> list[str]:
    """Lowercased word and its first three letters (so different words share a term), none for a
    few stop words."""
    low = word.lower()
    return [] if low in STOP else [low, low[:3]]


LONG = ["Rechtsschutzversicherungsgesellschaften", "x" * 29, "y" * 30, "z" * 31]  # around the 30-character cut
VOCAB = ["Kto", "zabija", "człowieka", "karze", "kara", "karą", "wolności", "w", "i", "oraz", "art", "148",
         "§", "Schaden", "Schadens", "und", "x_y", "ΑΚ", "άρθρο", "amp", "lt", "mark", *LONG]
SEPS = [" "] * 12 + ["  ", "\n", "\t \n", ", ", ". ", " & ", "<", ">", "\"", "'", " <b> ", "&amp;", "\x02", "\x03",
                    " \x02 ", "\x03\x02", "\xa0", "-", ""]


@st.composite
def texts(draw) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(VOCAB), st.sampled_from(SEPS)), max_size=120))
    lead = draw(st.sampled_from(["", " ", "\n ", "<", "\x02"]))
    return lead + "".join(w + s for w, s in parts)


query_terms = st.frozensets(st.sampled_from(sorted({t for w in VOCAB for t in toy_analyze(w)} | {"", "nic", "  "})),
                            max_size=8)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), terms=query_terms, width=st.one_of(st.just(280), st.integers(1, 80), st.integers(1, 400)))
def test_snippet_equals_the_reference_on_generated_texts(text, terms, width):
    assert snippet(text, terms, toy_analyze, width) == reference_snippet(text, terms, toy_analyze, width)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(texts(), max_size=12), terms=query_terms, width=st.one_of(st.just(280), st.integers(1, 80)))
def test_snippets_of_many_texts_are_each_texts_reference(batch, terms, width):
    """One query's hits snippeted together (one compiled loop over all the texts, some of them
    already seen, some twice) give each text's reference snippet, in order."""
    assert snippets(batch, terms, toy_analyze, width) == [reference_snippet(t, terms, toy_analyze, width) for t in batch]


def test_snippets_made_by_threads_at_once_are_each_texts_reference():
    """Four threads snippet texts whose parts are new to the analyzer at the same time (parts are
    numbered and the table of parts grows under a lock): every snippet is the reference's."""
    import random
    import sys
    import threading

    def analyze(word: str) -> list[str]:  # a new analyzer: nothing of its texts is kept yet
        return toy_analyze(word)

    rng = random.Random(7)
    words = VOCAB + [f"{w}{i}" for i in range(400) for w in ("kara", "Schaden")]
    batches = [[" ".join(rng.choice(words) + rng.choice(SEPS[:14]) for _ in range(rng.randint(0, 90)))
                for _ in range(10)] for _ in range(120)]
    terms = frozenset(t for w in words[::7] for t in toy_analyze(w))
    wrong, errors = [], []

    def work(chunk):
        try:
            for batch in chunk:
                if snippets(batch, terms, analyze, 80) != [reference_snippet(t, terms, analyze, 80) for t in batch]:
                    wrong.append(batch)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    try:
        threads = [threading.Thread(target=work, args=(batches[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and not wrong


def test_snippets_begin_afresh_when_too_many_parts_are_kept(monkeypatch):
    """Past the bound on kept parts the analyzer's table starts again, and snippets do not change."""
    import lexir.structure.hits as hits

    monkeypatch.setattr(hits, "_MAX_PARTS", 40)

    def analyze(word: str) -> list[str]:
        return toy_analyze(word)

    texts_ = [" ".join(f"kara{i}{j} x{j}, Schaden" for j in range(12)) for i in range(30)]
    first = hits._kept(analyze)
    for i in range(0, 30, 3):
        batch = texts_[i:i + 3]
        terms = {f"kara{i}5", "schaden", "x7"}
        assert snippets(batch, terms, analyze, 60) == [reference_snippet(t, terms, analyze, 60) for t in batch]
    assert hits._kept(analyze) is not first and len(hits._kept(analyze).parts) < 80


@settings(max_examples=200, deadline=None)
@given(text=texts(), terms=query_terms)
def test_snippet_is_the_same_again_and_from_any_iterable(text, terms):
    """The second call reads what the first kept of the text; a list of terms (in any order, with
    repeats) is the same query as their set."""
    first = snippet(text, terms, toy_analyze, 60)
    assert snippet(text, terms, toy_analyze, 60) == first
    assert snippet(text, sorted(terms) * 2, toy_analyze, 60) == first


def test_the_reference_sees_the_rules():
    """The reference itself, on hand-made cases: the first best window, the cut to a space, the
    escaping of the text and of the marker characters."""
    text = "a b c kara d e f g h i j k kara kara x"
    assert reference_snippet(text, {"kara"}, toy_analyze, 12) == "… k <mark>kara</mark> <mark>kara</mark> …"
    assert reference_snippet("<kara> & \x02kara\x03", {"kara"}, toy_analyze) == \
        "&lt;<mark>kara</mark>&gt; &amp; \x02<mark>kara</mark>\x03"


@pytest.mark.parametrize("terms", [{"kara"}, {"kar"}, {"kar", "zabija", "xxx"}, {"rechtsschutzversicherungsgesellschaften"}])
def test_snippet_equals_the_reference_at_every_width(terms):
    """Fixed texts with matches at uneven distances (ties between windows) and long words before
    them (the 30-character move to a space), at every width up to past their length."""
    words = ("kara a " + "x" * 29 + " b karą zabija " + "y" * 30 + " c kara kara d " + LONG[0] + " & karze <e> "
             + "z" * 31 + " kara f g zabija h").split(" ")
    for text in (" ".join(words), "\n ".join(words * 3), " ".join(words[::-1] * 2)):
        for width in range(1, len(text) + 2):
            assert snippet(text, terms, toy_analyze, width) == reference_snippet(text, terms, toy_analyze, width), width


def test_snippet_equals_the_reference_on_real_hits(data_dir):
    """pl-exams tune questions searched on pl-codes through the service: each hit's snippet (made
    with the corpus's own analyzer) is the reference's, at the default width and a narrow one."""
    from lexir.datasets import open as open_data
    from lexir.service import core
    from lexir.service.state import ServiceState, Settings
    from lexir.structure.hits import hit_analyzer

    state = ServiceState(Settings())
    state.add("pl-codes")
    loaded = state.get("pl-codes")
    analyze = hit_analyzer(state.retriever(loaded, None, {}), loaded.language)
    questions = [q.text for q in open_data("pl-exams", data_dir=data_dir).queries.split("tune").queries][:300:5]
    checked = marked = 0
    for question in questions:
        terms = frozenset(analyze(question))
        for hit in core.search(state, "pl-codes", [("q", question)], 10)[0]["hits"]:
            assert hit["snippet"] == reference_snippet(hit["text"], terms, analyze), hit["id"]
            assert snippet(hit["text"], terms, analyze, 90) == reference_snippet(hit["text"], terms, analyze, 90)
            checked += 1
            marked += "<mark>" in hit["snippet"]
    assert checked >= 500 and marked > checked * 0.9


@pytest.mark.parametrize("width", [1, 30, 280])
def test_snippet_of_an_empty_or_wordless_text(width):
    for text in ("", "   ", "\n\t", ", . &", "\x02\x03"):
        assert snippet(text, {"kara"}, toy_analyze, width) == reference_snippet(text, {"kara"}, toy_analyze, width)
