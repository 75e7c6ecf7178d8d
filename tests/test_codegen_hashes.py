"""Codegen does not move unnoticed: every shipped kernel and codegen-parity kernel compiles to the PTX
(sm_90) and AMDGCN (gfx950) recorded in tests/data/codegen_hashes.json for this Triton version."""
import json

import pytest
import triton

import tritium.tlx  # noqa: F401  (the TLX plugin compiles the kernels)
from codegen_hashes import CASES, HASHES, case_name, digest, without_debug_info

RECORDED = json.loads(HASHES.read_text()).get(triton.__version__)


def test_debug_info_is_all_that_is_dropped():
    ptx = ".file 1 \"/a/k.py\"\n.loc 1 7 3\n$L__tmp4:\n\tadd.s32 %r1, %r2, 1;\n.section\t.debug_info { .b8 1 }\n"
    assert without_debug_info(ptx) == "\tadd.s32 %r1, %r2, 1;"
    amd = "\t.loc 1 3 0\n.Ltmp2:\n\tv_add_u32 v1, v2, v3\n\t.section\t.debug_abbrev,\"\",@progbits\n"
    assert without_debug_info(amd) == "\tv_add_u32 v1, v2, v3"


def test_every_case_is_recorded():
    if RECORDED is None:
        pytest.skip(f"no hashes recorded for Triton {triton.__version__}")
    assert sorted(RECORDED) == sorted(case_name(s, t) for s, t in CASES)


@pytest.mark.parametrize("spec,target", CASES, ids=[case_name(s, t) for s, t in CASES])
def test_codegen_is_unchanged(spec, target):
    if RECORDED is None:
        pytest.skip(f"no hashes recorded for Triton {triton.__version__}")
    assert digest(spec, target) == RECORDED[case_name(spec, target)], (
        f"{case_name(spec, target)}: the assembly changed; if on purpose, regenerate with "
        "`PYTHONPATH=src:scripts:tests python -m codegen_hashes --write` and say why in the commit")
