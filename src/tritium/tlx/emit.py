"""How TLX builtins put TritonGPU ops into a kernel that stock Triton is building as TTIR.

A ``@triton.jit`` kernel is built with a plain ``ir.builder``, which has no TritonGPU ops. A TLX op
therefore emits through a ``GluonOpBuilder`` on the same MLIR context, placed at the kernel
builder's insertion point and source location (:func:`gluon_builder`).

TTIR tensors carry no layout, TLX ops need explicit ones, and stock ``convert_to_ttgpuir`` cannot
mix the two: it leaves TritonGPU ops untouched, so a TritonGPU op consuming a tensor the conversion
re-types fails with "failed to legalize unresolved materialization" (docs/tlx-design.md). Every
crossing between the layout-free ``tl`` world and a TLX op is therefore a *bridge*: a ``tt.call`` to
a private function ``@__tlx_bridge_N`` whose type is ``(tensor<..>) -> tensor<.., #enc>`` or the
reverse. TTIR passes leave calls alone, the conversion re-types them like any Triton op, and
:func:`materialize_bridges` (run right after the conversion) turns each call into a plain
``ttg.convert_layout``, which stock layout passes then optimize away where possible.
"""
from __future__ import annotations

import functools
import importlib
import re
import sys
from typing import Any, Callable

import triton.language as tl
from triton._C.libtriton import gluon_ir, ir
from triton.compiler.code_generator import CodeGenerator
from triton.runtime.interpreter import InterpreterBuilder

#: Module attribute that marks a kernel using TLX ops; the TLX pipeline applies only to those.
TLX_MODULE_ATTR = "tlx.kernel"
BRIDGE_PREFIX = "__tlx_bridge_"


# --------------------------------------------------------------------------------------------
# Builtins: compile path or interpreter
# --------------------------------------------------------------------------------------------
def _interpreted(_semantic: Any) -> bool:
    return _semantic is None or isinstance(_semantic.builder, InterpreterBuilder)


def _interpreter_op(name: str) -> Callable[..., Any]:
    try:
        module = importlib.import_module("tritium.tlx.interpreter")
    except ImportError as e:
        raise NotImplementedError(f"tlx.{name}: the TLX interpreter is not available ({e})") from e
    fn = getattr(module, name, None)
    if fn is None:
        raise NotImplementedError(f"tlx.{name} is not implemented in the TLX interpreter")
    return fn


def tlx_builtin(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``fn(..., _semantic)`` a Triton builtin that runs the interpreter's version when interpreted.

    Marked by hand rather than with ``triton.language.core.builtin``, whose wrapper rejects the
    ``_semantic=None`` calls the interpreter makes.
    """

    @functools.wraps(fn)
    def op(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        if _interpreted(_semantic):
            return _interpreter_op(fn.__name__)(*args, **kwargs)
        return fn(*args, _semantic=_semantic, **kwargs)

    op.__triton_builtin__ = True
    return op


# --------------------------------------------------------------------------------------------
# Emitting into the kernel being built
# --------------------------------------------------------------------------------------------
def _code_generator(builder: Any) -> CodeGenerator:
    """The CodeGenerator driving ``builder`` (builtins only receive the builder; we need its module)."""
    cached = getattr(builder, "_tlx_codegen", None)
    if cached is not None:
        return cached
    frame = sys._getframe(1)
    while frame is not None:
        gen = frame.f_locals.get("self")
        if isinstance(gen, CodeGenerator) and gen.builder is builder:
            builder._tlx_codegen = gen
            return gen
        frame = frame.f_back
    raise RuntimeError("TLX ops can only be used inside a @triton.jit kernel being compiled")


def gluon_builder(_semantic: Any) -> gluon_ir.GluonOpBuilder:
    """A TritonGPU-capable builder positioned where the kernel builder is, on the same module.

    The first use also marks the module as a TLX kernel and gives it the ``ttg.*`` attributes that
    layout verification needs (``convert_to_ttgpuir`` later sets the same values).
    """
    b = _semantic.builder
    gen = _code_generator(b)
    g = getattr(b, "_tlx_gluon", None)
    if g is None:
        g = gluon_ir.GluonOpBuilder(gen.context)
        b._tlx_gluon = g
        opts = b.options
        mod = gen.module
        mod.set_attr(TLX_MODULE_ATTR, g.get_int32_attr(1))
        mod.set_attr("ttg.num-warps", g.get_int32_attr(opts.num_warps))
        mod.set_attr("ttg.num-ctas", g.get_int32_attr(opts.num_ctas))
        mod.set_attr("ttg.threads-per-warp", g.get_int32_attr(opts.warp_size))
    g.restore_insertion_point(b.get_insertion_point())
    g.set_loc(b.get_loc())
    return g


def bridge(_semantic: Any, g: gluon_ir.GluonOpBuilder, value: ir.value, dst_type: ir.type) -> ir.value:
    """Cross between the layout-free and laid-out worlds: ``value`` seen as ``dst_type`` (see module doc)."""
    gen = _code_generator(_semantic.builder)
    src_type = value.get_type()
    key = (str(src_type), str(dst_type))
    table = gen.__dict__.setdefault("_tlx_bridges", {})
    fn = table.get(key)
    if fn is None:
        fn = _bridge_function(gen, f"{BRIDGE_PREFIX}{len(table)}", src_type, dst_type)
        table[key] = fn
    return g.call(fn, [value]).get_result(0)


def _bridge_function(gen: CodeGenerator, name: str, src_type: ir.type, dst_type: ir.type) -> ir.function:
    """``@name(src) -> dst``, never inlined, whose body returns ``ub.poison``.

    Only a function with a body gets its signature re-typed by ``convert_to_ttgpuir`` (a declaration
    keeps its layout-free argument and the call then fails verification); poison type-checks for
    any result type and leaves the argument unused. The function is deleted with its calls.
    """
    b = ir.builder(gen.context)  # no insertion point: the function is created detached
    fn = b.get_or_insert_function(gen.module, name, b.get_function_ty([src_type], [dst_type]), "private", True)
    gen.module.push_back(fn)
    entry = fn.add_entry_block()
    b.set_insertion_point_to_start(entry)
    b.ret([b.create_poison(dst_type)])
    return fn


def to_plain(_semantic: Any, g: gluon_ir.GluonOpBuilder, value: ir.value, dtype: tl.dtype,
             shape: list[int]) -> tl.tensor:
    """A laid-out register tensor as an ordinary ``tl.tensor`` (remembering its laid-out origin)."""
    ty = tl.block_type(dtype, shape)
    out = bridge(_semantic, g, value, ty.to_ir(g))
    _semantic.builder.__dict__.setdefault("_tlx_origin", {})[out.id()] = value
    return tl.tensor(out, ty)


def to_layout(_semantic: Any, g: gluon_ir.GluonOpBuilder, x: tl.tensor, dst_type: ir.type) -> ir.value:
    """``x`` in the layout of ``dst_type``; reuses the laid-out value ``x`` came from if it matches.

    Reusing the origin avoids bridge chains and keeps an async MMA result and its wait connected.
    """
    origin = _semantic.builder.__dict__.get("_tlx_origin", {}).get(x.handle.id())
    if origin is not None and str(origin.get_type()) == str(dst_type):
        return origin
    return bridge(_semantic, g, x.handle, dst_type)


# --------------------------------------------------------------------------------------------
# After convert_to_ttgpuir: bridges become layout conversions
# --------------------------------------------------------------------------------------------
_BRIDGE_CALL = re.compile(r"^(\s*)(%\S+) = tt\.call @" + BRIDGE_PREFIX + r"\d+\((%[^)]+)\) : \((.+)\) -> (.+?)( loc\(.*\))?$")
_BRIDGE_FUNC = re.compile(r"^(\s*)tt\.func private @" + BRIDGE_PREFIX + r"\d+\(")


def materialize_bridges(text: str) -> str:
    """Rewrite printed TTGIR: bridge calls become ``ttg.convert_layout``, bridge functions go."""
    out = []
    closing = None  # while skipping a bridge function: the line that ends it
    for line in text.splitlines():
        if closing is not None:
            if line.startswith(closing):
                closing = None
            continue
        m = _BRIDGE_FUNC.match(line)
        if m:
            closing = m.group(1) + "}"
            continue
        m = _BRIDGE_CALL.match(line)
        if m:
            indent, res, arg, src_ty, dst_ty, loc = m.groups()
            line = f"{indent}{res} = ttg.convert_layout {arg} : {src_ty} -> {dst_ty}{loc or ''}"
        out.append(line)
    return "\n".join(out) + "\n"


def is_tlx_module(mod: Any) -> bool:
    return isinstance(mod, ir.module) and mod.get_int_attr(TLX_MODULE_ATTR) is not None
