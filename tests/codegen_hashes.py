"""The codegen guard: hashes of the PTX (sm_90) and AMDGCN (gfx950) of every shipped kernel and of the
codegen-parity kernels, per Triton version, so a refactor of the kernels or of TLX that moves codegen
fails a test (tests/test_codegen_hashes.py) instead of passing unnoticed.

The hashed text is the assembly without its debug info (``.loc``/``.file`` lines, debug labels and
sections): moving a kernel's source lines is not a codegen change; anything else is. Regenerate, after a
deliberate change (say why in the commit), with::

    PYTHONPATH=src:scripts:tests python -m codegen_hashes [--write]
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from codegen_parity.kernels import OPS, SM90, TARGET_NAMES, TRITIUM, Spec, _desc  # noqa: E402

from tritium.kernels import attention_bwd_hopper  # noqa: E402

HASHES = Path(__file__).parent / "data" / "codegen_hashes.json"
GFX950 = ("hip", "gfx950", 64)

_TMA_GEMM_SIG = {"M": "i32", "N": "i32", "K": "i32"}


def _tma_gemm(name: str, kernel: str, blocks: tuple, consts: dict, c_dtype: str = "fp16", variant: str = "") -> Spec:
    a, b, c = blocks
    sig = {"a_desc": _desc("fp16", *a), "b_desc": _desc("fp16", *b), "c_desc": _desc(c_dtype, *c), **_TMA_GEMM_SIG}
    return Spec(f"tritium.{name}{variant}", f"tritium.kernels.{name}", kernel, sig, consts, ("M", "N", "K"), {"num_warps": 4})


#: gemm_fp8_hopper.LARGE and .SMALL, the FP8 plans' large and 128x128 tiles
_FP8_LARGE = {"BM": 128, "BN": 256, "BK": 128, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "EPILOGUE_SUBTILES": 4, "NUM_REGS": 232}
_FP8_SMALL = {"BM": 128, "BN": 128, "BK": 128, "GROUP_SIZE_M": 8, "NUM_STAGES": 6, "EPILOGUE_SUBTILES": 2, "NUM_REGS": 232}

_ATTN_SIG = {"desc_q": _desc("fp16", 1, 1, 64, 64), "desc_k": _desc("fp16", 1, 1, 128, 64),
             "desc_v": _desc("fp16", 1, 1, 128, 64), "desc_o": _desc("fp16", 1, 1, 64, 64), "sm_scale": "fp32",
             "H": "i32", "N_CTX": "i32"}
_TRIMUL = "tritium.kernels.trimul"


def attention_bwd_signature(head_dim: int, dtype: str) -> dict:
    """The backward kernel's runtime arguments as ``launch_backward`` passes them
    (tests/tlx/test_codegen_attention_bwd.py compiles the same specializations, so one compile serves both)."""
    blocks = attention_bwd_hopper.descriptor_blocks(attention_bwd_hopper.CONFIGS[head_dim], head_dim)
    names = ("desc_q", "desc_k", "desc_v", "desc_do", "desc_dq", "desc_dk", "desc_dv")
    descs = {name: _desc("fp32" if name == "desc_dq" else dtype, *block) for name, block in zip(names, blocks)}
    return {**descs, "lse_ptr": "*fp32", "delta_ptr": "*fp32", "sm_scale": "fp32", "H_Q": "i32", "H_KV": "i32",
            "N_CTX": "i32"}


#: The backward's two head-dim configs (split dQ at 128), as tests/tlx/test_codegen_attention_bwd.py compiles them.
ATTENTION_BWD_CASES = ((128, "fp16", True), (64, "bf16", False))

#: Shipped kernels and configs the codegen-parity list does not compile: the launchers' other configs,
#: split-K, dual-K, non-causal attention at head dim 64, the persistent attention's ping-pong and three-consumer
#: configs, the attention backward, and TriMul's kernels (both projections) as ``Plan`` launches them.
SHIPPED = (
    Spec("tritium.gemm_pipelined_hopper.small", "tritium.kernels.gemm_pipelined_hopper",
         "matmul_kernel_pipelined_hopper",
         {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{n: "i32" for n in (
             "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}},
         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128,
          "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "STRIDE_ALIGN": 8},
         ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"), {"num_warps": 4}),
    _tma_gemm("gemm_ws_hopper", "matmul_kernel_ws_hopper", ((64, 64), (64, 128), (64, 128)),
              {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "EPILOGUE_SPLIT": False,
               "NUM_REGS": 232}, variant=".small"),
    _tma_gemm("gemm_ws_cooperative_hopper", "matmul_kernel_ws_cooperative", ((64, 64), (64, 128), (64, 64)),
              {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 5, "EPILOGUE_SUBTILES": 2,
               "NUM_REGS": 232}, variant=".small"),
    _tma_gemm("gemm_ws_pingpong_hopper", "matmul_kernel_ws_pingpong", ((64, 64), (64, 128), (64, 64)),
              {"BM": 64, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 6, "EPILOGUE_SUBTILES": 2,
               "NUM_REGS": 232}, variant=".small"),
    _tma_gemm("gemm_splitk_hopper", "matmul_kernel_splitk", ((64, 64), (64, 128), (64, 32)),
              {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "EPILOGUE_SUBTILES": 4,
               "NUM_REGS": 232, "SPLIT_K": 4}, c_dtype="fp32"),
    # tritium.ops.scaled_matmul's plans: the large tile with per-tensor scales, the 128x128 one with vectors
    *(Spec(f"tritium.gemm_fp8_hopper.{name}", "tritium.kernels.gemm_fp8_hopper", "matmul_kernel_fp8",
           {"a_desc": _desc("fp8e4nv", cfg["BM"] // 2, 128), "b_desc": _desc("fp8e4nv", cfg["BN"], 128),
            "c_desc": _desc("bf16", cfg["BM"] // 2, cfg["BN"] // cfg["EPILOGUE_SUBTILES"]), **_TMA_GEMM_SIG,
            "scale_a_ptr": "*fp32", "scale_b_ptr": "*fp32"},
           {**cfg, "ROW_SCALES": vectors, "COL_SCALES": vectors},
           ("M", "N", "K", "scale_a_ptr", "scale_b_ptr"), {"num_warps": 4})
      for name, cfg, vectors in (("large", _FP8_LARGE, False), ("small.rowwise", _FP8_SMALL, True))),
    Spec("tritium.gemm_streamk_hopper", "tritium.kernels.gemm_streamk_hopper", "matmul_kernel_streamk",
         {"a_desc": _desc("bf16", 64, 64), "b_desc": _desc("bf16", 64, 128), "c_desc": _desc("bf16", 64, 64),
          **_TMA_GEMM_SIG, "ws_ptr": "*fp32", "flags_ptr": "*i32"},
         {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "EPILOGUE_SUBTILES": 2, "NUM_REGS": 232},
         ("M", "N", "K", "ws_ptr", "flags_ptr"), {"num_warps": 4}),
    _tma_gemm("gemm_ws_dualk_hopper", "matmul_kernel_ws_dualk", ((64, 64), (64, 128), (64, 64)),
              {"BM": 64, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 6, "EPILOGUE_SUBTILES": 2,
               "NUM_REGS": 232}),
    *(Spec(f"tritium.{module}.d64", f"tritium.kernels.{module}", kernel, _ATTN_SIG,
           {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 128, "NUM_STAGES": 3, "CAUSAL": False, "NUM_REGS": 232},
           ("N_CTX", ), {"num_warps": 4})
      for module, kernel in (("attention_ws_hopper", "attn_fwd_ws_hopper"),
                             ("attention_ws_pipelined_hopper", "attn_fwd_ws_pipelined_hopper"))),
    *(Spec(f"tritium.attention_persistent_hopper.{variant}", "tritium.kernels.attention_persistent_hopper",
           "attn_fwd_persistent_hopper",
           {"desc_q": _desc("fp16", 1, 1, rows, d), "desc_k": _desc("fp16", 1, 1, 128, d),
            "desc_v": _desc("fp16", 1, 1, 128, d), "desc_o": _desc("fp16", 1, 1, rows, d), "lse": "*fp32",
            "sm_scale": "fp32", "B": "i32", "H": "i32", "GROUP": "i32", "N_CTX": "i32"},
           {"HEAD_DIM": d, "CAUSAL": causal, "STORE_LSE": True, "BLOCK_M": 2 * rows if consumers == 2 else 192,
            "BLOCK_N": 128, "NUM_STAGES": stages, "NUM_REGS": regs, "CONSUMERS": consumers,
            "PINGPONG": consumers == 2}, ("lse", "N_CTX"), {"num_warps": 4})
      for variant, d, causal, rows, stages, regs, consumers in (("d128.causal", 128, True, 64, 2, 240, 2),
                                                                ("d64.3wg", 64, False, 64, 3, 160, 3))),
    *(Spec(f"tritium.attention_bwd_hopper.d{d}.{dtype}{'.causal' if causal else ''}",
           "tritium.kernels.attention_bwd_hopper", "attn_bwd_ws_hopper", attention_bwd_signature(d, dtype),
           {"HEAD_DIM": d, "CAUSAL": causal, **attention_bwd_hopper.CONFIGS[d]._asdict()}, (), {"num_warps": 4})
      for d, dtype, causal in ATTENTION_BWD_CASES),
    Spec("tritium.attention_bwd_hopper.delta", "tritium.kernels.attention_bwd_hopper", "attn_bwd_delta",
         {"o_ptr": "*fp16", "do_ptr": "*fp16", "delta_ptr": "*fp32",
          **{n: "i32" for n in ("stride_ob", "stride_oh", "stride_os", "stride_db", "stride_dh", "stride_ds", "H",
                                "N_CTX")}},
         {"HEAD_DIM": 128, "ROWS": attention_bwd_hopper.DELTA_ROWS},
         ("o_ptr", "do_ptr", "delta_ptr", "stride_ob", "stride_oh", "stride_os", "stride_db", "stride_dh",
          "stride_ds"), {"num_warps": 4}),
    Spec("tritium.trimul.center", _TRIMUL, "trimul_center_kernel",
         {"x_ptr": "*fp32", "xc_ptr": "*bf16", "rstd_ptr": "*fp32", "M": "i32", "C": "i32", "eps": "fp32"},
         {"BM": 8, "CP": 512}, ("x_ptr", "xc_ptr", "rstd_ptr", "M", "C"), {"num_warps": 4}),
    Spec("tritium.trimul.proj", _TRIMUL, "trimul_proj_kernel",
         {"x_desc": _desc("bf16", 64, 64), "wq_desc": _desc("bf16", 64, 256), "wo_desc": _desc("bf16", 64, 64),
          "left_desc": _desc("bf16", 64, 64), "right_desc": _desc("bf16", 64, 64), "og_desc": _desc("fp16", 64, 64),
          "rstd_ptr": "*fp32", "mask_ptr": "*i64", "terms_ptr": "*fp32", "M": "i32", "NN": "i32", "C": "i32"},
         {"H": 128, "BM": 128, "BK": 64, "HS": 64, "NUM_STAGES": 3, "NUM_REGS": 232, "FAST_SIGMOID": True},
         ("rstd_ptr", "mask_ptr", "terms_ptr", "M", "NN", "C"), {"num_warps": 4}),
    Spec("tritium.trimul.proj_x", _TRIMUL, "trimul_proj_x_kernel",
         {"x_desc": _desc("fp32", 64, 32), "x_ptr": "*fp32", "wq_desc": _desc("bf16", 32, 256),
          "wo_desc": _desc("bf16", 32, 64), "left_desc": _desc("bf16", 64, 64), "right_desc": _desc("bf16", 64, 64),
          "og_desc": _desc("fp16", 64, 64), "mask_ptr": "*i64", "terms_ptr": "*fp32", "M": "i32", "NN": "i32",
          "C": "i32", "eps": "fp32"},
         {"H": 128, "BM": 128, "BK": 32, "HS": 64, "NUM_STAGES": 6, "NUM_REGS": 240, "FAST_SIGMOID": True},
         ("x_ptr", "mask_ptr", "terms_ptr", "M", "NN", "C"), {"num_warps": 4}),
    *(Spec(f"tritium.trimul.pair{variant}", _TRIMUL, "trimul_pair_kernel",
           {"l_ptr": "*bf16", "r_ptr": "*bf16", "o_ptr": "*bf16", "N": "i32"},
           {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3, "INCOMING": incoming},
           ("l_ptr", "r_ptr", "o_ptr", "N"), {"num_warps": 8})
      for variant, incoming in (("", False), (".incoming", True))),
    *(Spec(f"tritium.trimul.out.bn{bn}", _TRIMUL, "trimul_out_kernel",
           {"p_ptr": "*bf16", "og_ptr": "*fp16", "ln_w_ptr": "*fp32", "ln_b_ptr": "*fp32", "w_ptr": "*fp16",
            "y_desc": _desc("fp32", 64, bn), "M": "i32", "NN": "i32", "C": "i32", "eps": "fp32"},
           {"H": 128, "BM": 64, "BN": bn, "NUM_STAGES": 2, "Y_STAGES": 1},
           ("p_ptr", "og_ptr", "ln_w_ptr", "ln_b_ptr", "w_ptr", "M", "NN", "C"),
           {"num_warps": 4, "maxnreg": 128})
      for bn in (32, 64)),
)
#: (spec, target) pairs hashed: sm_90 everywhere a spec compiles for it, gfx950 for the AMD and op kernels.
CASES = [(spec, t) for spec in (*TRITIUM, *OPS, *SHIPPED) for t in spec.targets if t in (SM90, GFX950)]


def case_name(spec: Spec, target: tuple) -> str:
    return f"{spec.name}@{TARGET_NAMES[target]}"


_DEBUG_LINE = re.compile(r"^\s*(\.loc|\.file|\$L__tmp\d+:|\.Ltmp\d+:)")


def without_debug_info(asm: str) -> str:
    """``asm`` without line info and debug sections: what the kernel does, not where its source lines are."""
    asm = re.split(r"^\s*\.section\s+\.debug", asm, maxsplit=1, flags=re.M)[0]
    return "\n".join(line for line in asm.splitlines() if not _DEBUG_LINE.match(line))


def digest(spec: Spec, target: tuple) -> str:
    """sha256 of the kernel's assembly (PTX or AMDGCN) for ``target``, debug info dropped."""
    import triton
    from codegen_parity.dump import load_module, source
    from triton.backends.compiler import GPUTarget

    gpu = GPUTarget(*target)
    kernel = triton.compile(source(spec, load_module(spec, None, gpu)), target=gpu, options=dict(spec.options))
    asm = kernel.asm["ptx" if gpu.backend == "cuda" else "amdgcn"]
    return hashlib.sha256(without_debug_info(asm).encode()).hexdigest()


def main(argv: list[str]) -> int:
    """Print each case's digest; with ``--write``, record them for this Triton version."""
    import triton

    import tritium.tlx  # noqa: F401  (the TLX plugin compiles the kernels)

    digests = {}
    for spec, target in CASES:
        digests[case_name(spec, target)] = d = digest(spec, target)
        print(case_name(spec, target), d, flush=True)
    if "--write" in argv:
        recorded = json.loads(HASHES.read_text()) if HASHES.is_file() else {}
        recorded[triton.__version__] = digests
        HASHES.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
