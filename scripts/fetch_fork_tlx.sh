#!/usr/bin/env bash
# The TLX fork's Python frontend and tutorials, for the conformance tests (tests/tlx/test_fork_conformance.py).
# Downloads the fbtriton wheel once (pip download, no dependencies, ~250 MB, cached in .fork-cache/wheels)
# and extracts only triton/language/extra/tlx/ (its __init__.py, frontend and tutorials/, a few MB) into
# .fork-cache/fbtriton-$VERSION/.  Nothing of the fork is committed.  Failing here (no network, no such
# wheel for this Python) is not fatal for CI: the conformance tests then skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${FBTRITON_VERSION:-3.7.4}
PY=${PYTHON:-.venv/bin/python}
DEST=.fork-cache/fbtriton-$VERSION
if [ -f "$DEST/triton/language/extra/tlx/__init__.py" ]; then
  exit 0
fi
mkdir -p .fork-cache/wheels
if ! "$PY" -m pip download -q "fbtriton==$VERSION" --no-deps -d .fork-cache/wheels; then
  echo "fetch_fork_tlx.sh: could not download fbtriton==$VERSION; the fork conformance tests will skip" >&2
  exit 0
fi
"$PY" - "$VERSION" "$DEST" <<'PYEOF'
import sys, zipfile
from pathlib import Path
version, dest = sys.argv[1], Path(sys.argv[2])
wheel = next(Path(".fork-cache/wheels").glob(f"fbtriton-{version}-*.whl"))
prefix = "triton/language/extra/tlx/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith(".so") and "__pycache__" not in n]
    tmp = dest.with_name(dest.name + ".partial")
    z.extractall(tmp, names)
    tmp.rename(dest)
print(f"fetch_fork_tlx.sh: {len(names)} files of {wheel.name} in {dest}")
PYEOF
