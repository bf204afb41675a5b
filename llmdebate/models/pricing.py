"""Prices in USD per million tokens, ``model -> (input, output)``.

The defaults are list prices as published by the providers in 2025; they change, so pass
``prices=`` to :func:`llmdebate.models.get_model` to override or extend them. Unknown models
(local models, the scripted double, most OpenAI-compatible servers) cost 0.
"""

from __future__ import annotations

Prices = dict[str, tuple[float, float]]

DEFAULT_PRICES: Prices = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
}


def lookup_price(model: str, prices: Prices | None = None) -> tuple[float, float] | None:
    """The price of ``model`` (``provider/name`` or bare ``name``), or None if unknown.

    An exact match wins; otherwise the longest table key that prefixes the bare name (so
    ``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``). User ``prices`` shadow defaults.
    """
    table = {**DEFAULT_PRICES, **(prices or {})}
    bare = model.split("/", 1)[1] if "/" in model else model
    for key in (model, bare):
        if key in table:
            return table[key]
    best = max((k for k in table if bare.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def call_cost(model: str, tokens_in: int, tokens_out: int, prices: Prices | None = None) -> float:
    """USD cost of one call; 0 for unknown models."""
    price = lookup_price(model, prices)
    if price is None:
        return 0.0
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
