"""A stand-in for GPQA: invented questions in the GPQA zip layout, encrypted like the real one.

The real ``gpqa_diamond.zip`` holds ``items.jsonl`` (the common schema, the correct answer
first) and ``gpqa_diamond.csv``, deflated and encrypted with traditional PKWARE encryption
("ZipCrypto") under the password the GPQA authors publish. Python's :mod:`zipfile` reads such
archives but cannot write them, so :func:`write_encrypted_zip` does, in plain Python (the
format is PKWARE's APPNOTE.TXT, section 6.1): no ``zip`` binary is needed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import struct
import zlib
from pathlib import Path

from llmdebate.data.gpqa import GPQA_PASSWORD

# Invented questions, nothing from GPQA: (question, correct answer, three incorrect answers).
QUESTIONS: list[tuple[str, str, str, str, str]] = [
    (
        "A fictional enzyme zylase doubles its rate for every 7 K rise. By what factor does its "
        "rate grow between 280 K and 301 K?",
        "Eightfold across the whole range",
        "Threefold across the whole range",
        "Sixfold across the whole range",
        "Twenty-onefold across the range",
    ),
    (
        "On the invented planet Quorra a pendulum of length 2 m swings with period 4 s. Which "
        "surface gravity does that imply, to one significant figure?",
        "About five metres per second squared",
        "About ten metres per second squared",
        "About two metres per second squared",
        "About twenty metres per second squared",
    ),
    (
        "The made-up molecule trivexane has three identical chiral centres and a mirror plane. "
        "How many stereoisomers does it have?",
        "Four distinct stereoisomers in all",
        "Eight distinct stereoisomers in all",
        "Six distinct stereoisomers in all",
        "Two distinct stereoisomers in all",
    ),
    (
        "A toy genome of the imaginary organism Brindle has 3 genes, each with 2 alleles and full "
        "dominance. How many phenotypes can a cross of triple heterozygotes produce?",
        "Eight phenotypes from that cross",
        "Twenty-seven phenotypes from it",
        "Nine phenotypes from that cross",
        "Sixty-four phenotypes from it",
    ),
    (
        "A fictitious particle, the glimmeron, has a rest energy of 3 GeV and moves with Lorentz "
        "factor 2. What is its total energy?",
        "Six gigaelectronvolts in total",
        "Three gigaelectronvolts in total",
        "Nine gigaelectronvolts in total",
        "Twelve gigaelectronvolts in total",
    ),
    (
        "In the invented Harlow cycle, a gas is compressed isothermally to half its volume. By "
        "which factor does its pressure change?",
        "The pressure doubles exactly",
        "The pressure halves exactly",
        "The pressure quadruples exactly",
        "The pressure stays unchanged",
    ),
    (
        "The imaginary reagent Pellum converts each alkene into a vicinal diol. How many hydroxyl "
        "groups result from a molecule with four isolated alkenes?",
        "Eight hydroxyl groups in total",
        "Four hydroxyl groups in total",
        "Sixteen hydroxyl groups in total",
        "Two hydroxyl groups in total",
    ),
    (
        "A made-up star, Velan-9, has twice the Sun's radius and the same surface temperature. "
        "How does its luminosity compare with the Sun's?",
        "Four times the solar luminosity",
        "Twice the solar luminosity value",
        "Eight times the solar luminosity",
        "Sixteen times the solar luminosity",
    ),
]

CSV_COLUMNS = [
    "Pre-Revision Question",
    "Pre-Revision Correct Answer",
    "Pre-Revision Incorrect Answer 1",
    "Pre-Revision Incorrect Answer 2",
    "Pre-Revision Incorrect Answer 3",
    "Pre-Revision Explanation",
    "Self-reported question-writing time (minutes)",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Explanation",
    "Subdomain",
    "High-level domain",
    "Record ID",
    "Canary String",
]


def gpqa_items() -> list[dict]:
    """The invented questions in the common schema, correct answer first (as in GPQA)."""
    return [
        {
            "id": f"rec{i:03d}",
            "dataset": "gpqa_diamond",
            "question": q,
            "choices": [ok, *bad],
            "answer": ok,
            "answer_index": 0,
            "context": None,
            "decomposition": None,
            "facts": None,
            "meta": {"subdomain": "invented", "high_level_domain": "Invented"},
        }
        for i, (q, ok, *bad) in enumerate(QUESTIONS)
    ]


def gpqa_csv() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for i, (q, ok, b1, b2, b3) in enumerate(QUESTIONS):
        row = dict.fromkeys(CSV_COLUMNS, "")
        row.update(
            {
                "Question": q,
                "Correct Answer": ok,
                "Incorrect Answer 1": b1,
                "Incorrect Answer 2": b2,
                "Incorrect Answer 3": b3,
                "Subdomain": "invented",
                "High-level domain": "Invented",
                "Record ID": f"rec{i:03d}",
            }
        )
        writer.writerow(row)
    return out.getvalue()


def write_gpqa_zip(path: Path, password: str = GPQA_PASSWORD) -> Path:
    """An encrypted zip in the GPQA layout with the invented questions."""
    items = "".join(json.dumps(it) + "\n" for it in gpqa_items())
    members = {"gpqa_diamond.csv": gpqa_csv().encode(), "items.jsonl": items.encode()}
    write_encrypted_zip(path, members, password)
    return path


# ------------------------------------------------------------------ ZipCrypto writer


def _crc_byte(crc: int, b: int) -> int:
    """One step of the raw CRC-32 register (zlib's crc32 inverts before and after)."""
    return zlib.crc32(bytes([b]), crc ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


class _ZipCrypto:
    def __init__(self, password: bytes) -> None:
        self.k0, self.k1, self.k2 = 0x12345678, 0x23456789, 0x34567890
        for b in password:
            self._update(b)

    def _update(self, b: int) -> None:
        self.k0 = _crc_byte(self.k0, b)
        self.k1 = (self.k1 + (self.k0 & 0xFF)) & 0xFFFFFFFF
        self.k1 = (self.k1 * 134775813 + 1) & 0xFFFFFFFF
        self.k2 = _crc_byte(self.k2, self.k1 >> 24)

    def encrypt(self, data: bytes) -> bytes:
        out = bytearray()
        for b in data:
            t = (self.k2 | 2) & 0xFFFF
            out.append(b ^ (((t * (t ^ 1)) >> 8) & 0xFF))
            self._update(b)
        return bytes(out)


def write_encrypted_zip(path: Path, members: dict[str, bytes], password: str) -> None:
    """A zip of ``members``, each deflated and ZipCrypto-encrypted (deterministic bytes)."""
    dos_time, dos_date = 0, (2024 - 1980) << 9 | 1 << 5 | 1  # 2024-01-01 00:00
    body, central = bytearray(), bytearray()
    for name, data in members.items():
        crc = zlib.crc32(data)
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        packed = deflate.compress(data) + deflate.flush()
        # 12-byte encryption header: 11 arbitrary bytes, then the CRC's high byte (the check).
        header = hashlib.sha256(name.encode()).digest()[:11] + bytes([crc >> 24])
        enc = _ZipCrypto(password.encode()).encrypt(header + packed)
        fname = name.encode()
        offset = len(body)
        fields = (20, 1, 8, dos_time, dos_date, crc, len(enc), len(data), len(fname))
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, 0) + fname + enc
        central += (
            struct.pack("<IH", 0x02014B50, 0x0314)
            + struct.pack("<HHHHHIIIHHHHHII", *fields, 0, 0, 0, 0, 0o644 << 16, offset)
            + fname
        )
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(body), 0
    )
    path.write_bytes(bytes(body + central + end))
