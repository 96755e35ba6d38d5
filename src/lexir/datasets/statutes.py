"""Statute corpora from parsed acts: each article (§, Art, Anlage, article, άρθρο) is one document;
its units (Absatz, alinéa, παράγραφος, ...) are in ``corpus.acts``. The parsers and the datasets
that use this live in each legal order's folder (``lexir.jurisdictions.<code>``)."""

from __future__ import annotations

from lexir.types import Act, Corpus, Document


def corpus_of(name: str, acts: list[Act], language: str, parse_errors=(), jurisdiction: str = "") -> Corpus:
    """A corpus of every article of ``acts``, in order (``parse_errors``: the sources that failed).
    Acts that name no jurisdiction are marked as the corpus's (they were just parsed for it)."""
    for act in acts:
        if jurisdiction and not act.jurisdiction:
            act.jurisdiction = jurisdiction
    docs = [doc for act in acts for doc in act_documents(act)]
    return Corpus(name, docs, language=language, acts=acts, parse_errors=parse_errors, jurisdiction=jurisdiction)


def act_documents(act: Act) -> list[Document]:
    """The documents of an act in a statutes corpus (:func:`corpus_of`): its articles, in order."""
    return [Document(a.id, a.text, a.title) for a in act.articles]
