"""The protocol's own prompt templates (``<act>.j2``)."""
