"""The LDS accesses of the fork's main-branch amd_gemm_pipelined on gfx942 (issue 21), compile only.

The tutorial is newer than the fbtriton wheel: it comes from a git copy of the fork at the commit the
codegen-parity report uses (scripts/codegen_parity, ``$TRITIUM_FORK_GIT``), and the test skips without
one, as in CI. On Triton 3.8 the counts are uTLX's (docs/codegen-parity.md, whose rows compare the whole
assembly); the width of each access is what the operand buffers' layouts decide.
"""
from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import fork_conformance as fc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from codegen_parity import dump, normalize  # noqa: E402
from codegen_parity.kernels import FORK_GIT, FORK_GIT_DEFAULT, FORK_GIT_ENV, GFX942  # noqa: E402

TUTORIALS, WHY = dump.git_tutorials(Path(os.environ.get(FORK_GIT_ENV) or FORK_GIT_DEFAULT))
pytestmark = pytest.mark.skipif(TUTORIALS is None, reason=WHY)

SPECS = {s.name: s for s in FORK_GIT if s.module == "amd_gemm_pipelined.py"}

#: LDS instructions per kernel on Triton 3.8 and 3.9 (uTLX's on 3.8). Before the operand buffers took their
#: dot's layout, kpack2 had 16 ds_write / 80 ds_read, and kpack2_bk128 read A with ds_read2_b64 (vec 4).
LDS = {
    "fork.main.amd_gemm_pipelined": {"ds_read2_b64": 48, "ds_write2st64_b64": 8, "ds_write_b64": 16},
    "fork.main.amd_gemm_pipelined_kpack2": {"ds_read_b128": 8, "ds_read_u16": 64, "ds_write_b128": 8},
    "fork.main.amd_gemm_pipelined_kpack2_bk128": {"ds_read_b128": 32, "ds_write_b128": 8, "ds_write_b64": 16},
}


def _expected(name: str) -> dict:
    """Triton 3.6 and 3.7 emit half of the 32 x 32 tile's accesses, of the same widths."""
    import triton
    if name.endswith("_kpack2") and tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 8):
        return {k: v // 2 for k, v in LDS[name].items()}
    return LDS[name]


@pytest.mark.parametrize("name", sorted(LDS))
def test_lds_accesses_match_utlx(name):
    import triton
    spec = SPECS[name]
    with fc.device_stand_in(GFX942), fc.tutorials_package(TUTORIALS):
        module = fc.load_tutorial(TUTORIALS, spec.module)
        kernel = triton.compile(dump.source(spec, module), target=fc._target(GFX942), options=dict(spec.options))
    asm = "\n".join(normalize.amdgcn(kernel.asm["amdgcn"]))
    assert dict(Counter(re.findall(r"\b(ds_(?:read|write)\w*)", asm))) == _expected(name)
