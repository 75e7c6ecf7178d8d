"""Why each remaining difference between tritium's and uTLX's codegen is right, with evidence.

A justification holds the digest of the assembly difference it was written for (``compare``
prints it): when the difference changes, the check fails until someone looks again.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Justification:
    digest: str  # of the normalized assembly diff (compare.Case.digest)
    why: str


JUSTIFIED: dict[str, Justification] = {}

#: Kernels uTLX compiles and tritium does not yet, with the reason (the TLX conformance issue).
KNOWN_GAPS: dict[str, str] = {}
