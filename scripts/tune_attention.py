"""Time the pipelined attention kernel over a few tile configs, against SDPA, on one GPU (about 3 minutes).

Usage: python scripts/tune_attention.py [seq] [dtype]   (defaults: 4096 fp16)
Prints TFLOPS per (head dim, causal, config) and the ratio to SDPA's fastest backend; the default
configs (``attention_ws_hopper.CONFIGS``) are marked with ``*``. Shapes as in ``tritium bench attention``.
"""
import sys

from triton.testing import do_bench

from tritium.bench.attention import Case, sdpa_variants
from tritium.kernels.attention_ws_hopper import CONFIGS, Config
from tritium.kernels.attention_ws_pipelined_hopper import attention_ws_pipelined

SEQ = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
DTYPE = sys.argv[2] if len(sys.argv) > 2 else "fp16"
CANDIDATES = {64: [Config(128, 128, 2, 232), Config(128, 128, 3, 232), Config(128, 128, 4, 240),
                   Config(128, 64, 4, 232)],
              128: [Config(128, 128, 2, 232), Config(128, 128, 2, 240), Config(128, 128, 3, 240),
                    Config(128, 64, 3, 232)]}

for head_dim, configs in CANDIDATES.items():
    for causal in (False, True):
        case = Case(DTYPE, head_dim, causal, SEQ)
        q, k, v, _ = case.inputs()
        sdpa = max(case.flops() / do_bench(fn, rep=100, return_mode="median") * 1e-9
                   for fn in sdpa_variants(q, k, v, causal).values())
        ref = attention_ws_pipelined(q, k, v, causal=causal).float()
        for cfg in configs:
            out = attention_ws_pipelined(q, k, v, causal=causal, config=cfg)
            assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2, cfg
            ms = do_bench(lambda: attention_ws_pipelined(q, k, v, causal=causal, config=cfg), rep=100,
                          return_mode="median")
            tflops = case.flops() / ms * 1e-9
            mark = "*" if cfg == CONFIGS[head_dim] else " "
            print(f"{case.label:28s} {mark} {cfg}  {tflops:7.1f} TFLOPS  SDPA {sdpa:7.1f}  ratio {tflops / sdpa:.3f}",
                  flush=True)
