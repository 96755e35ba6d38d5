"""Repair text extracted from PDFs: hyphenated line breaks, hard line breaks, padding.

The output keeps one newline before every line that *looks like* the start of a unit
(``§ 2.``, ``(1)``, ``1)``, ``a)``, ``1.``, a leading dash) and joins every other line
to the one before it with a space. "Looks like" is deliberately generous and blind to
language: a parser for one kind of act decides which of those lines really start a unit
and joins the rest back (see ``lexir.jurisdictions.pl.statutes``). Pass ``breaks=None`` for a
single line of running text.
"""

from __future__ import annotations

import re

# Enumerators that begin a unit in Polish, German and Greek statutes alike. A false hit
# only costs a newline that the structural parser joins back.
UNIT_START = re.compile(
    r"""(?:
        §+\s*\d+\w*(?:\^\d+\w*)?\.(?:\s|$)   # § 2.   § 2a.   § 2^1.
      | \(\d+\w{0,3}\)(?:\s|$)             # (1)    (2a)
      | \w{1,4}(?:\^\d+\w*)?\)(?:\s|$)     # 1)  2a)  7^1)  a)  α)
      | \d+\w{0,3}\.(?:\s|$)               # 1.     2a.
      | [–—-]\s                            # a dash opening a tiret or a list's closing words
    )""",
    re.VERBOSE,
)

_HYPHENS = "-\u2010"  # only true hyphens split words; en and em dashes never do
_SPACES = re.compile(r"[ \t\u00a0\u2007\u202f]+")


def clean_pdf_text(text: str, breaks: re.Pattern[str] | None = UNIT_START) -> str:
    """Clean PDF-extracted text, keeping a newline before lines matching ``breaks``.

    * ``wy-\\n   mierzoną`` becomes ``wymierzoną``; ``celno-\\n-skarbową`` (the Polish
      habit of repeating the hyphen of a compound on the new line) becomes
      ``celno-skarbową``; a hyphen before a capital or a digit is kept (``PCV-\\nEU``).
      Hyphens inside a line are never touched.
    * every other line break becomes a space, unless the next line matches ``breaks``;
    * runs of spaces collapse to one, lines are stripped, blank lines dropped;
    * soft hyphens (U+00AD) are removed.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if not line:
            continue
        if not out:
            out.append(line)
            continue
        prev = out[-1]
        if len(prev) >= 2 and prev[-1] in _HYPHENS and prev[-2].isalnum():
            if line[0] in _HYPHENS:
                out[-1] = prev + line[1:]
            elif line[0].islower():
                out[-1] = prev[:-1] + line
            else:
                out[-1] = prev + line
        elif breaks is not None and breaks.match(line):
            out.append(line)
        else:
            out[-1] = prev + " " + line
    return "\n".join(out)
