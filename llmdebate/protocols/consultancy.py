"""Consultancy: one consultant argues for an assigned answer for n rounds; the judge decides.

With ``prover.assignment: paired`` every item is run twice, the consultant assigned the gold
answer (variant ``honest``) and the distractor (``dishonest``), so the consultant argues for
the correct answer in exactly half of the debates. The protocol is data: its topology ships
as ``consultancy.yaml`` beside this module (:mod:`llmdebate.protocols.topology` runs it).
"""

from __future__ import annotations

from llmdebate.protocols.topology import load_shipped, register_topology

register_topology("consultancy", load_shipped("consultancy"), shipped=True)
