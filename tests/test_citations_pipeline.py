"""The shared citation pipeline (lexir.citations.pipeline) with a toy legal order: what the resolve
stage does is the same for every order, whatever its group stage reads."""

from __future__ import annotations

import re

from lexir.citations import annotate, pipeline
from lexir.citations.pipeline import Group, Ref, with_ranges

# "s. 5", "s. 5, 7 FA", "s. 3 to 6 FA", "FA s. 9", "s. 2 sub 1 and sub 3 FA" (FA: the Foo Act, source "foo")
_GROUP = re.compile(r"(?:(?P<prefix>FA) )?\bs\. (?P<body>\d+(?:(?:, | to | and )(?:sub )?\d+| sub \d+)*)(?: (?P<act>FA|XA))?")
_PART = re.compile(r"(?P<conn>, | to | and )?(?P<sub>sub )?(?P<n>\d+)")


class _Toy(pipeline.Profile):
    path_keys = (("sub", "para"),)

    def groups(self, text, scan, found):
        for m in _GROUP.finditer(text):
            refs, ranges = [], []
            for part in _PART.finditer(m.group("body")):
                start, end = m.start("body") + part.start("n"), m.start("body") + part.end()
                if part.group("sub"):
                    refs.append(Ref(start, end, refs[-1].article, {"sub": part.group("n")}, "sub",
                                    via="join" if part.group("conn") else ""))
                    if not part.group("conn"):  # "s. 2 sub 1": a unit of the reference before
                        refs[-2].end, refs[-2].path = end, {"sub": part.group("n")}
                        refs.pop()
                    continue
                refs.append(Ref(start, end, part.group("n"), {}))
                if part.group("conn") == " to ":
                    ranges.append((len(refs) - 2, len(refs) - 1))
            refs[0].start = m.start("body") - 3
            if m.group("act"):
                refs[-1].end, refs[-1].own_act = m.end(), True
                for ref in refs:
                    ref.source = {"FA": "foo"}.get(m.group("act"))
                    ref.act_raw, ref.has_act = m.group("act"), True
            prefix = (m.start(), "foo", "FA") if m.group("prefix") else None
            yield Group(m.start("body") - 3, m.end(), with_ranges(refs, ranges), prefix=prefix)

    def context_act(self, text, scan, group, ref, found):
        line = text.rfind("\n", 0, ref.start) + 1
        named = [c for c in found if c.act and c.start >= line]
        return (named[-1].act, named[-1].act_raw, "statute") if named else None


TOY = _Toy()


def _rows(text, **kw):
    return [(c.text, c.id, c.resolved_from, c.paths) for c in pipeline.find(TOY, text, **kw)]


def test_an_act_after_a_group_is_explicit_for_its_reference_and_group_for_the_others():
    assert _rows("see s. 5, 7 FA.") == [("s. 5", "foo::5", "group", ({},)), ("7 FA", "foo::7", "explicit", ({},))]


def test_unknown_act_is_kept_as_written_never_guessed():
    (c,) = pipeline.find(TOY, "s. 5 XA")
    assert (c.act, c.act_raw, c.id, c.resolved_from) == (None, "XA", None, "explicit")


def test_prefix_then_default_then_context():
    (c,) = pipeline.find(TOY, "FA s. 9")
    assert (c.text, c.id, c.resolved_from) == ("FA s. 9", "foo::9", "prefix")  # the span takes the act in
    assert _rows("s. 9", default_act="bar") == [("s. 9", "bar::9", "default", ({},))]
    assert _rows("s. 1 FA; s. 9.\ns. 4.") == [("s. 1 FA", "foo::1", "explicit", ({},)),
                                             ("s. 9", "foo::9", "context", ({},)),
                                             ("s. 4", None, None, ({},))]  # context never crosses a line


def test_ranges_expand_within_known_labels_or_give_their_ends():
    assert [c.id for c in pipeline.find(TOY, "s. 3 to 6 FA")] == ["foo::3", "foo::4", "foo::5", "foo::6"]
    assert [c.id for c in pipeline.find(TOY, "s. 3 to 6 FA", known={"foo": {"3", "5", "6"}})] == [
        "foo::3", "foo::5", "foo::6"]
    assert [c.id for c in pipeline.find(TOY, "s. 3 to 6 FA", expand_ranges=False)] == ["foo::3", "foo::6"]


def test_further_units_join_one_citation_and_levels_are_renamed():
    (c,) = pipeline.find(TOY, "s. 2 sub 1 and sub 3 FA")
    assert (c.text, c.path, c.also, c.unit_ids) == ("s. 2 sub 1 and sub 3 FA", {"para": "1"}, ({"para": "3"},),
                                                     ("foo::2/para:1", "foo::2/para:3"))


def test_spaces_are_read_as_spaces_and_reported_as_written_and_annotate_marks_them():
    text = "s.\xa05 FA"
    (c,) = pipeline.find(TOY, text)
    assert (c.text, c.id) == (text, "foo::5")
    assert annotate(text, [c]) == f'<cite data-id="foo::5" data-unit="foo::5">{text}</cite>'


def test_annotate_marks_the_given_words_inside_and_outside_citations_and_escapes_the_rest():
    text = "Kara <wg> s. 5 FA & kara"
    (c,) = pipeline.find(TOY, text)
    words = [(0, 4), (15, 17), (20, 24)]  # "Kara", "FA" (inside the citation), "kara"
    assert annotate(text, [c], marks=words) == (
        '<mark>Kara</mark> &lt;wg&gt; <cite data-id="foo::5" data-unit="foo::5">s. 5 <mark>FA</mark></cite> &amp; '
        '<mark>kara</mark>')
    assert annotate(text, [], marks=[(1, 3)]) == "K<mark>ar</mark>a &lt;wg&gt; s. 5 FA &amp; kara"
    assert annotate(text, [c]) == annotate(text, [c], marks=[])  # nothing given, nothing marked
