"""Async copies the hardware cannot run asynchronously become synchronous copies, with a warning.

A cp.async (NVIDIA) moves 4, 8 or 16 bytes per thread; a CDNA direct-to-LDS load (AMD) moves 32 bits
(gfx942) or 32/128 bits (gfx950). How many bytes one thread may move is what Triton's axis analysis
proves about the copy: pointer alignment and contiguity along the row, and mask constancy. Below 4
bytes the LLVM lowering fails ("cp.async does not support transfers smaller than 4 bytes" on NVIDIA;
an unlowered copy on AMD). That happens for ordinary code: fp16 rows of 1000 elements are 16-byte
aligned, but the JIT only marks integers divisible by 16, so it cannot prove it.

The analysis is C++ and has no Python binding, so :func:`unprovable_copies` asks a stock pass that
uses it. AMD's ``coalesce_async_copy`` for a CDNA3 target, whose direct-to-LDS loads are 32 bits
only, narrows a copy's wider source layout to 32 bits exactly when at least 4 bytes per thread are
provable, and leaves it alone otherwise. It runs on a throwaway copy of the module, with NVIDIA's
shared encodings (which the AMD pass skips) swapped for plain row-major ones, and the result is read
back copy by copy (copies keep their order). Every copy it cannot widen, and every copy whose
``other`` the hardware cannot produce (``tlx.sync`` attribute, set by the frontend), becomes a
``tt.load`` + ``ttg.local_store``: complete at issue, so commit groups and waits stay valid.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, Optional

from tritium import compat
from tritium.plugins import mlir_pass

from . import triton_compat

_NAME = r"%[\w.$#-]+"
_COPY = re.compile(rf"^(?P<ind>\s*)(?P<res>{_NAME}) = ttg\.async_copy_global_to_local (?P<src>{_NAME}), "
                   rf"(?P<dst>{_NAME})(?: mask (?P<mask>{_NAME}))?(?: other (?P<other>{_NAME}))?"
                   r"(?: \{(?P<attrs>[^}]*)\})? : (?P<ptr>tensor<(?P<shape>[0-9x]+)x!tt\.ptr<(?P<elem>\w+)>, "
                   r"(?P<layout>#[\w.]+(?:<.*?>)?)>) -> <(?P<dst_type>.*?)>(?P<loc> loc\(.*\))?$")
_ALIAS = re.compile(r"^(#[\w$.-]+) = (.*)$")
_SYNC_ATTR = re.compile(r',?\s*tlx\.sync = "(\w+)"')
_FILE_LINE = re.compile(r'"([^"]+)":(\d+):\d+')
#: Why a copy runs synchronously, by reason (the frontend marks ``other``; the probe finds ``width``).
REASONS = {
    "width": "the compiler cannot prove each thread copies at least 4 contiguous, aligned bytes (pointer "
             "alignment/contiguity along the row, or mask constancy, is too small for cp.async or a "
             "direct-to-LDS load); give the pointers tl.multiple_of / tl.max_contiguous hints or make the "
             "row stride a multiple of 16 elements to keep it asynchronous",
    "other": "a non-zero `other` cannot be produced by an asynchronous copy (masked elements are zero-filled)",
}
_warned: set[tuple[str, str]] = set()


class AsyncCopyFallbackWarning(UserWarning):
    """An ``async_load`` compiles to a synchronous copy (warned once per kernel line and reason)."""


@dataclass
class Copy:
    line: int  # index into the module's lines
    m: re.Match

    def __getitem__(self, key: str) -> Optional[str]:
        return self.m[key]

    @property
    def bits(self) -> int:
        return int(re.search(r"\d+", self["elem"]).group(0))

    @property
    def sync_reason(self) -> Optional[str]:
        found = _SYNC_ATTR.search(self["attrs"] or "")
        return found.group(1) if found else None


def _copies(lines: list[str]) -> list[Copy]:
    return [Copy(i, m) for i, line in enumerate(lines) if (m := _COPY.match(line))]


def _aliases(lines: list[str]) -> dict[str, str]:
    return {m.group(1): m.group(2) for line in lines if (m := _ALIAS.match(line))}


def _per_thread(layout: str, aliases: dict[str, str]) -> int:
    """Elements one thread holds contiguously along the fastest dimension of a blocked layout, or of a
    linear one (what AMD's ``coalesce_async_copy`` gives a copy into a padded shared buffer): its leading
    register bases that step 1, 2, 4, ... along one dimension."""
    text = aliases.get(layout, layout)
    if text.startswith("#ttg.linear"):
        bases = [[int(x) for x in b.split(",")] for b in
                 re.findall(r"\[([\d, ]+)\]", re.search(r"register = \[((?:\[[\d, ]*\],? ?)*)\]", text).group(1))]
        dim = next((d for d, x in enumerate(bases[0]) if x), 0) if bases else 0
        n = 0
        while n < len(bases) and bases[n] == [1 << n if d == dim else 0 for d in range(len(bases[n]))]:
            n += 1
        return 1 << n
    spt = [int(x) for x in re.search(r"sizePerThread = \[([\d, ]+)\]", text).group(1).split(",")]
    order = [int(x) for x in re.search(r"order = \[([\d, ]+)\]", text).group(1).split(",")]
    return spt[order[0]]


def source_line(loc: str, aliases: dict[str, str]) -> str:
    """``file:line`` of a printed location (``loc(#loc12)``), names resolved; for a call site, the callee's
    line (inside an inlined ``@triton.jit`` helper, the line of the op itself)."""
    text = loc
    for _ in range(32):  # expand every alias first: in `callsite(A at B)`, B may resolve sooner than A
        if "#loc" not in text:
            break
        text = re.sub(r"#loc\d*", lambda r: aliases.get(r.group(0), "unknown"), text)
    found = _FILE_LINE.search(text)
    return f"{found.group(1)}:{found.group(2)}" if found else "<unknown location>"


def unprovable_copies(mod: Any, lines: list[str], copies: list[Copy], amd_target: bool) -> set[int]:
    """Line indices of the sub-32-bit copies whose per-thread width the compiler cannot prove >= 4 bytes."""
    aliases = _aliases(lines)
    probe = list(lines)
    asked: list[Copy] = []
    for n, c in enumerate(copies):
        if c.bits >= 32 or c.sync_reason:
            continue
        if _per_thread(c["layout"], aliases) * c.bits <= 32:
            continue  # too narrow for the probe to tell; the caller treats it as unprovable
        asked.append(c)
        if amd_target:  # AMD buffers already have the swizzled encodings the pass expects
            continue
        rank = c["shape"].count("x") + 1
        order = ", ".join(str(d) for d in reversed(range(rank)))
        plain = (f"<{c['shape']}x{c['elem']}, #ttg.swizzled_shared<{{vec = 1, perPhase = 1, maxPhase = 1, "
                 f"order = [{order}]}}>, #ttg.shared_memory, mutable>")
        line = probe[c.line]
        probe[c.line] = (f"{c['ind']}%tlx_probe{n} = ttg.local_alloc : () -> !ttg.memdesc{plain}\n"
                         + line[:c.m.start("dst")] + f"%tlx_probe{n}" + line[c.m.end("dst"):c.m.start("dst_type") - 1]
                         + plain + line[c.m.end("dst_type") + 1:])
    if not asked:
        return {c.line for c in copies if c.bits < 32 and not c.sync_reason}
    checked = compat.parse_module("\n".join(probe), mod.context)
    triton_compat.run_amd_coalesce_async_copy(checked, "gfx942")
    out_lines = checked.str().splitlines()
    out_aliases = _aliases(out_lines)
    after = _copies(out_lines)
    if len(after) != len(copies):
        raise AssertionError(f"tlx: the async-copy width probe saw {len(after)} copies, expected {len(copies)}")
    asked_lines = {c.line for c in asked}
    widened = {c.line for c, a in zip(copies, after)
               if c.line in asked_lines and _per_thread(a["layout"], out_aliases) * c.bits == 32}
    return {c.line for c in copies if c.bits < 32 and not c.sync_reason and c.line not in widened}


def _sync_copy(c: Copy, n: int) -> list[str]:
    """A ``tt.load`` + ``ttg.local_store`` doing what the copy ``c`` does, complete at issue."""
    ind, loc = c["ind"], c["loc"] or ""
    value = f"tensor<{c['shape']}x{c['elem']}, {c['layout']}>"
    attrs = _SYNC_ATTR.sub("", c["attrs"] or "").strip(", ")
    out, operands = [], [c["src"]]
    if c["mask"]:
        other = c["other"]
        if other is None:  # an async copy zero-fills masked elements; a load would leave them undefined
            other = f"%tlx_sync_zero{n}"
            zero = "0.000000e+00" if c["elem"].startswith(("f", "bf")) else "0"
            out.append(f"{ind}{other} = arith.constant dense<{zero}> : {value}{loc}")
        operands += [c["mask"], other]
    out.append(f"{ind}%tlx_sync{n} = tt.load {', '.join(operands)}{f' {{{attrs}}}' if attrs else ''} : {c['ptr']}{loc}")
    out.append(f"{ind}ttg.local_store %tlx_sync{n}, {c['dst']} : {value} -> !ttg.memdesc<{c['dst_type']}>{loc}")
    return out


def forget_warnings() -> None:
    """Warn again for kernel lines already warned about (tests; a long-lived process that recompiles)."""
    _warned.clear()


def _warn(where: str, reason: str) -> None:
    """Warn once per kernel line and reason, attributed to the kernel line itself."""
    if (where, reason) in _warned:
        return
    _warned.add((where, reason))
    filename, _, lineno = where.rpartition(":")
    warnings.warn_explicit(f"tlx.async_load at {where} runs as a synchronous copy: {REASONS[reason]}",
                           AsyncCopyFallbackWarning, filename or where, int(lineno) if lineno.isdigit() else 0)


def fall_back(mod: Any, arch: str) -> Optional[Any]:
    """The module with every async copy the target cannot run made synchronous (``None``: nothing to do).
    The rewrite makes no block, so the parsed module's loop arguments get their locations from ``mod``'s
    (:func:`.triton_compat.copy_argument_locations`)."""
    lines = mod.str().splitlines()
    copies = _copies(lines)
    if not copies:
        return None
    amd_target = arch.startswith("gfx")
    narrow = unprovable_copies(mod, lines, copies, amd_target)
    aliases = _aliases(lines)
    synchronous = [(n, c, c.sync_reason or "width") for n, c in enumerate(copies)
                   if c.sync_reason or c.line in narrow]
    if not synchronous:
        return None
    for n, c, reason in synchronous:
        _warn(source_line(c["loc"] or "", aliases), reason)
    for n, c, _ in reversed(synchronous):  # from the bottom, so earlier line indices stay valid
        lines[c.line:c.line + 1] = _sync_copy(c, n)
    out = compat.parse_module("\n".join(lines), mod.context)
    triton_compat.copy_argument_locations(mod, out)
    return out


@mlir_pass(name="tlx.async_copy_fallback")
def async_copy_fallback(mod: Any, ctx: Any) -> Optional[Any]:
    """Pipeline pass (right after the placeholders are lowered): see :func:`fall_back`."""
    return fall_back(mod, ctx.options.arch)


@mlir_pass(name="tlx.amd_coalesce_async_copy")
def amd_coalesce_async_copy(mod: Any, ctx: Any) -> None:
    """AMD pipeline pass, after the last layout clean-up: narrow each async copy's source layout to a
    direct-to-LDS width (32 bits on gfx942, 32/128 on gfx950). The stock pipeline runs AMD's pass only
    with its own pipeliner, and before ``remove_layout_conversions``, which widens the layouts again."""
    if _copies(mod.str().splitlines()):
        triton_compat.run_amd_coalesce_async_copy(mod, ctx.options.arch)
