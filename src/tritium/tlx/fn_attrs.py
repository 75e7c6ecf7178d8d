"""``llvm_fn_attrs=``, the fork's AMD compile option, as a TLX plugin option: LLVM function attributes set on
the kernel, e.g. ``kernel[grid](..., llvm_fn_attrs="amdgpu-sched-strategy=iterative-ilp")``.

The value is comma-separated ``key=value`` or bare ``key`` entries, or a sequence of ``(key, value)`` pairs
(for values with commas: ``(("amdgpu-agpr-alloc", "0,0"),)``); a bare key is a valueless attribute. As in the
fork's backend, an attribute the backend set already is replaced. It applies to every kernel compiled for AMD
with the option, TLX ops or not. Triton 3.8+ declares the same option in its AMD backend (same syntax), and
then applies it itself: the plugin's declaration steps aside (the backend's field wins) and so does the pass.
"""
from __future__ import annotations

import re
from typing import Any

import triton

from tritium import compat
from tritium.plugins import Pipeline, PluginOption, text_pass


def parse_fn_attrs(value: Any) -> tuple[tuple[str, str], ...]:
    """The option's value as ``((key, value), ...)`` (what the pass reads and the cache key holds)."""
    if isinstance(value, str):
        pairs = [entry.partition("=")[::2] for entry in value.split(",") if entry.strip()]
    else:
        pairs = []
        for item in value:
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(s, str) for s in item)):
                raise ValueError(f"expected (key, value) pairs of strings, got {item!r}")
            pairs.append(tuple(item))
    for key, _ in pairs:
        if not key or '"' in key:
            raise ValueError(f"{key!r} is not an LLVM attribute name")
    return tuple((k.strip(), v.strip()) for k, v in pairs)


LLVM_FN_ATTRS = PluginOption(
    "llvm_fn_attrs", (str, tuple, list), default=(), targets=("hip",), convert=parse_fn_attrs,
    help="LLVM function attributes for the kernel: 'key=value,key' or ((key, value), ...), as the fork's AMD backend")

#: ``define ... @kernel(...) ... #N {``: the kernel is the one function the AMD backend marks amdgpu_kernel.
_KERNEL_DEFINE = re.compile(r"^(define\b[^\n]*\bamdgpu_kernel\b[^\n]*?)#(\d+)([^\n]*\{)$", re.M)
_GROUP = r"^attributes #{} = \{{(.*)\}}$"
#: One attribute in a group: ``"key"="value"``, ``"key"``, ``key(args)`` or ``key``.
_ATTR = re.compile(r'"(?:[^"\\]|\\.)*"(?:="(?:[^"\\]|\\.)*")?|[\w-]+(?:\([^)]*\))?(?:=\S+)?')


def _attr_name(token: str) -> str:
    return token[1:].split('"', 1)[0] if token.startswith('"') else re.split(r"[(=]", token, 1)[0]


def set_fn_attrs(llir: str, attrs: tuple[tuple[str, str], ...]) -> str:
    """``llir`` with ``attrs`` set on its kernel function, in an attribute group of its own."""
    define = _KERNEL_DEFINE.search(llir)
    if define is None:
        raise ValueError("no amdgpu_kernel function in the LLVM IR")
    group = re.search(_GROUP.format(define[2]), llir, re.M)
    if group is None:
        raise ValueError(f"the kernel's attribute group #{define[2]} is missing from the LLVM IR")
    names = {k for k, _ in attrs}
    kept = [t for t in _ATTR.findall(group[1]) if _attr_name(t) not in names]
    added = [f'"{k}"="{v}"' if v else f'"{k}"' for k, v in attrs]
    number = max(int(n) for n in re.findall(r"^attributes #(\d+) =", llir, re.M)) + 1
    llir = f"{llir[:define.start(2)]}{number}{llir[define.end(2):]}"
    return f"{llir.rstrip()}\nattributes #{number} = {{ {' '.join(kept + added)} }}\n"


#: Attributes that newer LLVMs read as ``min,max`` and the LLVM of Triton 3.6 as one number: handed a pair,
#: its AMDGPU backend crashes (segfaults) while compiling the kernel.
PAIR_ATTRS = ("amdgpu-agpr-alloc", )


def for_this_llvm(attrs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``attrs`` in the form this Triton's LLVM reads: on 3.6, an equal pair ``n,n`` of :data:`PAIR_ATTRS`
    becomes ``n`` (the same bounds); an unequal one, which it cannot express, is refused."""
    if compat.TRITON_VERSION > (3, 6):
        return attrs
    out = []
    for key, value in attrs:
        if key in PAIR_ATTRS and "," in value:
            low, _, high = (v.strip() for v in value.partition(","))
            if low != high:
                raise ValueError(f"llvm_fn_attrs: {key}={value!r}: the LLVM of Triton {triton.__version__} reads one "
                                 f"number here (a min,max pair crashes its AMDGPU backend); give one value")
            value = low
        out.append((key, value))
    return tuple(out)


@text_pass("llir", name="tlx.llvm_fn_attrs")
def apply_fn_attrs(llir: str, ctx: Any) -> str:
    if LLVM_FN_ATTRS.name not in compat.plugin_option_fields(ctx.options):
        return llir  # Triton's backend declares the option and has applied it
    return set_fn_attrs(llir, for_this_llvm(LLVM_FN_ATTRS.value(ctx.options)))


def fn_attrs_pipeline() -> Pipeline:
    """Applies where a compile was given the option (it is in the compile's metadata only then)."""
    return Pipeline("tlx-llvm-fn-attrs", when=lambda src, metadata: bool((metadata or {}).get("llvm_fn_attrs"))) \
        .insert("llir", apply_fn_attrs, at="end")
