"""tritium.ops.matmul on a Hopper GPU: numerics against a float64 reference for the issue's shapes (the
heuristic's pick, and every kernel it can pick on the ragged ones), both layouts of B, the direct
launch path against the JIT path, torch.compile(fullgraph=True) with inductor, and gradcheck."""
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from tritium.kernels import gemm_splitk_hopper as splitk  # noqa: E402
from tritium.ops import gemm, launch, plans  # noqa: E402
from tritium.ops import matmul  # noqa: E402
from tritium.ops.plans import WSConfig  # noqa: E402

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu

SEEDS = [(128, 13312, 16384), (16384, 8192, 8192), (8192, 16384, 8192), (8192, 53248, 8192), (8192, 28672, 4096),
         (8192, 8192, 8192)]
SQUARES = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)]
RAGGED = [(1, 1, 1), (1000, 1000, 1000), (4097, 4095, 513), (300, 200, 1), (77, 5000, 3000)]


def _operands(M, N, K, dtype, b_transposed):
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=gen)
    if b_transposed:
        return a, torch.randn(N, K, device="cuda", dtype=dtype, generator=gen).t()
    return a, torch.randn(K, N, device="cuda", dtype=dtype, generator=gen)


def _check(c, a, b, dtype, out_dtype=None):
    M, N = a.shape[0], b.shape[1]
    assert c.shape == (M, N) and c.dtype == (out_dtype or dtype) and c.is_contiguous() and torch.isfinite(c).all()
    ref = a.double() @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"{M}x{N}x{a.shape[1]}: relative error {err:.2e}"


@pytest.mark.parametrize("b_transposed", [False, True], ids=["B-row-major", "B-transposed"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K", SEEDS + SQUARES + RAGGED)
def test_matches_float64(M, N, K, dtype, b_transposed):
    a, b = _operands(M, N, K, dtype, b_transposed)
    _check(matmul(a, b), a, b, dtype)
    _check(matmul(a, b), a, b, dtype)  # second call: the direct launch


@pytest.mark.parametrize("plan", [plans.Plan("small", plans.SMALL_TILE), plans.Plan("pingpong", plans.pingpong.LARGE),
                                  plans.Plan("pingpong", plans.pingpong.SMALL),
                                  plans.Plan("cooperative", plans.coop.LARGE),
                                  plans.Plan("cooperative", plans.coop.SMALL),
                                  plans.Plan("splitk", replace(splitk.DEFAULT, SPLIT_K=3)), plans.LARGE_PLAN,
                                  plans.Plan("dualk", plans.dualk.DEFAULT),
                                  plans.Plan("dualk", WSConfig(BM=64, BN=64, NUM_STAGES=4, EPILOGUE_SUBTILES=1)),
                                  plans.Plan("small", plans.TINY_TILE)],
                         ids=lambda p: f"{p.kernel}-{getattr(p.config, 'BM', None) or p.config.BLOCK_SIZE_M}x"
                                       f"{getattr(p.config, 'BN', None) or p.config.BLOCK_SIZE_N}-s{p.config.NUM_STAGES}")
@pytest.mark.parametrize("M,N,K", [(1000, 1000, 1000), (4097, 4095, 514), (1, 1, 2), (128, 1536, 4096)])
def test_every_plan(plan, M, N, K):
    a, b = _operands(M, N, K, torch.bfloat16, False)
    for _ in range(2):  # JIT launch, then direct launch
        _check(gemm.run_plan(plan, a, b, torch.bfloat16), a, b, torch.bfloat16)
    _check(gemm.run_plan(plan, a, b, torch.float32), a, b, torch.bfloat16, torch.float32)


def test_direct_launches_are_cached_and_follow_new_pointers():
    launch.clear_caches()
    gemm._calls.clear()
    a, b = _operands(2048, 2048, 2048, torch.float16, False)
    first = matmul(a, b)
    assert len(launch._calls) == 1 and len(gemm._calls) == 1
    call = next(iter(launch._calls.values()))
    assert len(call.compiled) == 1  # the first launch went through the JIT and kept its compiled kernel
    a2, b2 = _operands(2048, 2048, 2048, torch.float16, True)
    b2 = b2.contiguous()
    second = matmul(a2, b2)  # same key, new addresses: new descriptors, same compiled kernel
    assert len(launch._calls) == 1 and len(call.compiled) == 1
    # The first call went through the JIT (host TensorDescriptors), so only direct launches fill the cache.
    descriptors = next(iter(call.compiled.values())).descriptors.slots
    assert set(descriptors[0]) == {a2.data_ptr()} and set(descriptors[1]) == {b2.data_ptr()}
    third = matmul(a, b)  # the first operands again, now launched directly: both addresses are cached
    assert len(launch._calls) == 1 and len(call.compiled) == 1
    assert set(descriptors[0]) == {a.data_ptr(), a2.data_ptr()} and set(descriptors[1]) == {b.data_ptr(), b2.data_ptr()}
    _check(first, a, b, torch.float16)
    _check(second, a2, b2, torch.float16)
    _check(third, a, b, torch.float16)


def test_torch_compile_fullgraph_inductor():
    a, b = _operands(1000, 1000, 1000, torch.bfloat16, False)

    def f(x, y):
        return torch.relu(matmul(x, y)) + 1

    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(a, b)
    ref = torch.relu((a.double() @ b.double())) + 1
    assert ((got.double() - ref).norm() / ref.norm()).item() < 1e-2
    torch._dynamo.reset()


def test_autograd_and_gradcheck():
    a, b = _operands(256, 128, 64, torch.float16, False)
    a.requires_grad_(True)
    b.requires_grad_(True)
    (matmul(a, b, out_dtype=torch.float32) ** 2).sum().backward()
    ra, rb = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ((ra @ rb) ** 2).sum().backward()
    for got, want in ((a.grad, ra.grad), (b.grad, rb.grad)):
        assert ((got.double() - want).norm() / want.norm()).item() < 1e-2
    # gradcheck on a tiny case: half-precision operands, so a coarse step and tolerance.
    x = torch.randn(4, 3, device="cuda", dtype=torch.float16, requires_grad=True)
    y = torch.randn(3, 5, device="cuda", dtype=torch.float16, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p, q: matmul(p, q, out_dtype=torch.float32), (x, y), eps=1e-1,
                                    atol=5e-2, rtol=5e-2)


def test_autotune_cache(tmp_path, monkeypatch):
    """A first call tunes (over three candidates here, to keep the test short) and records the winner."""
    monkeypatch.setenv("TRITIUM_GEMM_AUTOTUNE_CACHE", str(tmp_path / "tune.json"))
    every = plans.candidates
    monkeypatch.setattr(plans, "candidates", lambda *args: every(*args)[:3])
    plans.set_autotune(True)
    try:
        a, b = _operands(1024, 1024, 1024, torch.float16, False)
        _check(matmul(a, b), a, b, torch.float16)
        assert (tmp_path / "tune.json").exists()
        key = plans.cache_key(torch.cuda.get_device_name(), str(torch.float16), str(torch.float16), 1024, 1024, 1024)
        assert plans.cached_plan(key) is not None
    finally:
        plans.set_autotune(None)


def test_host_cost_is_measured():
    from tritium.bench.gemm import host_cost_us
    costs = host_cost_us(256, torch.float16, calls=200)
    assert set(costs) >= {"torch.matmul", "tritium.ops.matmul"} and all(v > 0 for v in costs.values())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("n", [256, 512, 1024, 2048])
def test_dependent_chain_under_programmatic_dependent_launch(n, dtype):
    """Problems up to 2048^3 launch with PDL, each kernel overlapping the previous one's tail: a chain of
    dependent GEMMs (each reads the previous output; the allocator hands freed outputs back) must match a
    float64 chain rounded per step, eager and replayed from a CUDA graph."""
    gen = torch.Generator(device="cuda").manual_seed(n)
    x0 = torch.randn(n, n, device="cuda", dtype=dtype, generator=gen)
    ws = [torch.randn(n, n, device="cuda", dtype=dtype, generator=gen) / n ** 0.5 for _ in range(12)]

    def chain(x):
        for w in ws:
            x = matmul(x, w)
        return x

    ref = x0.double()
    for w in ws:
        ref = (ref @ w.double()).to(dtype).double()
    assert launch.Call(plans.choose(n, n, n, launch.sm_count(x0.device)), x0, ws[0], dtype).pdl

    def error(y):
        return ((y.double() - ref).norm() / ref.norm()).item()

    assert error(chain(x0)) < 2e-2
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        chain(x0)  # warm up off the capture stream
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = chain(x0)
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        assert error(out) < 2e-2
