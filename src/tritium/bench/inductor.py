"""torch.compile of bf16 transformer blocks with ``tritium.ops.use_kernels`` on and off, same run, same data.

A block: pre-norm causal self-attention (a fused QKV projection, SDPA, an output projection) and an MLP
(up projection, GELU, down projection), weights stored [in, out] so that Inductor's GEMMs read both
operands row-major. Two models, one for each kind of kernel the switch may pick:

* ``small``: 8 blocks over 256 tokens, hidden 256 (2 heads of 128): every GEMM is in the plan's small
  class, the one where tritium's GEMM beats cuBLAS as bare calls; the rule
  (:func:`tritium.ops.plans.at_least_cublas`) leaves them to cuBLAS, since this model ran 1.4% slower with
  them under CUDA graphs (eight blocks make the replay GPU-bound, so that the kernels' time shows);
  attention at 256 tokens stays SDPA's;
* ``long``: one block over 8192 tokens, hidden 2048 (16 heads of 128): SDPA goes to tritium's attention
  (head dim 128, 8192 tokens); the GEMMs are large and stay cuBLAS's.

Each runs in both of Inductor's modes that matter here, ``default`` and ``reduce-overhead`` (CUDA
graphs; ``--only default`` or ``--only graphs`` runs one). Each is compiled under ``torch.no_grad()``
with the switch off, then on (``torch._dynamo.reset()`` between), its output checked against the
switch-off output, and the names of tritium's ops looked up in Inductor's output code. Time: median ms of
``triton.testing.do_bench``, best of two rounds, right after each compilation (not interleaved: see
:func:`compiled_run`), after an untimed compilation that starts Inductor's workers. Writes a table,
``inductor.json`` and ``inductor.png``. Where the switch changed nothing (no tritium op in the code), both
runs are the same code and their ratio is the spread of two compilations: the table says "same code".
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .report import save_json, table

#: tritium's op names as Inductor's output code calls them.
OP_NAMES = ("torch.ops.tritium.matmul", "torch.ops.tritium._attention_inference")


class Size(NamedTuple):
    name: str
    batch: int
    seq: int
    heads: int
    layers: int = 1
    head_dim: int = 128

    @property
    def hidden(self) -> int:
        return self.heads * self.head_dim


SIZES = (Size("small", 1, 256, 2, layers=8), Size("long", 1, 8192, 16))


def make_block(size: Size, device: str = "cuda", seed: int = 0) -> Any:
    """``size.layers`` transformer blocks of the module docstring, bf16, on ``device``."""
    import torch
    generator = torch.Generator().manual_seed(seed)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            C = size.hidden

            def weight(i: int, o: int) -> torch.nn.Parameter:
                return torch.nn.Parameter((torch.randn(i, o, generator=generator) / i ** 0.5).to(torch.bfloat16))

            self.norm1, self.norm2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)
            self.w_qkv, self.w_out = weight(C, 3 * C), weight(C, C)
            self.w_up, self.w_down = weight(C, 4 * C), weight(4 * C, C)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            B, S, C = x.shape
            h = self.norm1(x).reshape(B * S, C)
            q, k, v = (h @ self.w_qkv).split(C, dim=-1)
            q, k, v = (t.reshape(B, S, size.heads, size.head_dim).transpose(1, 2) for t in (q, k, v))
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + (a.transpose(1, 2).reshape(B * S, C) @ self.w_out).reshape(B, S, C)
            h = self.norm2(x).reshape(B * S, C)
            return x + (torch.nn.functional.gelu(h @ self.w_up) @ self.w_down).reshape(B, S, C)

    model = torch.nn.Sequential(*(Block() for _ in range(size.layers)))
    return model.to(device=device, dtype=torch.bfloat16)


def compiled_run(block: Any, x: Any, kernels: bool, mode: str = "default",
                 time: bool = False) -> tuple[Any, str, float]:
    """``(output of the compiled block on x, Inductor's output code, median ms or nan)`` with the switch ``kernels``.

    Timed here, before the next compilation: Dynamo keeps one cache per code object and the switch is no
    guard of it, so after ``torch._dynamo.reset()`` and a compilation with the switch on, a block compiled
    with it off would run the new code (and the two timings would be of the same graph)."""
    import torch
    from torch._inductor.utils import run_and_get_code
    from triton.testing import do_bench

    from ..ops import use_kernels
    torch._dynamo.reset()
    previous = use_kernels(mm=kernels, attention=kernels)
    try:
        fn = torch.compile(block, mode=None if mode == "default" else mode)
        with torch.no_grad():
            out, code = run_and_get_code(fn, x)
            out = out.clone()  # under CUDA graphs the next replay overwrites the graph's output
            ms = min(do_bench(lambda: fn(x), warmup=25, rep=200, return_mode="median") for _ in range(2)) \
                if time else float("nan")
    finally:
        use_kernels(mm=previous.mm, attention=previous.attention)
        torch._dynamo.reset()
    return out, "\n".join(code), ms


def run_size(size: Size, mode: str) -> dict:
    import torch

    block = make_block(size)
    x = torch.randn(size.batch, size.seq, size.hidden, device="cuda", dtype=torch.bfloat16)
    off_out, off_code, off_ms = compiled_run(block, x, False, mode, time=True)
    on_out, on_code, on_ms = compiled_run(block, x, True, mode, time=True)
    err = ((on_out.float() - off_out.float()).norm() / off_out.float().norm()).item()
    if not err < 2e-2:
        raise AssertionError(f"{size.name} ({mode}): switch on differs from switch off, relative error {err:.2e}")
    ms = {"off": off_ms, "on": on_ms}
    return {"size": size.name, "mode": mode, "layers": size.layers, "tokens": size.batch * size.seq,
            "hidden": size.hidden,
            "ms_off": ms["off"], "ms_on": ms["on"], "speedup": ms["off"] / ms["on"], "rel_err": err,
            "tritium_ops": [n for n in OP_NAMES if n in on_code],
            "off_has_tritium": any(n in off_code for n in OP_NAMES)}


MODES = {"default": ("default", ), "graphs": ("reduce-overhead", ), "": ("default", "reduce-overhead")}


def main(out: str, only: str = "") -> int:
    import torch
    import triton
    from tqdm import tqdm

    from .report import bar_plot
    runs = [(size, mode) for mode in MODES[only] for size in SIZES]
    # Untimed first: Inductor starts its compile workers and warms its caches here, not under the first timing
    # (a first switch-off run measured 2.22 ms against 1.85 for the same code compiled second).
    warm = SIZES[0]
    compiled_run(make_block(warm), torch.randn(warm.batch, warm.seq, warm.hidden, device="cuda", dtype=torch.bfloat16),
                 False, MODES[only][0])
    results = [run_size(size, mode) for size, mode in tqdm(runs, desc="bench inductor", unit="model")]
    print(f"## torch.compile of bf16 transformer blocks, tritium.ops.use_kernels off / on, "
          f"{torch.cuda.get_device_name()} (torch {torch.__version__}, triton {triton.__version__})")
    headers = ["model", "mode", "blocks x tokens x hidden", "off ms", "on ms", "off / on", "rel. error",
               "tritium ops in code"]
    print(table(headers,
                [(r["size"], r["mode"], f"{r['layers']} x {r['tokens']} x {r['hidden']}", r["ms_off"], r["ms_on"],
                  r["speedup"], f"{r['rel_err']:.1e}", ", ".join(r["tritium_ops"]) or "none (same code)")
                 for r in results]))
    print(f"\njson: {save_json(f'{out}/inductor.json', results)}")
    print("plot: " + bar_plot(f"{out}/inductor.png", "torch.compile, use_kernels off / on (higher: on is faster)",
                              [f"{r['size']} {r['mode']}" for r in results],
                              {"off / on": [r["speedup"] for r in results]}, "speed-up"))
    return 0
