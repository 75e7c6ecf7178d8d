"""Make two compilers' output comparable: rename what carries no meaning, drop debug info.

Registers, labels and SSA names are renumbered by first appearance, so two listings that differ
only in numbering compare equal. Everything else (instructions, operands' roles, attributes) stays.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Callable

_PTX_REG = re.compile(r"%([a-z]+)(\d+)\b")
_PTX_SPECIAL = {"clock64"}
_PTX_LABEL = re.compile(r"\$L__\w+")
_AMD_REG = re.compile(r"\b([vsa])(\d+|\[\d+:\d+\])")
_AMD_LABEL = re.compile(r"\.L\w+")
_SSA = re.compile(r"%[\w$.-]+")
_ALIAS_DEF = re.compile(r"^(#[\w$.-]+) = (.*)$")
_ALIAS_USE = re.compile(r"#[A-Za-z_][\w$.-]*")


def _renamer(prefix: Callable[[str], str]) -> Callable[[str], str]:
    seen: dict[str, str] = {}
    per_class: Counter = Counter()

    def rename(token: str) -> str:
        if token not in seen:
            cls = prefix(token)
            seen[token] = f"{cls}{per_class[cls]}"
            per_class[cls] += 1
        return seen[token]

    return rename


def ptx(text: str) -> list[str]:
    """PTX instructions and directives, debug sections and comments dropped, registers and labels renumbered."""
    text = text.split(".section\t.debug", 1)[0].split(".section .debug", 1)[0]
    reg = _renamer(lambda t: "%" + _PTX_REG.match(t).group(1))
    label = _renamer(lambda t: "$L")
    out = []
    for line in text.splitlines():
        line = line.split("//", 1)[0].strip()
        if not line or line.startswith((".loc", ".file")) or re.fullmatch(r"\$L__tmp\d+:", line):
            continue
        line = re.sub(r"<\d+>", "<N>", line)  # register-array sizes follow the numbering
        line = _PTX_REG.sub(lambda m: m.group(0) if m.group(0)[1:] in _PTX_SPECIAL else reg(m.group(0)), line)
        out.append(_PTX_LABEL.sub(lambda m: label(m.group(0)), line))
    return out


def amdgcn(text: str) -> list[str]:
    """AMDGCN instructions, with the kernel descriptor, metadata, debug info and comments dropped."""
    reg = _renamer(lambda t: t[0])
    label = _renamer(lambda t: ".L")
    out, skip = [], False
    for line in text.splitlines():
        line = line.split(";", 1)[0].strip()
        if line.startswith((".amdhsa_kernel", ".amdgpu_metadata")) or line.startswith(".section\t.debug"):
            skip = True
        if skip:
            skip = not line.startswith((".end_amdhsa_kernel", ".end_amdgpu_metadata"))
            continue
        if not line or line.startswith((".loc", ".file", ".cfi_", ".Ltmp", ".Lfunc_end", ".Ldebug", ".Lsec")):
            continue
        line = _AMD_REG.sub(lambda m: reg(m.group(0)), line)
        out.append(_AMD_LABEL.sub(lambda m: label(m.group(0)), line))
    return out


def _strip_loc(line: str) -> str:
    """``line`` without its ``loc(...)`` annotations (they nest parentheses and hold file paths)."""
    while True:
        i = line.find(" loc(")
        if i < 0:
            return line
        depth, j = 0, i + 4
        for j in range(i + 4, len(line)):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            if depth == 0:
                break
        line = line[:i] + line[j + 1:]


def ttgir(text: str, drop_attrs: tuple[str, ...] = ("tlx.kernel", )) -> list[str]:
    """TTGIR with layout aliases inlined, locations dropped and SSA values renumbered."""
    aliases, body = {}, []
    for line in text.splitlines():
        m = _ALIAS_DEF.match(line)
        if m:
            if not m.group(1).startswith("#loc"):
                aliases[m.group(1)] = m.group(2)
            continue
        body.append(line)

    def inline(s: str) -> str:
        for _ in range(4):  # aliases may refer to aliases
            s = _ALIAS_USE.sub(lambda m: aliases.get(m.group(0), m.group(0)), s)
        return s

    ssa = _renamer(lambda t: "%v")
    out = []
    for line in body:
        line = _strip_loc(line).strip()
        if not line or line.startswith("#loc") or line.startswith("{-#") or "mlir_reproducer" in line:
            continue
        for attr in drop_attrs:
            line = re.sub(rf'"?{re.escape(attr)}"? = [^,}}]+(, )?', "", line)
        out.append(_SSA.sub(lambda m: ssa(m.group(0)), inline(line)))
    return out


_OP = re.compile(r"^(?:%[\w$.,:# -]+ = )?\"?([a-z_]+\.[\w.]+)")


def ttgir_ops(lines: list[str]) -> list[str]:
    """The op names of normalized TTGIR, in order."""
    return [m.group(1) for m in map(_OP.match, lines) if m]


#: Instructions the report counts, per assembly kind (regex over normalized lines).
KEY_INSTRUCTIONS = {
    "ptx": {"wgmma.mma_async": r"^wgmma\.mma_async", "wgmma.wait_group": r"^wgmma\.wait_group",
            "cp.async": r"^cp\.async\.c[ag]", "cp.async.wait_group": r"^cp\.async\.wait_group",
            "cp.async.bulk.tensor": r"^(@\S+ )?cp\.async\.bulk\.tensor", "mbarrier": r"^(@\S+ )?mbarrier\.",
            "bar.sync": r"^(@\S+ )?(bar\.sync|barrier\.sync)", "ld.shared": r"^(@\S+ )?ld\.shared",
            "st.shared": r"^(@\S+ )?st\.shared", "ldmatrix": r"^ldmatrix", "stmatrix": r"^stmatrix",
            "setmaxnreg": r"^setmaxnreg", "fence.proxy.async": r"^fence\.proxy\.async"},
    "amdgcn": {"ds_write": r"^ds_write", "ds_read": r"^ds_read", "v_mfma": r"^v_mfma",
               "global_load": r"^global_load", "buffer_load": r"^buffer_load", "global_store": r"^global_store",
               "buffer_store": r"^buffer_store", "s_waitcnt": r"^s_waitcnt", "s_barrier": r"^s_barrier"},
}


def count_key_instructions(kind: str, lines: list[str]) -> dict[str, int]:
    return {name: sum(bool(re.match(rx, line)) for line in lines) for name, rx in KEY_INSTRUCTIONS[kind].items()}
