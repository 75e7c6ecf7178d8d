"""Helpers of the fork's ``triton.language.extra.tlx.warp_spec`` module that its kernels import."""
import triton
import triton.language as tl


@triton.jit
def get_bufidx_phase(accum_cnt, NUM_BUFFERS: tl.constexpr):
    """Slot and barrier phase of the ``accum_cnt``-th use of a ring of ``NUM_BUFFERS`` buffers.

    The slot cycles through the ring; the phase flips (0, 1, 0, ...) each time the ring wraps, which
    is the parity a consumer waits for on that slot's barrier.
    """
    return accum_cnt % NUM_BUFFERS, (accum_cnt // NUM_BUFFERS) & 1
