"""Datasets: the common JSONL loader, Hugging Face sources, GPQA decryption, bundled samples
and the project's own generated sets."""

from llmdebate.data.loader import Item, build_items, read_items, shuffle_choices
from llmdebate.data.sources import load_items

__all__ = ["Item", "build_items", "load_items", "read_items", "shuffle_choices"]
