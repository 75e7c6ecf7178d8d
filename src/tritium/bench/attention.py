"""Flash-attention throughput, forward and backward: tritium.ops.attention against PyTorch SDPA, same run, same data.

Cases: fp16 and bf16, head dim 64 and 128, causal and not, sequence 1k to 16k. Batch x heads fill
the GPU: 16k tokens per batch (batch = 16384 / seq) and 2048 / head_dim heads, so every case has
the same number of Q rows and (for 128-row tiles) at least 2048 programs. GQA cases (label word ``gqa``):
32 query heads over 8 key/value heads, bf16, head dim 128, seq 4096 and 8192, SDPA with ``enable_gqa=True``.

``--direction fwd|bwd|both`` (default both) picks what is timed. The forward times the op (which picks its
kernel per shape) and, as extra columns, each TLX forward kernel that runs the case; the backward times
``o.backward(dO)`` of the op and of SDPA (the autograd graph kept, gradients reset between calls). Every SDPA
backend (flash, memory-efficient, cuDNN) that runs the case is a column; the op's ratio is to the fastest
one. FLOPs: 4 * B * Hq * S^2 * D forward (half of that under the causal mask), 2.5 times that backward.
TFLOPS from the median of ``do_bench``, best of two interleaved rounds. Before anything is timed, the op's
output (and with the backward its dq, dk, dv) is checked against SDPA in fp32 on the same data: relative
Frobenius error at most 1e-2.

``--only quick`` runs a subset (head dim 128 at seq 4096 in both dtypes, head dim 64 fp16, and the GQA
cases at 4096); other ``--only`` words filter the cases, all of them must match: ``fp16``, ``bf16``,
``d64``, ``d128``, ``causal``, ``noncausal``, ``s4096``, ``gqa``, ...
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..kernels.attention import pick_kernel
from ..kernels.attention_persistent_hopper import forward as persistent_forward
from ..kernels.attention_ws_hopper import attention_ws
from ..kernels.attention_ws_pipelined_hopper import attention_ws_pipelined
from ..ops.attention import attention as attention_op
from .report import bar_plot, save_json, table

TOKENS = 16384  # batch * seq
HIDDEN = 2048  # heads * head_dim (the MHA cases)
SEQS = (1024, 2048, 4096, 8192, 16384)
GQA_HEADS = (32, 8)  # query heads, key/value heads
DIRECTIONS = ("fwd", "bwd")
#: Forward kernels timed as extra columns: name -> (launcher, whether it takes GQA's fewer K/V heads)
KERNELS = {"TLX WS": (attention_ws, False), "TLX pipelined": (attention_ws_pipelined, False),
           "TLX persistent": (lambda q, k, v, causal: persistent_forward(q, k, v, causal, None, store_lse=False)[0],
                              True)}
OP = "tritium"
TOLERANCE = 1e-2


class Case(NamedTuple):
    dtype: str  # "fp16" or "bf16"
    head_dim: int
    causal: bool
    seq: int
    gqa: bool = False  # GQA_HEADS query over key/value heads, else HIDDEN / head_dim heads for all three

    @property
    def batch(self) -> int:
        return max(1, TOKENS // self.seq)

    @property
    def heads(self) -> int:
        return GQA_HEADS[0] if self.gqa else HIDDEN // self.head_dim

    @property
    def kv_heads(self) -> int:
        return GQA_HEADS[1] if self.gqa else self.heads

    @property
    def label(self) -> str:
        gqa = f" gqa {self.heads}/{self.kv_heads}" if self.gqa else ""
        return f"{self.dtype} d{self.head_dim} {'causal' if self.causal else 'noncausal'} s{self.seq}{gqa}"

    def flops(self, direction: str = "fwd") -> float:
        fwd = 4.0 * self.batch * self.heads * self.seq ** 2 * self.head_dim * (0.5 if self.causal else 1.0)
        return fwd if direction == "fwd" else 2.5 * fwd

    def inputs(self) -> tuple:
        """Fresh random q, k, v and dO of this case on the GPU."""
        import torch
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[self.dtype]
        q, do = (torch.randn(self.batch, self.heads, self.seq, self.head_dim, device="cuda", dtype=dtype)
                 for _ in range(2))
        k, v = (torch.randn(self.batch, self.kv_heads, self.seq, self.head_dim, device="cuda", dtype=dtype)
                for _ in range(2))
        return q, k, v, do


CASES = [Case(dt, d, c, s) for dt in ("fp16", "bf16") for d in (64, 128) for c in (False, True) for s in SEQS] + \
        [Case("bf16", 128, c, s, True) for c in (False, True) for s in (4096, 8192)]
QUICK = [Case(dt, 128, c, 4096) for dt in ("fp16", "bf16") for c in (False, True)] + \
        [Case("fp16", 64, c, 4096) for c in (False, True)] + [Case("bf16", 128, c, 4096, True) for c in (False, True)]


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


def directions(direction: str) -> tuple[str, ...]:
    """``--direction``'s value as the directions timed."""
    if direction == "both":
        return DIRECTIONS
    if direction not in DIRECTIONS:
        raise SystemExit(f"tritium bench attention: --direction must be fwd, bwd or both, got {direction!r}")
    return (direction, )


def sdpa_variants(q, k, v, causal: bool, gqa: bool = False) -> dict:
    """SDPA under each backend that accepts these inputs: name -> callable (the forward)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        def fn(backend=backend):
            with sdpa_kernel([backend]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        try:
            fn().sum().backward() if q.requires_grad else fn()
        except RuntimeError:  # this backend does not take these inputs on this GPU
            continue
        out[f"SDPA {backend.name.lower().replace('_attention', '')}"] = fn
    return out


def _rel_err(x, ref) -> float:
    return ((x.float() - ref).norm() / ref.norm()).item()


def reference(case: Case, q, k, v, do, backward: bool) -> tuple:
    """SDPA in fp32 on the case's data: (o,) or (o, dq, dk, dv)."""
    import torch
    leaves = [x.detach().float().requires_grad_(backward) for x in (q, k, v)]
    o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=case.causal, enable_gqa=case.gqa)
    if not backward:
        return (o.detach(), )
    o.backward(do.float())
    return (o.detach(), *(x.grad for x in leaves))


def checked(case: Case, name: str, outputs: tuple, ref: tuple) -> dict:
    """Relative errors of ``outputs`` (o[, dq, dk, dv]) against ``ref``; raises past the tolerance."""
    errs = {n: _rel_err(x, r) for n, x, r in zip(("o", "dq", "dk", "dv"), outputs, ref)}
    bad = {n: e for n, e in errs.items() if not e <= TOLERANCE}
    if bad:
        raise AssertionError(f"{name} {case.label}: relative error against fp32 SDPA "
                             + ", ".join(f"{n} {e:.2e}" for n, e in bad.items()))
    return errs


def timed(impls: dict, flops: float, rounds: int, rep_ms: int, grad_to_none=None) -> dict:
    """TFLOPS of each callable of ``impls`` doing ``flops``: the best median of ``rounds`` interleaved rounds."""
    from triton.testing import do_bench
    tflops = dict.fromkeys(impls, 0.0)
    for _ in range(rounds):  # interleaved rounds; the best median of each counts (clock drift)
        for name, fn in impls.items():
            ms = do_bench(fn, warmup=25, rep=rep_ms, grad_to_none=grad_to_none, return_mode="median")
            tflops[name] = max(tflops[name], flops / ms * 1e-9)
    return tflops


def _summary_of(tflops: dict, errors: dict) -> dict:
    best = max((n for n in tflops if n.startswith("SDPA")), key=tflops.get)
    return {"tflops": tflops, "sdpa_backend": best.split()[1], "sdpa_tflops": tflops[best],
            "ratio": tflops[OP] / tflops[best], "errors": errors}


def run_case(case: Case, dirs: tuple[str, ...], rounds: int = 2, rep_ms: int = 100) -> dict:
    """One case: checked against fp32 SDPA, then timed in each direction of ``dirs``."""
    q, k, v, do = case.inputs()
    result = {**case._asdict(), "batch": case.batch, "heads": case.heads, "kv_heads": case.kv_heads}
    if "fwd" in dirs:
        ref = reference(case, q, k, v, do, False)
        op = lambda: attention_op(q, k, v, causal=case.causal, enable_gqa=case.gqa)  # noqa: E731
        impls, errors = {OP: op}, {OP: checked(case, OP, (op(), ), ref)}
        for name, (kernel, takes_gqa) in KERNELS.items():
            if takes_gqa or not case.gqa:
                fn = lambda kernel=kernel: kernel(q, k, v, causal=case.causal)  # noqa: E731
                errors[name] = checked(case, name, (fn(), ), ref)
                impls[name] = fn
        sdpa = sdpa_variants(q, k, v, case.causal, case.gqa)
        if not sdpa:
            raise RuntimeError(f"{case.label}: no SDPA backend runs this case")
        result["fwd"] = _summary_of(timed({**impls, **sdpa}, case.flops("fwd"), rounds, rep_ms), errors)
        result["fwd"]["op_runs"] = pick_kernel(case.seq, case.head_dim, case.causal, case.gqa).__name__
    if "bwd" in dirs:
        ref = reference(case, q, k, v, do, True)
        leaves = [x.detach().requires_grad_() for x in (q, k, v)]
        o = attention_op(*leaves, causal=case.causal, enable_gqa=case.gqa)
        o.backward(do, retain_graph=True)
        errors = {OP: checked(case, OP, (o, *(x.grad for x in leaves)), ref)}
        forwards = {OP: o, **{name: fn() for name, fn in sdpa_variants(*leaves, case.causal, case.gqa).items()}}
        if len(forwards) == 1:
            raise RuntimeError(f"{case.label}: no SDPA backend runs this case's backward")
        impls = {name: (lambda out=out: out.backward(do, retain_graph=True)) for name, out in forwards.items()}
        tflops = timed(impls, case.flops("bwd"), rounds, rep_ms, grad_to_none=leaves)
        result["bwd"] = _summary_of(tflops, errors)
    return result


def _label(result: dict) -> str:
    return Case(*(result[f] for f in Case._fields)).label


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(results: list[dict], dirs: tuple[str, ...], out: str, env: dict) -> dict:
    """Print a table per direction and the geometric means; write the PNG and the JSON. Returns the summary."""
    summary = {}
    for direction in dirs:
        columns = list(dict.fromkeys(n for r in results for n in r[direction]["tflops"]))
        headers = ["case", "B x Hq/Hkv", *columns, "fastest SDPA", f"{OP} / SDPA"]
        rows = [(_label(r), f"{r['batch']} x {r['heads']}/{r['kv_heads']}",
                 *(r[direction]["tflops"].get(n, "-") for n in columns), r[direction]["sdpa_backend"],
                 r[direction]["ratio"]) for r in results]
        print(f"\n## Flash-attention {'forward' if direction == 'fwd' else 'backward'} TFLOPS on {env['gpu']} "
              f"(torch {env['torch']}, triton {env['triton']})")
        print(table(headers, rows))
        for group, keep in [(f"d{d}", lambda r, d=d: r["head_dim"] == d and not r["gqa"])
                            for d in sorted({r["head_dim"] for r in results})] + [("gqa", lambda r: r["gqa"])]:
            ratios = [r[direction]["ratio"] for r in results if keep(r)]
            if ratios:
                summary[f"{direction} {group} {OP} / SDPA geomean"] = geomean(ratios)
    print("\n" + "\n".join(f"{k}: {v:.3f}" for k, v in summary.items()))
    series = {f"{d}: {OP} / SDPA": [r[d]["ratio"] for r in results] for d in dirs}
    png = bar_plot(f"{out}/attention.png", "Flash attention vs SDPA (fastest backend)", [_label(r) for r in results],
                   series, "ratio of TFLOPS")
    print(f"\nplot: {png}")
    print(f"json: {save_json(f'{out}/attention.json', {'env': env, 'summary': summary, 'cases': results})}")
    return summary


def main(out: str, only: str = "", direction: str = "both") -> int:
    import torch
    import triton
    from tqdm import tqdm
    cases, dirs = select(only), directions(direction)
    results = []
    bar = tqdm(cases, unit="case")
    for case in bar:
        bar.set_description(case.label)
        results.append(run_case(case, dirs))
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    report(results, dirs, out, env)
    return 0
