"""tritium.ops.TriMul on a Hopper GPU against the fp32 reference (TF32 off): every test case of the
GPU MODE trimul task (docs: targets.md; normal and Cauchy, with and without mask, batch 1 and 2) and the
ranked ones, |y - ref| <= 2e-2 + 2e-2 |ref| with NaN/inf in the same places; an inf in x propagating
like the reference's; torch.compile(fullgraph=True) with inductor."""
import pytest

torch = pytest.importorskip("torch")

from tritium.ops import TriMul  # noqa: E402
from tritium.kernels.trimul_reference import (RANKED_CASES, TEST_CASES, Case, check_close,  # noqa: E402
                                              make_inputs, reference_model)

from gemm_check import hopper_only  # noqa: E402,F401  (the fixture applies here)

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def strict_fp32():
    """The reference in true fp32 (no TF32 matmuls), as the task's checker computes it."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    yield
    torch.backends.cuda.matmul.allow_tf32 = saved[0]
    torch.set_float32_matmul_precision(saved[1])


def _run(case: Case, seed: int, x=None, mask=None):
    ref = reference_model(case, seed, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    if x is None:
        x, mask = make_inputs(case, seed + 1, "cuda")
    with torch.no_grad():
        got = fused(x, mask)
        torch.cuda.synchronize()
        want = ref(x, mask)
    return got, want


@pytest.mark.parametrize("case", TEST_CASES + RANKED_CASES, ids=lambda c: c.label)
def test_matches_the_fp32_reference(case):
    got, want = _run(case, 1234)
    assert got.dtype == torch.float32 and got.shape == want.shape
    assert torch.isfinite(want).all()  # the task's inputs: the reference itself never overflows
    assert check_close(got, want) is None, check_close(got, want)


def test_inf_in_x_spreads_nan_like_the_reference():
    case = Case(64, 2, 128, False, "normal")
    x, mask = make_inputs(case, 7, "cuda")
    x[1, 3, 5, 7] = float("inf")
    got, want = _run(case, 6, x, mask)
    assert (~torch.isfinite(want)).any()
    assert check_close(got, want) is None, check_close(got, want)


def test_torch_compile_fullgraph_inductor():
    case = Case(128, 2, 256, False, "cauchy")
    ref = reference_model(case, 3, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 4, "cuda")
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fused, fullgraph=True)(x, mask)
        want = ref(x, mask)
    torch._dynamo.reset()
    assert check_close(got, want) is None, check_close(got, want)


@pytest.mark.parametrize("case", [Case(64, 2, 128, True, "cauchy"), Case(256, 1, 384, False, "normal"),
                                  Case(80, 1, 128, True, "normal")], ids=lambda c: c.label)
def test_incoming_matches_its_formula(case):
    ref = reference_model(case, 31, "cuda")
    ref_in = type(ref)(case.dim, 128, "incoming").cuda()
    ref_in.load_state_dict(ref.state_dict())
    fused = TriMul(case.dim, direction="incoming").cuda()
    fused.load_state_dict(ref.state_dict())
    x, mask = make_inputs(case, 32, "cuda")
    with torch.no_grad():
        got, want = fused(x, mask), ref_in(x, mask)
    assert check_close(got, want) is None, check_close(got, want)


def _fused(case, seed):
    ref = reference_model(case, seed, "cuda")
    fused = TriMul(case.dim).cuda()
    fused.load_state_dict(ref.state_dict())
    return fused, ref


def test_small_calls_replay_a_graph_on_fresh_inputs():
    """A loop whose fresh inputs and outputs reuse their addresses replays one captured graph; every call's
    output is its own input's, whatever the addresses were when the graph was captured."""
    from tritium.kernels import trimul as kernels
    case = Case(64, 2, 128, False, "normal")
    fused, ref = _fused(case, 41)
    kernels._graphs.graphs.clear()
    with torch.no_grad():
        for i in range(5):
            x, mask = make_inputs(case, 100 + i, "cuda")
            got = fused(x, mask)
            assert check_close(got, ref(x, mask)) is None, (i, check_close(got, ref(x, mask)))
            del x, mask, got
    assert len(kernels._graphs.graphs) >= 1


def test_kept_outputs_and_new_addresses_stay_correct():
    """Outputs the caller keeps are never overwritten by a later replay, and a call at new addresses does not
    replay another call's graph."""
    case = Case(64, 1, 128, True, "normal")
    fused, ref = _fused(case, 43)
    with torch.no_grad():
        inputs = [make_inputs(case, 200 + i % 3, "cuda") for i in range(6)]  # three distinct inputs, twice
        outs = [fused(x, mask) for x, mask in inputs]
        for (x, mask), got in zip(inputs, outs):
            assert check_close(got, ref(x, mask)) is None


def test_inside_a_callers_graph_and_on_a_side_stream():
    case = Case(64, 2, 128, True, "normal")
    fused, ref = _fused(case, 45)
    x, mask = make_inputs(case, 300, "cuda")
    with torch.no_grad():
        fused(x, mask)  # compiles
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = fused(x, mask)
        x2, mask2 = make_inputs(case, 301, "cuda")
        x.copy_(x2)
        mask.copy_(mask2)
        graph.replay()
        torch.cuda.synchronize()
        assert check_close(y, ref(x2, mask2)) is None, check_close(y, ref(x2, mask2))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            outs = [fused(x2, mask2) for _ in range(3)]
        torch.cuda.current_stream().wait_stream(side)
        for got in outs:
            assert check_close(got, ref(x2, mask2)) is None


@pytest.mark.parametrize("C, H, out_dtype", [(128, 128, torch.float16), (384, 128, torch.bfloat16),
                                             (768, 64, torch.float16), (1536, 128, torch.float16)])
def test_pack_kernel_equals_pack_weights_bit_for_bit(C, H, out_dtype):
    """The pack kernel on the GPU (fp fusion off, roundings on the bits) against pack_weights on the same GPU."""
    from tritium.kernels.trimul_pack import Packer
    from tritium.kernels.trimul_reference import TriMulReference
    from tritium.ops.trimul import PROJECTIONS, pack_weights
    torch.manual_seed(C + H)
    ref = TriMulReference(C, H).cuda()
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
    weights = {name: p.detach() for name, p in ref.named_parameters()}
    want = pack_weights(weights, out_dtype)
    got = [torch.full_like(t, float("nan")) for t in want]
    names = [f"{n}.weight" for n in PROJECTIONS] + ["norm.weight", "norm.bias", "to_out.weight"]
    packer = Packer([weights[n] for n in names], *got)
    for _ in range(2):  # through the JIT, then straight through the compiled launcher
        packer()
        torch.cuda.synchronize()
        for g, w in zip(got, want):
            assert torch.equal(g, w), (g.float() - w.float()).abs().max()
        for g in got:
            g.fill_(float("nan"))


def test_data_writes_are_followed_while_the_graph_replays(monkeypatch):
    """A small call replays its CUDA graph at one address; ``.data`` writes to a projection weight, the input
    norm's weight and to_out's weight (an EMA update's) are in the next calls' outputs, through a graph
    captured before the writes (the packed buffers keep their addresses; the pack kernel is the replay's
    first launch). The references are computed first, and no output is kept across a call, so that the caching
    allocator hands every call the same output address."""
    from tritium.kernels import trimul as kernels
    case = Case(64, 1, 128, True, "normal")
    fused, ref = _fused(case, 47)
    new = reference_model(case, 48, "cuda")
    x, mask = make_inputs(case, 49, "cuda")
    names = ("left_proj.weight", "norm.weight", "to_out.weight")
    refs, news = dict(ref.named_parameters()), dict(new.named_parameters())
    with torch.no_grad():
        wants = [ref(x, mask)]
        for name in names:
            refs[name].data.mul_(0.5).add_(news[name].data, alpha=0.5)
            wants.append(ref(x, mask))
    kernels._graphs.graphs.clear()
    replays = []  # per call: (replayed, without a new capture)
    replay = kernels._graphs.replay

    def spy(*args):
        before = set(kernels._graphs.graphs)
        replayed = replay(*args)
        replays.append((replayed, set(kernels._graphs.graphs) <= before))
        return replayed

    monkeypatch.setattr(kernels._graphs, "replay", spy)
    params = dict(fused.named_parameters())
    with torch.no_grad():
        for _ in range(8):  # compiles, captures, replays
            assert check_close(fused(x, mask), wants[0]) is None
            if replays[-1] == (True, True):
                break
        assert replays[-1] == (True, True)
        buffers = [t.data_ptr() for t in fused.packed_weights()]
        for name, want, old in zip(names, wants[1:], wants):
            params[name].data.mul_(0.5).add_(news[name].data, alpha=0.5)
            assert check_close(old, want) is not None, name  # the write matters
            del replays[:]
            for _ in range(2):
                error = check_close(fused(x, mask), want)
                assert error is None, (name, error)
            assert replays == [(True, True)] * 2, (name, replays)
        assert [t.data_ptr() for t in fused.packed_weights()] == buffers
