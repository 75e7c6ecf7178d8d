"""TLX's llvm_fn_attrs option (tlx/fn_attrs.py): LLVM function attributes on AMD kernels, as the fork's backend
sets them; compiled for gfx950 and gfx942, no GPU."""
import re

import pytest
import triton
import triton.language as tl

import tritium.tlx  # noqa: F401  (registers the plugin that declares the option)
from tritium.plugins import ArgumentError
from triton.compiler.compiler import make_backend
from tritium.plugins.inspection import compile_kernel, parse_target
from tritium import compat
from tritium.tlx.fn_attrs import for_this_llvm, parse_fn_attrs, set_fn_attrs


@triton.jit
def scale(x, y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y + offs, tl.load(x + offs) * 2.0)


def compiled(target, **options):
    return compile_kernel(scale, {"x": "*fp32", "y": "*fp32"}, target, constexprs={"N": 256}, options=options)


def kernel_attrs(llir):
    group = re.search(r"^define amdgpu_kernel .*#(\d+)", llir, re.M)[1]
    return re.search(rf"^attributes #{group} = \{{(.*)\}}$", llir, re.M)[1]


@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_attributes_reach_the_kernel_and_its_code(target):
    bare = compiled(target)
    named = compiled(target, llvm_fn_attrs="amdgpu-sched-strategy=iterative-ilp, triton-bare-attr")
    attrs = kernel_attrs(named.asm["llir"])
    assert '"amdgpu-sched-strategy"="iterative-ilp"' in attrs and re.search(r'"triton-bare-attr"(?!=)', attrs)
    assert "iterative-ilp" not in bare.asm["llir"] and named.hash != bare.hash
    # a value with a comma goes as a pair; it replaces the backend's own, and the code object says so
    wide = compiled(target, llvm_fn_attrs=(("amdgpu-flat-work-group-size", "1,1024"),))
    assert kernel_attrs(wide.asm["llir"]).count("amdgpu-flat-work-group-size") == 1
    assert re.findall(r"\.max_flat_workgroup_size:\s*(\d+)", bare.asm["amdgcn"]) == ["256"]
    assert re.findall(r"\.max_flat_workgroup_size:\s*(\d+)", wide.asm["amdgcn"]) == ["1024"]


def test_values_are_checked_and_the_option_is_amd_only():
    assert parse_fn_attrs("a=1, b,c=x,") == (("a", "1"), ("b", ""), ("c", "x"))
    assert parse_fn_attrs([("a", "0,0")]) == (("a", "0,0"),)
    with pytest.raises(ArgumentError, match="option llvm_fn_attrs: not a compile option of the cuda backend"):
        compiled("sm90", llvm_fn_attrs="a=1")
    if hasattr(make_backend(parse_target("gfx950")).parse_options({}), "llvm_fn_attrs"):
        return  # Triton 3.8+: the AMD backend's own option, checked (or not) by Triton
    with pytest.raises(ArgumentError, match=r"option 'llvm_fn_attrs' of plugin 'tlx': expected \(key, value\) pairs"):
        compiled("gfx950", llvm_fn_attrs=(("a",),))


def test_the_kernel_gets_a_group_of_its_own():
    llir = ('define amdgpu_kernel void @k() #0 {\n  call void @f()\n  ret void\n}\n'
            'define void @f() #0 {\n  ret void\n}\nattributes #0 = { nounwind "x"="1" }\n')
    out = set_fn_attrs(llir, (("x", "2"), ("y", "")))
    assert "define amdgpu_kernel void @k() #1 {" in out and "define void @f() #0 {" in out
    assert out.endswith('attributes #1 = { nounwind "x"="2" "y" }\n') and 'attributes #0 = { nounwind "x"="1" }' in out


@pytest.mark.skipif(compat.TRITON_VERSION > (3, 6), reason="Triton 3.6's LLVM: one number for amdgpu-agpr-alloc")
def test_an_equal_pair_is_one_number_for_the_llvm_of_triton_3_6():
    assert for_this_llvm((("amdgpu-agpr-alloc", "0,0"), ("x", "1,2"))) == (("amdgpu-agpr-alloc", "0"), ("x", "1,2"))
    with pytest.raises(ValueError, match="amdgpu-agpr-alloc='0,8': the LLVM of Triton 3.6.0 reads one number"):
        for_this_llvm((("amdgpu-agpr-alloc", "0,8"),))
