"""Tables and plots shared by every benchmark."""
from __future__ import annotations

import os
from typing import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, ready for docs/benchmarks.md."""
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def bar_plot(path: str, title: str, labels: Sequence[str], series: dict[str, Sequence[float]], ylabel: str) -> str:
    """Grouped bars, one group per label; returns the PNG path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels) * max(1, len(series)) / 2), 4))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def save_json(path: str, payload: object) -> str:
    """Write ``payload`` as indented JSON (the machine-readable copy of a table); returns the path."""
    import json
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)
        f.write("\n")
    return path
