"""tritium: a plugin system and TLX for stock Triton, in pure Python.

``import tritium`` (also implied by importing any submodule) does, in order:

1. checks that the installed Triton is one tritium supports (3.6 to 3.9) and raises ``ImportError``
   naming both versions otherwise; with ``TRITON_INTERPRET=1`` on Triton 3.6 it warns if numpy is 2.4 or
   newer, which that interpreter cannot use;
2. with ``TRITIUM_LOG`` set, gives the ``tritium`` logger a stderr handler at that level; and sets
   Triton's ``knobs.compilation.listener`` (chaining any listener already set), through which each
   compiled kernel logs the pipelines and passes that applied to it (tritium/log.py);
3. imports :mod:`tritium.plugins`, which installs tritium's stages hook on Triton (a no-op for every
   compilation while no pipeline is in effect);
4. unless ``TRITIUM_DISABLE_PLUGIN_AUTOLOAD`` is set, loads plugins: entry points in the group
   ``tritium.plugins`` (deferred ones, such as TLX and the examples, are only announced) and the
   files, folders and modules in ``TRITIUM_PLUGIN_PATHS``. A plugin that fails to load gives a warning,
   not an error, so one broken plugin cannot break every program that imports tritium;
5. with ``TRITIUM_PIPELINE`` set (``plugin:name``, or a :func:`tritium.handoff.spec`), activates that pipeline
   (tritium/handoff.py); a pipeline that cannot be found gives a warning;
6. arranges for :func:`tritium.torch_integration.install` to run when Inductor's ``async_compile`` module is
   imported (at once if it already is), so pipelines reach Inductor's compile workers and cache keys. It
   imports nothing of torch.
"""
from __future__ import annotations

import re as _re

import triton as _triton

__version__ = "0.1.0"

#: The Triton minor versions tritium supports, inclusive (pyproject.toml: ``triton>=3.6,<3.10``).
SUPPORTED_TRITON = ((3, 6), (3, 9))


def _check_triton(version: str) -> None:
    """Raise ImportError unless ``version`` is in :data:`SUPPORTED_TRITON`: tritium patches Triton's compiler
    internals (tritium/compat.py), which change between minor versions, so an unchecked one fails obscurely."""
    found = tuple(int(p) for p in _re.findall(r"\d+", version)[:2])
    low, high = SUPPORTED_TRITON
    if not low <= found <= high:
        raise ImportError(f"tritium {__version__} supports Triton {low[0]}.{low[1]} to {high[0]}.{high[1]} "
                          f"(triton>={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}); this environment has Triton "
                          f"{version} ({_triton.__file__})")


def _check_numpy_for_interpreter(triton_version: str) -> None:
    """Warn when interpreting on Triton 3.6 with numpy >= 2.4: that interpreter fails on loops with a
    runtime bound ("only 0-dimensional arrays can be converted to Python scalars"); Triton 3.7+ does not.
    A warning, not a dependency pin, because packaging markers cannot see the Triton version."""
    from importlib import metadata

    if not (triton_version.startswith("3.6") and _triton.knobs.runtime.interpret):
        return
    try:
        numpy_version = tuple(int(p) for p in _re.findall(r"\d+", metadata.version("numpy"))[:2])
    except metadata.PackageNotFoundError:
        return
    if numpy_version >= (2, 4):
        import warnings
        warnings.warn(f"TRITON_INTERPRET=1 with Triton {triton_version} and numpy {metadata.version('numpy')}: "
                      "Triton 3.6's interpreter fails on loops with a runtime bound under numpy >= 2.4; "
                      "install numpy<2.4 or Triton >= 3.7", stacklevel=2)


_check_triton(_triton.__version__)
_check_numpy_for_interpreter(_triton.__version__)

from . import knobs  # noqa: E402
from . import log as _log  # noqa: E402

_log.configure_logging()
_log.install_listener()

from . import plugins  # noqa: E402



def _announce_bundled_from_a_source_tree() -> None:
    """Run from a source tree (``PYTHONPATH=src``, not installed), tritium's own entry points do not
    exist; announce the plugins it bundles (tritium/bundled.py) as those entry points would."""
    from importlib import metadata

    from . import bundled

    group = metadata.entry_points(group=plugins.registry.ENTRY_POINT_GROUP)
    if any(ep.value.startswith(f"{bundled.__name__}:") for ep in group):
        return
    for name, spec in vars(bundled).items():
        if isinstance(spec, plugins.registry.DeferredPlugin):
            plugins.default_manager().announce(spec, f"bundled {name} = {bundled.__name__}:{name} (source tree)")


if not knobs.plugins.disable_autoload:
    plugins.discover(strict=False)
    _announce_bundled_from_a_source_tree()

from . import handoff as _handoff  # noqa: E402
from . import torch_integration as _torch_integration  # noqa: E402

_handoff.bootstrap()
_torch_integration.install_on_inductor_import()
