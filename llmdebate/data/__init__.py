"""Datasets: the common JSONL loader, GPQA decryption, and the project's own generated sets."""

from llmdebate.data.loader import Item, load_items, read_items, shuffle_choices

__all__ = ["Item", "load_items", "read_items", "shuffle_choices"]
