"""Kernels written with TLX, as a TLX user writes them: GEMMs, attention, and TriMul's kernels (its
nn.Module, which calls the torch op, is ``tritium.ops.TriMul``)."""
