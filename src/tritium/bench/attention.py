"""Flash-attention forward throughput: the TLX Hopper kernels against PyTorch SDPA, same run, same data.

Cases: fp16 and bf16, head dim 64 and 128, causal and not, sequence 1k to 16k. Batch x heads fill
the GPU: 16k tokens per batch (batch = 16384 / seq) and 2048 / head_dim heads, so every case has
the same number of Q rows and (for 128-row tiles) at least 2048 programs. The baseline is
``torch.nn.functional.scaled_dot_product_attention`` with its fastest backend for the case (each of
flash, memory-efficient and cuDNN is timed where it runs; the best counts). FLOPs: 4 * B * H * S^2 * D
(half of that under the causal mask). TFLOPS from the median of ``do_bench``, best of two
interleaved rounds. Every TLX output is checked against SDPA's before it is timed.

``--only quick`` runs a subset (head dim 128 at seq 4096 in both dtypes, and head dim 64 fp16),
about 3 minutes on an H200, compiles included; other ``--only`` words filter the cases, all of them
must match: ``fp16``, ``bf16``, ``d64``, ``d128``, ``causal``, ``noncausal``, ``s4096``, ...
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..kernels.attention import pick_kernel
from ..kernels.attention_persistent_hopper import attn_fwd_persistent_hopper
from ..kernels.attention_persistent_hopper import forward as persistent_forward
from ..kernels.attention_ws_hopper import attention_ws, attn_fwd_ws_hopper
from ..kernels.attention_ws_pipelined_hopper import attention_ws_pipelined, attn_fwd_ws_pipelined_hopper
from .report import bar_plot, save_json, table

TOKENS = 16384  # batch * seq
HIDDEN = 2048  # heads * head_dim
SEQS = (1024, 2048, 4096, 8192, 16384)
#: name -> (launcher, kernel)
IMPLS = {"TLX WS": (attention_ws, attn_fwd_ws_hopper),
         "TLX pipelined": (attention_ws_pipelined, attn_fwd_ws_pipelined_hopper),
         "TLX persistent": (lambda q, k, v, causal: persistent_forward(q, k, v, causal, None, store_lse=False)[0],
                            attn_fwd_persistent_hopper)}


class Case(NamedTuple):
    dtype: str  # "fp16" or "bf16"
    head_dim: int
    causal: bool
    seq: int

    @property
    def batch(self) -> int:
        return max(1, TOKENS // self.seq)

    @property
    def heads(self) -> int:
        return HIDDEN // self.head_dim

    @property
    def label(self) -> str:
        return f"{self.dtype} d{self.head_dim} {'causal' if self.causal else 'noncausal'} s{self.seq}"

    def flops(self) -> float:
        return 4.0 * self.batch * self.heads * self.seq ** 2 * self.head_dim * (0.5 if self.causal else 1.0)

    def inputs(self) -> tuple:
        """Fresh random q, k, v of this case on the GPU."""
        import torch
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[self.dtype]
        shape = (self.batch, self.heads, self.seq, self.head_dim)
        return tuple(torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))


CASES = [Case(dt, d, c, s) for dt in ("fp16", "bf16") for d in (64, 128) for c in (False, True) for s in SEQS]
QUICK = [Case(dt, 128, c, 4096) for dt in ("fp16", "bf16") for c in (False, True)] + \
        [Case("fp16", 64, c, 4096) for c in (False, True)]


def select(only: str) -> list[Case]:
    """The cases ``--only`` names: ``quick``, or words that each must appear in a case's label."""
    words = [w for w in only.replace(",", " ").split() if w]
    if words == ["quick"]:
        return QUICK
    chosen = [c for c in CASES if all(w in c.label.split() for w in words)]
    if not chosen:
        raise SystemExit(f"tritium bench attention: no case matches --only {only!r}; a label reads "
                         f"{CASES[0].label!r} (or use --only quick)")
    return chosen


def sdpa_variants(q, k, v, causal: bool) -> dict:
    """SDPA under each backend that accepts these inputs: name -> callable."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        def fn(backend=backend):
            with sdpa_kernel([backend]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            fn()
        except RuntimeError:  # this backend does not take these inputs on this GPU
            continue
        out[backend.name.lower()] = fn
    return out


def run_case(case: Case, rounds: int = 2, rep_ms: int = 100) -> dict:
    from triton.testing import do_bench
    q, k, v = case.inputs()
    sdpa = sdpa_variants(q, k, v, case.causal)
    if not sdpa:
        raise RuntimeError(f"{case.label}: no SDPA backend runs this case")
    ref = next(iter(sdpa.values()))().float()
    impls = {f"SDPA {name}": fn for name, fn in sdpa.items()}
    for name, (attn, _) in IMPLS.items():
        out = attn(q, k, v, causal=case.causal)
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise AssertionError(f"{name} {case.label}: relative error {err:.2e} against SDPA")
        impls[name] = lambda attn=attn: attn(q, k, v, causal=case.causal)
    tflops = dict.fromkeys(impls, 0.0)
    for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
        for name, fn in impls.items():
            ms = do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
            tflops[name] = max(tflops[name], case.flops() / ms * 1e-9)
    best = max((n for n in tflops if n.startswith("SDPA")), key=tflops.get)
    picked = next(n for n, (_, kernel) in IMPLS.items() if kernel is pick_kernel(case.seq, case.head_dim, case.causal))
    return {**case._asdict(), "batch": case.batch, "heads": case.heads, "tflops": tflops,
            "sdpa_backend": best.split()[1], "sdpa_tflops": tflops[best], "attention_picks": picked,
            **{f"{n} / SDPA": tflops[n] / tflops[best] for n in IMPLS}}


def _label(result: dict) -> str:
    return Case(result["dtype"], result["head_dim"], result["causal"], result["seq"]).label


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(out: str, only: str = "") -> int:
    import torch
    import triton
    from tqdm import tqdm
    cases = select(only)
    results = []
    bar = tqdm(cases, unit="case")
    for case in bar:
        bar.set_description(case.label)
        results.append(run_case(case))
    headers = ["case", "B x H", "SDPA backend", "SDPA", *IMPLS, *(f"{n} / SDPA" for n in IMPLS)]
    rows = [(_label(r), f"{r['batch']} x {r['heads']}", r["sdpa_backend"], r["sdpa_tflops"],
             *(r["tflops"][n] for n in IMPLS), *(r[f"{n} / SDPA"] for n in IMPLS)) for r in results]
    print(f"## Flash-attention forward TFLOPS on {torch.cuda.get_device_name()} (torch {torch.__version__}, "
          f"triton {triton.__version__}); {TOKENS} tokens x {HIDDEN} hidden per case")
    print(table(headers, rows))
    summary = {}
    for d in sorted({r["head_dim"] for r in results}):
        for n in IMPLS:
            summary[f"d{d} {n} / SDPA geomean"] = _geomean([r[f"{n} / SDPA"] for r in results if r["head_dim"] == d])
    print("\n" + "\n".join(f"{k}: {v:.3f}" for k, v in summary.items()))
    series = {f"{n} / SDPA": [r[f"{n} / SDPA"] for r in results] for n in IMPLS}
    png = bar_plot(f"{out}/attention.png", "Flash-attention forward vs SDPA (fastest backend)",
                   [_label(r) for r in results], series, "ratio of TFLOPS")
    print(f"\nplot: {png}")
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    print(f"json: {save_json(f'{out}/attention.json', {'env': env, 'summary': summary, 'cases': results})}")
    return 0
