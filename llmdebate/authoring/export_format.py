"""Everything an export format's author needs, from one place (docs/extending.md, "Adding
an export format"): the registry :data:`FORMATS`, :func:`declare_files`, and what a format
is given (:class:`Row`, :class:`FormatContext`)."""

from llmdebate.export.format_registry import FORMATS, FormatContext, declare_files
from llmdebate.export.rows import Row

__all__ = ["FORMATS", "FormatContext", "Row", "declare_files"]
