"""GPQA: read from the authors' encrypted zip, decrypted only into a temporary folder.

The GPQA authors ask that the questions never appear online in plain text, so the plain
``items.jsonl`` exists only inside a :class:`tempfile.TemporaryDirectory` for the time it
takes to parse it; nothing is written anywhere persistent.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

from llmdebate.data.loader import Item, read_items
from llmdebate.errors import DatasetError

GPQA_PASSWORD = "deserted-untie-orchid"  # published by the GPQA authors in their README
MEMBER = "items.jsonl"


def read_zip_items(
    path: str | Path, *, password: str | None = None, member: str = MEMBER
) -> list[Item]:
    """The items of ``member`` inside the encrypted zip at ``path``."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    pwd = (password or GPQA_PASSWORD).encode()
    with tempfile.TemporaryDirectory(prefix="llmdebate-gpqa-") as tmp:
        try:
            with zipfile.ZipFile(path) as zf:
                if member not in zf.namelist():
                    raise DatasetError(f"{path}: the zip holds no {member}")
                zf.extract(member, tmp, pwd=pwd)
        except RuntimeError as exc:  # bad password
            raise DatasetError(f"{path}: cannot decrypt ({exc})") from None
        except zipfile.BadZipFile as exc:
            raise DatasetError(f"{path}: not a zip file ({exc})") from None
        items = read_items(Path(tmp) / member)
    for it in items:
        it.meta.pop("source_path", None)
        it.meta["protected"] = "gpqa"  # llmdebate.records.redact keeps its text out of every output
    return items
