"""Reading printed TTGIR: the small parsers the placeholder lowering and the warp-specialize outlining share.

The TLX lowering works on the module's printed form (see :mod:`.placeholders`), so it needs to split
type lists, find matching brackets, read a ``tt.func`` signature, tell SSA names from string
literals, and turn a ``loc(...)`` into ``file:line`` for errors.
"""
from __future__ import annotations

import re

#: A string literal (inline asm text may contain ``%``), an SSA name, and a definition of one (also loop
#: variables and iter_args).
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
SSA = re.compile(r"%[\w$.-]+")
SSA_DEF = re.compile(r"(%[\w$.-]+)(?::\d+)?\s*=\s")


def split_types(text: str) -> list[str]:
    """Split a printed type list at top-level commas (types nest ``<...>``, ``{...}``, ``[...]``)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def closing_bracket(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "<{[(":
            depth += 1
        elif text[i] in ">}])":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"tlx: unbalanced brackets in {text!r}")


def func_signature(line: str) -> tuple[int, int, list[tuple[str, str]]]:
    """Where the argument list of a printed ``tt.func`` starts and ends, and its (name, type) pairs."""
    start = line.index("(", line.index("@"))
    end = closing_bracket(line, start)
    args = []
    for arg in split_types(line[start + 1:end]):
        name, _, rest = arg.partition(":")
        depth, cut = 0, len(rest)
        for i, ch in enumerate(rest):
            depth += ch in "<{[(" and 1 or (-1 if ch in ">}])" else 0)
            if depth == 0 and (rest.startswith(" {", i) or rest.startswith(" loc(", i)):
                cut = i
                break
        args.append((name.strip(), rest[:cut].strip()))
    return start, end, args


def strip_strings(line: str) -> str:
    """``line`` without its string literals (inline asm text may contain ``%``)."""
    return STRING.sub('""', line)


def source_location(text: str, loc: str) -> str:
    """``file:line`` of a printed ``loc(...)`` (the innermost callee of call sites), or ``?``."""
    aliases = dict(re.findall(r"^(#loc\d*) = (loc\(.*\))$", text, re.M))
    seen = set()
    while loc and loc not in seen:
        seen.add(loc)
        m = re.search(r'loc\("([^"]+)":(\d+):\d+\)', loc)
        if m:
            return f"{m.group(1)}:{m.group(2)}"
        m = re.search(r"#loc\d*", loc)
        loc = aliases.get(m.group(0), "") if m else ""
    return "?"
