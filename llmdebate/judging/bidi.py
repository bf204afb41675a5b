"""Direction isolation of text a model or a dataset wrote (Unicode bidirectional controls).

One U+202E (RIGHT-TO-LEFT OVERRIDE) in a passage or a speech would otherwise reverse the
text that follows it on the judge's page or terminal: the words of the page itself, the
other answer, the buttons' labels. :func:`balanced` drops the controls that close more than
the string opened and closes what it leaves open, so the string cannot end an isolate it is
placed in; :func:`isolate` puts it between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE
(plain text read by a bidi-aware viewer); the web pages put it in a ``<bdi>`` element (the
``bdi`` template filter). A terminal gets :func:`plain`: most terminals implement no
bidirectional algorithm and draw the controls as visible characters that rich counts as
zero wide (a box's border pushed out of line), so there the controls are dropped, which
leaves nothing that could reverse the text after it.
"""

from __future__ import annotations

from markupsafe import Markup, escape

EMBEDDINGS = frozenset("\u202a\u202b\u202d\u202e")  # LRE RLE LRO RLO, closed by PDF
ISOLATES = frozenset("\u2066\u2067\u2068")  # LRI RLI FSI, closed by PDI
PDF, PDI, FSI = "\u202c", "\u2069", "\u2068"
PARAGRAPH_ENDS = frozenset("\n\r\x1c\x1d\x1e\x85\u2029")  # every control stops at one
MARKS = frozenset("\u200e\u200f\u061c")  # LRM RLM ALM
CONTROLS = EMBEDDINGS | ISOLATES | MARKS | {PDF, PDI}


def balanced(text: str) -> str:
    """``text`` with each unmatched closer dropped and each unclosed opener closed."""
    out: list[str] = []
    stack: list[str] = []  # the openers still open, innermost last
    for ch in text:
        if ch in PARAGRAPH_ENDS:
            out += [PDI if c in ISOLATES else PDF for c in reversed(stack)]
            stack.clear()
        elif ch in EMBEDDINGS or ch in ISOLATES:
            stack.append(ch)
        elif ch == PDF:
            if not stack or stack[-1] in ISOLATES:
                continue  # a PDF never closes an isolate
            stack.pop()
        elif ch == PDI:
            if not any(c in ISOLATES for c in stack):
                continue
            while stack.pop() not in ISOLATES:  # a PDI closes the embeddings inside it too
                out.append(PDF)
        out.append(ch)
    out += [PDI if c in ISOLATES else PDF for c in reversed(stack)]
    return "".join(out)


def isolate(text: object) -> str:
    """``text`` with each line a direction isolate (plain text: a terminal, a log)."""
    return "\n".join(FSI + balanced(line) + PDI for line in str(text).split("\n"))


def plain(text: object) -> str:
    """``text`` without any bidirectional control (for a terminal)."""
    return "".join(ch for ch in str(text) if ch not in CONTROLS)


def bdi(text: object) -> Markup:
    """``text`` escaped, in a ``<bdi>`` element (a Jinja2 filter)."""
    return Markup("<bdi>") + escape(balanced(str(text))) + Markup("</bdi>")
