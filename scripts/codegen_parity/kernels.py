"""The kernels both implementations compile, with the arguments each is specialized for.

A kernel comes from tritium (``tritium.kernels`` or this package's ``op_kernels``, which import
``tritium.tlx``) or from the TLX fork's tutorials (which import ``triton.language.extra.tlx``). The
dump step binds whichever TLX is under test to both names, so every kernel compiles from one source
on both sides. Specializations mirror what the JIT sees for 16-byte aligned tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

SM90 = ("cuda", 90, 32)
GFX942 = ("hip", "gfx942", 64)
GFX950 = ("hip", "gfx950", 64)
TARGET_NAMES = {SM90: "sm90", GFX942: "gfx942", GFX950: "gfx950"}

#: Kernels whose codegen must match uTLX's exactly (issue 13: the AMD GEMM family).
MUST_MATCH = ("tritium.gemm_pipelined_amd", "fork.amd_gemm_pipelined", "fork.amd_gemm_pipelined_kpack2",
              "fork.amd_gemm_pipelined_kpack2_bk128", "fork.main.amd_gemm_pipelined",
              "fork.main.amd_gemm_pipelined_kpack2", "fork.main.amd_gemm_pipelined_kpack2_bk128",
              "fork.amd_gemm_gfx942", "fork.amd_bmm_gfx942", "fork.amd_addmm_gfx942")

_GEMM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
             "stride_cm": "i32", "stride_cn": "i32"}
_GEMM_ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
_GEMM_UNIT = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}


@dataclass(frozen=True)
class Spec:
    """One kernel, compiled for each of ``targets``.

    Args:
        name: ``tritium.<module>`` or ``fork.<tutorial>`` (the report's row name).
        module: a module name (``tritium...``/``codegen_parity...``) or a tutorial file name.
        kernel: the ``@triton.jit`` function's name in that module (autotuned ones are unwrapped).
        signature: Triton signature of the non-constexpr arguments.
        constexprs: constexpr arguments, and integer arguments specialized to a value.
        aligned: arguments the JIT would mark divisible by 16.
        options: compile options (``num_warps``...).
        targets: ``(backend, arch, warp_size)`` tuples.
        source: where a fork tutorial comes from: ``wheel`` (fbtriton's) or ``git`` (a git copy of the fork
            at :data:`FORK_GIT_COMMIT`; CI has none, so these cases are not compiled there).
    """
    name: str
    module: str
    kernel: str
    signature: dict
    constexprs: dict = field(default_factory=dict)
    aligned: tuple = ()
    options: dict = field(default_factory=dict)
    targets: tuple = (SM90, )
    source: str = "wheel"

    @property
    def from_fork(self) -> bool:
        return self.name.startswith("fork.")


def _gemm(name: str, module: str, kernel: str, tiles: dict, targets: tuple, num_warps: int, **options: Any) -> Spec:
    return Spec(name, module, kernel, dict(_GEMM_SIG), {**_GEMM_UNIT, **tiles}, _GEMM_ALIGNED,
                {"num_warps": num_warps, **options}, targets)


def _tiles(bm: int, bn: int, bk: int, group: int, stages: int) -> dict:
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group, "NUM_STAGES": stages}


def _desc(dtype: str, *block: int) -> str:
    return f"tensordesc<{dtype}[{', '.join(map(str, block))}]>"


_ADD2_SIG = {n: "*fp32" for n in ("x_ptr", "y_ptr", "z_ptr", "a_ptr", "b_ptr", "c_ptr")} | {"n_elements": "i32"}
_ADD2_ALIGNED = ("x_ptr", "y_ptr", "z_ptr", "a_ptr", "b_ptr", "c_ptr", "n_elements")

#: tritium's own kernels, as their launchers specialize them.
TRITIUM = (
    _gemm("tritium.gemm_pipelined_hopper", "tritium.kernels.gemm_pipelined_hopper", "matmul_kernel_pipelined_hopper",
          {**_tiles(128, 256, 64, 8, 3), "STRIDE_ALIGN": 8}, (SM90, ), 8),
    _gemm("tritium.gemm_pipelined_amd", "tritium.kernels.gemm_pipelined_amd", "matmul_kernel_pipelined_amd",
          _tiles(128, 128, 64, 8, 2), (GFX942, GFX950), 4),
    Spec("tritium.gemm_ws_hopper", "tritium.kernels.gemm_ws_hopper", "matmul_kernel_ws_hopper",
         {"a_desc": _desc("fp16", 64, 64), "b_desc": _desc("fp16", 64, 256), "c_desc": _desc("fp16", 64, 128),
          "M": "i32", "N": "i32", "K": "i32"},
         {"BM": 128, "BN": 256, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3, "EPILOGUE_SPLIT": True,
          "NUM_REGS": 232}, ("M", "N", "K"), {"num_warps": 4}),
    Spec("tritium.gemm_ws_cooperative_hopper", "tritium.kernels.gemm_ws_cooperative_hopper",
         "matmul_kernel_ws_cooperative",
         {"a_desc": _desc("fp16", 64, 64), "b_desc": _desc("fp16", 64, 256), "c_desc": _desc("fp16", 64, 64),
          "M": "i32", "N": "i32", "K": "i32"},
         {"BM": 128, "BN": 256, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 4, "EPILOGUE_SUBTILES": 4,
          "NUM_REGS": 232}, ("M", "N", "K"), {"num_warps": 4}),
    Spec("tritium.gemm_ws_pingpong_hopper", "tritium.kernels.gemm_ws_pingpong_hopper", "matmul_kernel_ws_pingpong",
         {"a_desc": _desc("fp16", 128, 64), "b_desc": _desc("fp16", 64, 128), "c_desc": _desc("fp16", 128, 32),
          "M": "i32", "N": "i32", "K": "i32"},
         {"BM": 128, "BN": 128, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 6, "EPILOGUE_SUBTILES": 4,
          "NUM_REGS": 232}, ("M", "N", "K"), {"num_warps": 4}),
    *(Spec(f"tritium.{module}", f"tritium.kernels.{module}", kernel,
           {"desc_q": _desc("fp16", 1, 1, 64, 128), "desc_k": _desc("fp16", 1, 1, 128, 128),
            "desc_v": _desc("fp16", 1, 1, 128, 128), "desc_o": _desc("fp16", 1, 1, 64, 128), "sm_scale": "fp32",
            "H": "i32", "N_CTX": "i32"},
           {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128, "NUM_STAGES": 2, "CAUSAL": True, "NUM_REGS": 232},
           ("N_CTX", ), {"num_warps": 4})
      for module, kernel in (("attention_ws_hopper", "attn_fwd_ws_hopper"),
                             ("attention_ws_pipelined_hopper", "attn_fwd_ws_pipelined_hopper"))),
)

#: Op-level kernels (codegen_parity/op_kernels.py): one TLX op family each.
OPS = (
    Spec("ops.local_roundtrip", "codegen_parity.op_kernels", "local_roundtrip",
         {"x_ptr": "*fp16", "y_ptr": "*fp16"}, {"BM": 64, "BN": 64}, ("x_ptr", "y_ptr"), {"num_warps": 4},
         (SM90, GFX942, GFX950)),
    Spec("ops.local_views", "codegen_parity.op_kernels", "local_views",
         {"x_ptr": "*fp16", "y_ptr": "*fp16"}, {"BM": 64, "BN": 64}, ("x_ptr", "y_ptr"), {"num_warps": 4},
         (SM90, GFX942, GFX950)),
    Spec("ops.async_copy", "codegen_parity.op_kernels", "async_copy",
         {"x_ptr": "*fp16", "y_ptr": "*fp16"}, {"BM": 64, "BN": 64, "STAGES": 2}, ("x_ptr", "y_ptr"),
         {"num_warps": 4}),
    Spec("ops.wgmma", "codegen_parity.op_kernels", "wgmma",
         {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}, {"BM": 64, "BN": 128, "BK": 64},
         ("a_ptr", "b_ptr", "c_ptr"), {"num_warps": 4}),
    Spec("ops.tma_barrier", "codegen_parity.op_kernels", "tma_barrier",
         {"in_desc": _desc("fp16", 64, 64), "out_desc": _desc("fp16", 64, 64)}, {"BM": 64, "BN": 64}, (),
         {"num_warps": 4}),
    Spec("ops.warp_specialized", "codegen_parity.op_kernels", "warp_specialized",
         {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024}, ("x_ptr", "y_ptr", "n"),
         {"num_warps": 4}),
)

#: The fork's tutorials (from the fbtriton wheel, or a directory given to ``dump --tutorials``).
FORK = (
    Spec("fork.vector_add2", "vector-add2.py", "add2_kernel", _ADD2_SIG, {"BLOCK_SIZE": 1024}, _ADD2_ALIGNED,
         {"num_warps": 4}),
    Spec("fork.vector_add2_ws", "vector-add2.py", "add2_warp_specialized_kernel", _ADD2_SIG, {"BLOCK_SIZE": 1024},
         _ADD2_ALIGNED, {"num_warps": 4}),
    _gemm("fork.hopper_gemm_pipelined", "hopper_gemm_pipelined.py", "matmul_kernel_pipelined_hopper",
          _tiles(128, 256, 64, 8, 3), (SM90, ), 8),
    Spec("fork.hopper_gemm_ws", "hopper_gemm_ws.py", "matmul_kernel_tlx_ws",
         {"a_desc": _desc("fp16", 64, 64), "b_desc": _desc("fp16", 64, 256), "c_desc": _desc("fp16", 64, 128),
          "M": "i32", "N": "i32", "K": "i32"},
         {"BM": 128, "BN": 256, "BK": 64, "GROUP_SIZE_M": 8, "NUM_STAGES": 3, "NUM_MMA_WARPS": 8,
          "NUM_MMA_GROUPS": 2, "EPILOGUE_SUBTILE": True, "NUM_CTAS": 1, "NUM_SMS": 132, "USE_WARP_BARRIER": False},
         ("M", "N", "K"), {"num_warps": 4, "num_stages": 1}),
    _gemm("fork.amd_gemm_pipelined", "amd_gemm_pipelined.py", "matmul_kernel_pipelined_mi300",
          _tiles(128, 128, 128, 4, 2), (GFX942, GFX950), 8, kpack=1, matrix_instr_nonkdim=16, waves_per_eu=0),
    # kpack=2 (kWidth 8 on gfx942), the autotuner's first config for 256 x 256 x 512: the planner's default
    # buffer swizzle assumes kWidth 4; the operand's own layout comes after accelerate_matmul (issue 21)
    _gemm("fork.amd_gemm_pipelined_kpack2", "amd_gemm_pipelined.py", "matmul_kernel_pipelined_mi300",
          _tiles(32, 32, 64, 1, 2), (GFX942, ), 4, kpack=2, matrix_instr_nonkdim=16, waves_per_eu=0),
    # the autotuner's kpack=2 config with a 64 x 128 A and a 128 x 64 B: the planner gives both buffers one
    # encoding, and only A is K-contiguous (issue 21)
    _gemm("fork.amd_gemm_pipelined_kpack2_bk128", "amd_gemm_pipelined.py", "matmul_kernel_pipelined_mi300",
          _tiles(64, 64, 128, 4, 2), (GFX942, ), 4, kpack=2, matrix_instr_nonkdim=16, waves_per_eu=0),
)

def _gfx942_family(name: str, kernel: str, extra_sig: dict, extra_aligned: tuple) -> Spec:
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", **extra_sig.get("ptrs", {}), "c_ptr": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", **extra_sig["strides"]}
    tiles = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "NUM_BUFFERS": 2, "NUM_XCDS": 8}
    return Spec(f"fork.{name}", f"{name}.py", kernel, sig, tiles,
                ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", *extra_aligned), {"num_warps": 4, "waves_per_eu": 0},
                (GFX942, ), "git")


#: Where ``source="git"`` tutorials come from: a git copy of the fork (``$TRITIUM_FORK_GIT``, else the default
#: below) at this commit (main of 2026-08-22, as in scripts/fork_unit_tests.py), newer than the fbtriton wheel.
FORK_GIT_ENV = "TRITIUM_FORK_GIT"
FORK_GIT_DEFAULT = "/work/.mirror/facebookexperimental+triton/repo"
FORK_GIT_COMMIT = "db4666f22c1f8b206584c3f06e3b4a0ff035989e"
FORK_GIT_TUTORIALS = "third_party/tlx/tutorials"

#: Tutorials from the fork's git source. CI has no git copy: there the report keeps these rows from its last
#: run with one. The main branch's amd_gemm_pipelined (its loop and buffer indexing are rewritten since the
#: wheel) in the configs of its wheel rows, and the CDNA3 GEMM family.
FORK_GIT = (
    *(replace(spec, name=f"fork.main.{spec.name[len('fork.'):]}", source="git")
      for spec in FORK if spec.module == "amd_gemm_pipelined.py"),
    _gfx942_family("amd_gemm_gfx942", "matmul_kernel_gfx942",
                   {"strides": {n: "i32" for n in ("stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
                                                   "stride_cn")}}, ("stride_am", "stride_bk", "stride_cm")),
    _gfx942_family("amd_bmm_gfx942", "bmm_kernel_gfx942",
                   {"strides": {n: "i32" for n in ("stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk",
                                                   "stride_bn", "stride_cb", "stride_cm", "stride_cn")}},
                   ("stride_ab", "stride_am", "stride_bb", "stride_bk", "stride_cb", "stride_cm")),
    _gfx942_family("amd_addmm_gfx942", "addmm_kernel_gfx942",
                   {"ptrs": {"bias_ptr": "*fp16"},
                    "strides": {n: "i32" for n in ("stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_biasm",
                                                   "stride_biasn", "stride_cm", "stride_cn")}},
                   ("bias_ptr", "stride_am", "stride_bk", "stride_biasm", "stride_cm")),
)

ALL = TRITIUM + OPS + FORK + FORK_GIT
