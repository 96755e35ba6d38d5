"""lexir's version, at the bottom layer so that any module may read it."""

__version__ = "0.1.0"
