"""TMA features that stock Triton 3.6 has no TTGIR op for, finished on the LLVM dialect.

Stock Triton lowers each TMA op to inline PTX, but its TTGIR ops cannot ask for an L2 cache hint
(its TMA lowering rejects ``evict``), and it has no op for a tensor prefetch or a plain bulk copy.
The TLX lowering therefore emits ops that stock Triton *can* lower, marked for this pass, which runs
on the LLVM dialect (llir stage, after partitions are inlined) and edits their inline PTX:

* ``"tlx.ptx:l2:<policy>"`` in an op's location (a name location: it survives the conversion to the
  LLVM dialect, and every inline asm the op becomes carries it): the TMA instruction gets
  ``.L2::cache_hint`` with a ``createpolicy`` of that eviction priority;
* ``"tlx.ptx:bulk_store"``: a TMA store of a 1-message block, made only to get the buffer's shared
  address and the global pointer into PTX, becomes ``cp.async.bulk.global.shared::cta.bulk_group``
  of the byte count it carries in its innermost coordinate; ``"tlx.ptx:bulk_load"`` likewise turns a
  TMA load into ``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes`` (``async_load(bulk=True)``);
* an inline asm whose text starts with ``tlx.ptx:arg:<i>;`` needs the kernel's ``i``-th argument (a
  host tensor map's address, which TTGIR cannot name) as an extra ``l`` operand, written ``$D``;
* clusters (tlx/cluster_launch.py): an inline asm ``tlx.ptx:val:<n>; mov.b32 $0, $1;`` carries a run-time
  i32 into PTX that Triton writes; ``"tlx.ptx:remote:<n>"`` makes an mbarrier arrive one on the copy of
  the barrier in the CTA of rank ``val:<n>`` (``mapa``; release at CTA scope, as CUTLASS arrives), and
  ``"tlx.ptx:multicast:<n>"`` a TMA load a multicast to the CTAs of mask ``val:<n>``.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from tritium import compat
from tritium.plugins import mlir_pass

from .ttgir_text import func_signature

MARK = "tlx.ptx:"
POLICY = "tlxpol"
#: One ``llvm.inline_asm`` op: result, asm text, constraints, operands, operand types, result type, location.
_ASM = re.compile(r'^(?P<head>\s*(?:%[\w$.-]+ = )?llvm\.inline_asm [^"]*)"(?P<asm>(?:[^"\\]|\\.)*)", '
                  r'"(?P<cons>[^"]*)"(?P<ops>[^:]*) : \((?P<types>(?:[^()]|\([^()]*\))*)\) -> (?P<res>.*?)'
                  r'(?P<loc> loc\(.*\))?$')  # an operand type may hold parentheses: !llvm.struct<(ptr<3>, i32)>
_ALIAS = re.compile(r"^(#[\w$.-]+) = (loc\(.*\))$", re.M)


def policy_asm(policy: str) -> str:
    """PTX making the L2 cache policy ``tlxpol`` for ``evict_first``/``evict_last``."""
    return f".reg .b64 {POLICY}; createpolicy.fractional.L2::{policy}.b64 {POLICY}, 1.0;"


def with_cache_hint(asm: str, policy: str) -> str:
    """A TMA instruction (``@$0 cp...bulk.tensor... [..], [..];``) with an L2 cache policy operand."""
    m = re.fullmatch(r"(?P<pred>@\S+ )?(?P<op>\S+) (?P<args>.*);", asm.strip())
    if m is None or "bulk.tensor" not in m["op"]:
        raise ValueError(f"tlx: cannot add an L2 cache hint to {asm!r}")
    return f"{{ {policy_asm(policy)} {m['pred'] or ''}{m['op']}.L2::cache_hint {m['args']}, {POLICY}; }}"


def prefetch_asm(desc: str, coords: list[str], pred: str, policy: str) -> str:
    """``cp.async.bulk.prefetch.tensor`` of the tile at ``coords`` (or, with no coordinates, ``prefetch.tensormap``
    of the tensor map itself), issued by one lane of each warp when ``pred``."""
    hint = f" {policy_asm(policy)}" if policy else ""
    if coords:
        op = (f"cp.async.bulk.prefetch.tensor.{len(coords)}d.L2.global.tile{'.L2::cache_hint' if policy else ''} "
              f"[{desc}, {{{', '.join(coords)}}}]{f', {POLICY}' if policy else ''}")
    else:
        op = f"prefetch.tensormap [{desc}]"
    return (f"{{ .reg .pred tlxp, tlxe;{hint} setp.ne.b32 tlxp, {pred}, 0; elect.sync _|tlxe, -1; "
            f"and.pred tlxp, tlxp, tlxe; @tlxp {op}; }} mov.u32 $0, 0;")


def _marks(loc: str, aliases: dict[str, str]) -> list[str]:
    """The ``tlx.ptx:`` marks in a printed location, following aliases."""
    found, seen, todo = [], set(), [loc]
    while todo:
        text = todo.pop()
        found += re.findall(r'"' + re.escape(MARK) + r'([^"]*)"', text)
        for alias in re.findall(r"#[\w$.-]+", text):
            if alias not in seen and alias in aliases:
                seen.add(alias)
                todo.append(aliases[alias])
    return found


def _bulk_store(asm: str) -> str:
    """The marked TMA store ``@$0 cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [$1, {$2, ..}], [$k];``
    as a bulk copy of ``$2`` bytes from shared ``$k`` to global ``$1``."""
    m = re.fullmatch(r"(@\S+ )cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta\.bulk_group "
                     r"\[(\$\d+), \{(\$\d+)[^}]*\}\], \[(\$\d+)\];", asm.strip())
    if m is None:
        raise ValueError(f"tlx.async_store: unexpected TMA store {asm!r}")
    return f"{m[1]}cp.async.bulk.global.shared::cta.bulk_group [{m[2]}], [{m[4]}], {m[3]};"


def _bulk_load(asm: str) -> str:
    """The marked TMA load ``@$0 cp.async.bulk.tensor.Nd.shared::X.global.mbarrier::complete_tx::bytes [$s], [$1, {$2,
    ..}], [$b];`` (tlx.async_load(bulk=True), tlx/async_copy.py) as a bulk copy of ``$2`` bytes from global ``$1``."""
    m = re.fullmatch(r"(@\S+ )cp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global\.mbarrier::complete_tx::bytes "
                     r"\[(\$\d+)\], \[(\$\d+), \{(\$\d+)[^}]*\}\], \[(\$\d+)\];", asm.strip())
    if m is None:
        raise ValueError(f"tlx.async_load(bulk=True): unexpected TMA load {asm!r}")
    return f"{m[1]}cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [{m[2]}], [{m[3]}], {m[4]}, [{m[5]}];"


def _args(text: str, upto: int) -> list[str]:
    """Argument names of the ``llvm.func`` that contains position ``upto`` of ``text``."""
    start = text.rfind("llvm.func ", 0, upto)
    head = text[start:text.index("\n", start)]
    return [name for name, _ in func_signature(head)[2]]  # the same printed-signature parser as for tt.func


def _remote_arrive(asm: str, rank: str) -> str:
    """Triton's ``@$0 mbarrier.arrive.shared::cta.b64 _, [$1](, count);`` on the barrier's copy in CTA ``rank``."""
    m = re.fullmatch(r"(@\S+ )mbarrier\.arrive\.shared(?:::cta)?\.b64 _, \[(\$\d+)\](, \d+)?;", asm.strip())
    if m is None:
        raise ValueError(f"tlx.barrier_arrive(remote_cta_rank=...): unexpected mbarrier arrive {asm!r}")
    return (f"{{ .reg .b32 tlxra; mapa.shared::cluster.u32 tlxra, {m[2]}, {rank}; "
            f"{m[1]}mbarrier.arrive.shared::cluster.b64 _, [tlxra]{m[3] or ''}; }}")


def _multicast(asm: str, mask: str) -> str:
    """Triton's TMA load ``@$0 cp.async.bulk.tensor.Nd.shared::X.global.mbarrier::complete_tx::bytes [..], [..],
    [..];`` multicast to the CTAs of the 16-bit ``mask``."""
    m = re.fullmatch(r"(@\S+ )cp\.async\.bulk\.tensor\.(\dd)\.shared::\w+\.global\.mbarrier::complete_tx::bytes "
                     r"(.*);", asm.strip())
    if m is None:
        raise ValueError(f"tlx.async_descriptor_load(multicast_targets=...): unexpected TMA load {asm!r}")
    return (f"{{ .reg .b16 tlxmc; cvt.u16.u32 tlxmc, {mask}; {m[1]}cp.async.bulk.tensor.{m[2]}.shared::cluster.global."
            f"mbarrier::complete_tx::bytes.multicast::cluster {m[3]}, tlxmc; }}")


_LINK = re.compile(re.escape(MARK) + r"val:(\d+); ")


def finish(text: str) -> str:
    """Apply the marks of the module docstring to the printed LLVM-dialect module ``text``."""
    if MARK not in text:
        return text
    aliases = dict(_ALIAS.findall(text))
    # val:<n> -> the SSA value of its latest inline asm: a link is emitted right before the op it feeds, in its
    # block, and a task's code may be present once per replica, each copy with its own link.
    links: dict[str, str] = {}
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        m = _ASM.match(line.rstrip("\n"))
        start, pos = pos, pos + len(line)
        link = _LINK.match(m["asm"]) if m is not None else None
        if link is not None:
            links[link[1]] = m["head"].split("=", 1)[0].strip()
        if m is not None and (MARK in m["asm"] or _marks(m["loc"] or "", aliases)):
            line = _rewrite(m, aliases, text, start, links) + ("\n" if line.endswith("\n") else "")
        out.append(line)
    return "".join(out)


def _rewrite(m: re.Match, aliases: dict[str, str], text: str, pos: int, links: dict[str, str]) -> str:
    asm, cons, ops, types = m["asm"], m["cons"], m["ops"], m["types"]
    link = _LINK.match(asm)
    if link:
        asm = asm[link.end():]
    arg = re.match(re.escape(MARK) + r"arg:(\d+);", asm)
    if arg:
        name = _args(text, pos)[int(arg.group(1))]
        n = cons.count(",") + 1  # operands so far, the result included
        asm = asm[arg.end():].replace("$D", f"${n}")
        cons, ops, types = f"{cons},l", f"{ops.rstrip()}, {name}", f"{types}, !llvm.ptr"
    for mark in _marks(m["loc"] or "", aliases):
        if mark == "bulk_store" and "bulk.tensor" in asm:
            asm = _bulk_store(asm)
        elif mark == "bulk_load" and "bulk.tensor" in asm:
            asm = _bulk_load(asm)
        elif mark.startswith("l2:") and "bulk.tensor" in asm:
            asm = with_cache_hint(asm, mark[3:])
        elif mark.startswith(("remote:", "multicast:")) and ("mbarrier.arrive" in asm or "bulk.tensor" in asm):
            kind, n = mark.split(":")
            value = f"${cons.count(',') + 1}"
            asm = _remote_arrive(asm, value) if kind == "remote" else _multicast(asm, value)
            cons, ops, types = f"{cons},r", f"{ops.rstrip()}, {links[n]}", f"{types}, i32"
    return f'{m["head"]}"{asm}", "{cons}"{ops} : ({types}) -> {m["res"]}{m["loc"] or ""}'


@mlir_pass(name="tlx.finish_tma")
def finish_tma(mod: Any, ctx: Any) -> Optional[Any]:
    """The LLVM-dialect pass (see the module docstring); a module without marks is left as it is."""
    text = mod.str()
    if MARK not in text:
        return None
    return compat.parse_module(finish(text), mod.context)
