"""Human-judge studies: assign waiting debates to people, show them, record and score verdicts.

Needs the ``judge`` extra (``pip install 'llmdebate[judge]'``): :func:`require` names it when
a module is missing. The parts: :mod:`.db` (judges, assignments, judgments), :mod:`.assign`,
:mod:`.view` (what a judge is shown), :mod:`.complete` (a verdict → a scored transcript),
:mod:`.app` (the web app, with :mod:`.guard` against hostile clients and :mod:`.lead` for the
study lead's progress and export), :mod:`.bidi` (direction isolation of model- and
dataset-written text), :mod:`.terminal` (the terminal judge) and :mod:`.machine` (a model
judge and the oracle on the same debates, for comparison).
"""

from __future__ import annotations

from importlib.util import find_spec

from llmdebate.errors import require as _require

FORM_PARSER = "python_multipart" if find_spec("python_multipart") else "multipart"
"""python-multipart's module: ``python_multipart`` from its 0.0.13 on (where ``multipart`` is a
deprecated alias that warns when imported), ``multipart`` before."""

EXTRA_MODULES = ("sqlalchemy", "starlette", "uvicorn", FORM_PARSER, "jinja2", "rich")


def require(*modules: str) -> None:
    """Raise a :class:`~llmdebate.errors.MissingExtraError` naming the ``judge`` extra when a
    module it brings is missing."""
    for name in modules or EXTRA_MODULES:
        _require(name, "judge")
