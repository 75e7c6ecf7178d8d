"""Everything that touches Triton internals lives here, and only here.

Triton 3.6 offers one pipeline hook (``knobs.runtime.add_stages_inspection_hook``) and folds it
into no cache key.  Triton 3.7+ calls the same hook with no arguments to get ``(key, hash)`` and
folds those into its keys (``key`` appended to the on-disk key, ``hash`` to the JIT
specialization).  This module gives the rest of tritium the 3.7 contract on both:

* :func:`install_stages_hook` puts a plugin manager's :class:`ChainedHook` in Triton's one hook slot
  (chaining any hook already there); on 3.6 it also wraps the two key functions so the hook's
  ``(key, hash)`` reaches the on-disk and JIT keys.
* :func:`load_native_plugin` loads a Triton ``.so`` plugin where Triton leaves that to the caller
  (3.9: ``passes.plugin.extend_with`` and friends); 3.7/3.8 load ``TRITON_PLUGIN_PATHS`` themselves
  when libtriton is imported, and 3.6 has no native plugins.
* :func:`intercept_pass_managers` swaps ``ir.pass_manager`` for a subclass and wraps every
  ``add_*`` pass builder, so a stage's passes are recorded by name instead of run blindly.
* :func:`install_launch_options` lets launches, ``triton.Config`` and ``triton.compile`` take the options
  plugins declare, carried on the backend's options object into the stages and the cache keys.
* :func:`install_cluster_launch` launches kernels compiled for one CTA as clusters of independent CTAs
  (the fork's ``ctas_per_cga``), through Triton's own launcher.
* :func:`replace_module_body` makes a print/parse round trip visible to code that still holds
  the old module object.

What only TLX needs (binding enums, load cache hints, the TMA store wait, cluster barriers...) is in
``tritium.tlx.triton_compat``.

``tests/test_compat.py`` checks each of these assumptions against the installed wheel.
"""
from __future__ import annotations

import atexit
import functools
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Protocol

import triton
import triton.compiler.compiler as _compiler
import triton.runtime.jit as _jit
from triton import knobs
from triton._C.libtriton import ir, llvm, passes

TRITON_VERSION: tuple[int, int] = tuple(int(p) for p in re.findall(r"\d+", triton.__version__)[:2])  # type: ignore
#: Triton >= 3.7 calls the stages hook with no arguments for ``(key, hash)`` and folds them into its keys.
NATIVE_HOOK_PROTOCOL: bool = TRITON_VERSION >= (3, 7)
#: Who loads ``.so`` plugins: nobody (3.6, no native plugins), Triton at import of libtriton
#: (3.7/3.8 read ``TRITON_PLUGIN_PATHS``), or the caller through Triton's API (3.9+).
NATIVE_PLUGIN_LOADER: str = ("none" if not NATIVE_HOOK_PROTOCOL
                             else "api" if hasattr(getattr(passes, "plugin", None), "extend_with") else "import")

StagesHook = Callable[..., Any]


# --------------------------------------------------------------------------------------------
# The stages hook and the cache keys
# --------------------------------------------------------------------------------------------
class ChainedHook:
    """A plugin manager's stages hook, with whatever hook was in Triton's slot before it called first.

    ``key(kernel, fresh=False)`` gives ``(key, hash)`` for launching ``kernel`` (a JITFunction, or None when
    Triton does not say which kernel: the 3.7+ protocol). A compile instead takes one ``snapshot(kernel)``,
    ``(key, payload)`` read together, and ``apply(payload, backend, stages, options, language, capability)``
    edits that compile's stages with exactly that payload, so the binary carries what its key says even if
    other threads switch pipelines or managers meanwhile (see :class:`CompileSnapshot`).
    The manager (``owner``) makes and owns it; :func:`install_stages_hook` sets ``previous``. ``error`` makes
    the exception raised when a compile finds another hook set over this one (the plugin core's
    ``PipelineError``: this floor imports nothing of the plugin core).
    """

    def __init__(self, apply: Callable[..., None], key: Callable[..., tuple[str, str]],
                 snapshot: Callable[[Any], tuple[str, Any]], owner: Any, *, error: Callable[[str], Exception]) -> None:
        self.apply, self.key, self.snapshot, self.owner, self.error = apply, key, snapshot, owner, error
        self.previous: Optional[StagesHook] = None

    def __call__(self, *args: Any) -> Any:
        if not args:  # the 3.7+ key protocol: compile() asks for the on-disk key, every launch for the JIT's
            if _is_triton_compile(sys._getframe(1).f_code):
                snap, _compiling.snapshot = _compiling.snapshot, None  # taken by _checked_get_cache_key just before
                key, digest = ("", "") if snap is None else (snap.commit(), "")
            else:
                key, digest = self.key(None, False)
            if self.previous is not None and NATIVE_HOOK_PROTOCOL:
                prev_key, prev_digest = self.previous()
                key, digest = "|".join(filter(None, (prev_key, key))), f"{prev_digest}{digest}"
            return key, digest
        if self.previous is not None:
            self.previous(*args)
        snap = CompileSnapshot.of(args[0])
        if snap is not None:  # None: not a compile tritium keyed (add_stages called directly, or keyed while disabled)
            snap.apply(*args)
        return None


@dataclass
class CompileSnapshot:
    """What one compile's key was computed from, attached to that compile's backend object (3.6+ make a new
    one per compile) and applied by whichever tritium hook its ``add_stages`` calls, or by the wrapper below
    when none is in the slot any more (another thread disabled tritium after the key was computed).

    ``committed``: the key really went into the compile's cache key (3.7+: when Triton asked the hook).
    """
    hook: ChainedHook
    key: str
    payload: Any
    committed: bool
    applied: bool = False

    @staticmethod
    def of(backend: Any) -> Optional["CompileSnapshot"]:
        return getattr(getattr(backend, "__dict__", {}).get("add_stages"), "snapshot", None)

    def commit(self) -> str:
        self.committed = True
        return self.key

    def apply(self, backend: Any, stages: dict, options: Any, language: Any, capability: Any) -> None:
        if self.committed and not self.applied:
            self.applied = True
            self.hook.apply(self.payload, backend, stages, options, language, capability)

    def attach(self, backend: Any) -> None:
        original = type(backend).add_stages.__get__(backend)

        def add_stages(stages: dict, options: Any, language: Any) -> None:
            original(stages, options, language)  # calls the hook in Triton's slot, which applies the snapshot
            self.apply(backend, stages, options, language, stage_capability(backend, options))

        add_stages.snapshot = self  # type: ignore[attr-defined]
        backend.add_stages = add_stages


def stage_capability(backend: Any, options: Any) -> Any:
    """The ``capability`` argument the backend's ``add_stages`` passes to the stages hook (NVIDIA: the SM
    number; others: None)."""
    parse = getattr(backend, "_parse_arch", None)
    return parse(options.arch) if parse is not None and hasattr(options, "arch") else None


class _Compiling(threading.local):
    #: 3.7+: the snapshot _checked_get_cache_key took, until compile() asks the hook for its key
    snapshot: Optional[CompileSnapshot] = None


_compiling = _Compiling()
#: The hook in Triton's one slot, for the key functions below (so, process-wide: one manager is enabled at a time).
_installed: Optional[ChainedHook] = None
_key_fn: Optional[Callable[[Any], tuple[str, str]]] = None  # _installed.key, read once per launch
_orig_get_cache_key = _compiler.get_cache_key
_orig_jit_get_cache_key = _jit.get_cache_key
_orig_compute_cache_key = _jit.compute_cache_key
#: The file defining ``triton.compile``, which (3.7+) asks the hook for the on-disk key.
_COMPILER_FILE = _compiler.__file__
#: Key under which a kernel's ``kernel_key_cache`` (a plain dict Triton only indexes with tuples)
#: remembers its kernel, for kernels whose JIT key depends on the kernel.
_KERNEL = object()


def _is_triton_compile(code: Any) -> bool:
    """Whether ``code`` is Triton's own ``compile`` (3.7+: the caller asking the hook for the on-disk key).

    Told by the code's name and file, not by identity with the ``compile`` attribute: a wrapper set over
    ``triton.compile`` before tritium's import (a test harness recording compiles) would be that attribute,
    and Triton's real compile, which the wrapper calls, would then get the JIT's key and no TLX lowering.
    """
    return code.co_name == "compile" and code.co_filename == _COMPILER_FILE


def _take_snapshot(src: Any, backend: Any, committed: bool) -> Optional[CompileSnapshot]:
    """The compile's one reading of the enabled manager's state, attached to its backend; None when no
    pipeline is in effect (nothing to apply, and the key stays bare Triton's)."""
    hook = _installed  # read once: another thread may enable or disable meanwhile
    if hook is None:
        return None
    key, payload = hook.snapshot(getattr(src, "fn", None))
    if not key:
        return None
    _check_hook_is_ours(hook, key)
    snap = CompileSnapshot(hook, key, payload, committed)
    snap.attach(backend)
    return snap


def _keyed_get_cache_key(src, backend, backend_options, env_vars):
    """3.6, in compile(): the key of the snapshot this compile's stages will apply."""
    base = _orig_get_cache_key(src, backend, backend_options, env_vars)
    snap = _take_snapshot(src, backend, committed=True)
    return base if snap is None else f"{base}-tritium-{snap.key}"


def _jit_get_cache_key(src, backend, backend_options, env_vars):
    """3.6, the JIT's async path: a key to deduplicate submissions with; compile() takes its own snapshot."""
    base = _orig_jit_get_cache_key(src, backend, backend_options, env_vars)
    hook = _installed
    key = hook.key(getattr(src, "fn", None), True)[0] if hook is not None else ""
    return f"{base}-tritium-{key}" if key else base


def _checked_get_cache_key(src, backend, backend_options, env_vars):
    """3.7+: Triton folds the hook's key in itself, asking right after this; the snapshot taken here is what
    it gets (and commits it)."""
    _compiling.snapshot = _take_snapshot(src, backend, committed=False)
    return _orig_get_cache_key(src, backend, backend_options, env_vars)


def _check_hook_is_ours(hook: ChainedHook, key: str) -> None:
    """A hook set over ours after import would skip the pipelines (3.6: while their key still names them)."""
    current = knobs.runtime.add_stages_inspection_hook
    if current is not hook and _installed is hook:  # (not a manager enabled or disabled by another thread)
        skipped = ("Triton would ask that hook instead, so the pipelines in effect ({key}) would be skipped"
                   if NATIVE_HOOK_PROTOCOL else "the pipelines in effect ({key}) would not run and the binary "
                   "would be cached under a key that does not describe it")
        raise _installed.error(
            f"knobs.runtime.add_stages_inspection_hook was replaced by {current!r} after tritium installed its "
            f"own: {skipped.format(key=key)}; nothing was compiled. Call tritium.plugins.enable() (or the "
            "enabled PluginManager's enable()) to chain that hook into tritium's, or restore the hook")


def _keyed_compute_cache_key(kernel_key_cache, specialization, options):
    """Runs on every launch: read our hook directly, not through the knob's descriptor."""
    base = _orig_compute_cache_key(kernel_key_cache, specialization, options)
    key_fn = _key_fn
    if key_fn is not None:
        digest = key_fn(kernel_key_cache.get(_KERNEL))[1]
        if digest:
            return (base, digest)
    return base


def track_kernel_keys(kernel: Any) -> bool:
    """Let the in-memory JIT key of ``kernel`` depend on the kernel itself (its own pipeline).

    On 3.6 the key function sees the kernel's ``kernel_key_cache``, one per kernel and device, so
    marking those caches is enough and launches need no wrapper. Returns False on 3.7+, where
    Triton asks for the key without saying which kernel, so the caller must make the kernel's
    pipeline the active one around each launch instead.
    """
    if NATIVE_HOOK_PROTOCOL:
        return False
    caches = kernel.device_caches

    def register(entry: tuple) -> tuple:
        entry[1][_KERNEL] = kernel
        return entry

    for entry in caches.values():
        register(entry)
    factory = caches.default_factory
    if not getattr(factory, "tritium_tracked", False):
        def tracked() -> tuple:
            return register(factory())
        tracked.tritium_tracked = True  # type: ignore[attr-defined]
        caches.default_factory = tracked
    return True


def install_stages_hook(hook: ChainedHook) -> None:
    """Put ``hook`` in Triton's stages-hook slot, chaining the hook found there.

    ``hook.apply(backend, stages, options, language, capability, kernel=...)`` edits the stages;
    ``hook.key(kernel, fresh)`` returns ``(key, hash)``, empty strings when nothing is active, so keys stay
    exactly those of bare Triton.  Triton has one slot: another tritium hook in it is uninstalled first
    (the plugin manager decides when that is allowed).  Idempotent; called again after another tool
    replaced the hook, it puts ``hook`` back with that tool's hook chained in.
    """
    global _installed, _key_fn
    if _installed is hook:
        current = knobs.runtime.add_stages_inspection_hook
        if current is not hook:  # another tool set its hook over ours: chain it behind ours
            hook.previous = current
            knobs.runtime.add_stages_inspection_hook = hook
        return
    uninstall_stages_hook()
    hook.previous = knobs.runtime.add_stages_inspection_hook
    _installed, _key_fn = hook, hook.key
    knobs.runtime.add_stages_inspection_hook = hook
    if not NATIVE_HOOK_PROTOCOL:
        _compiler.get_cache_key = _keyed_get_cache_key
        _jit.get_cache_key = _jit_get_cache_key
        _jit.compute_cache_key = _keyed_compute_cache_key
    else:
        _compiler.get_cache_key = _checked_get_cache_key


def uninstall_stages_hook(hook: Optional[ChainedHook] = None) -> None:
    """Restore the hook and key functions exactly as they were before ``hook`` was installed.

    ``None`` means whichever tritium hook is installed; a hook that is not installed is left alone.
    """
    global _installed, _key_fn
    if _installed is None or (hook is not None and hook is not _installed):
        return
    if knobs.runtime.add_stages_inspection_hook is _installed:
        knobs.runtime.add_stages_inspection_hook = _installed.previous
    _installed = _key_fn = None
    _compiler.get_cache_key = _orig_get_cache_key
    _jit.get_cache_key = _orig_jit_get_cache_key
    _jit.compute_cache_key = _orig_compute_cache_key


def stages_hook_installed() -> bool:
    return _installed is not None and knobs.runtime.add_stages_inspection_hook is _installed


def installed_stages_hook() -> Optional[ChainedHook]:
    """The tritium hook that holds Triton's slot (even if another tool has since set its hook over it)."""
    return _installed


# --------------------------------------------------------------------------------------------
# Plugin-defined launch and compile options
# --------------------------------------------------------------------------------------------
# Triton 3.6-3.9 turn launch keywords into backend options in one place: ``JITFunction._pack_args`` calls
# ``backend.parse_options(kwargs)`` (which keeps the fields of the backend's frozen options dataclass) and
# refuses any keyword that is neither a field of the result nor a kernel parameter; ``triton.compile`` calls
# ``parse_options`` again on ``options.__dict__``; ``options.hash()`` (every field of ``__dict__``) is part of
# the on-disk key, and the JIT's in-memory key already holds the launch keywords themselves. So a plugin option
# that ``parse_options`` adds to the options object is accepted, reaches ``add_stages`` (and the stage
# context), the compile's metadata and both keys, with nothing else wrapped. ``triton.Config`` takes only
# its own keywords: plugin options given to it join its ``kwargs``, which the autotuner passes to the launch.
class OptionResolver(Protocol):
    """What the plugin core gives :func:`install_launch_options`: ``resolve(backend, opts)`` returns the plugin
    options among ``opts`` (checked, converted) for a backend named ``backend`` ("cuda", "hip"), raising an
    error that names the option and its plugin; ``names(backend)`` lists the declared options (for that
    backend, when one is named)."""

    def resolve(self, backend: str, opts: dict) -> dict[str, Any]: ...

    def names(self, backend: Optional[str] = None) -> list[str]: ...


_option_resolver: Optional[OptionResolver] = None
_UNRECOGNISED = re.compile(r"Keyword argument (\S+) was specified but unrecognised")
_orig_pack_args = _jit.JITFunction._pack_args
#: ``triton.Config.__init__`` below the plugin options' patch: Triton's own, or that wrapped by
#: :func:`wrap_config_init` (kept across install and uninstall of the launch options).
_orig_config_init = triton.Config.__init__


def _options_backends() -> list[type]:
    """The compiler classes of the installed backends (each has its own ``parse_options``)."""
    from triton.backends import backends
    return [b.compiler for b in backends.values()]


_orig_parse_options = {cls: cls.__dict__["parse_options"] for cls in _options_backends()}


@functools.lru_cache(maxsize=None)
def _options_class(base: type, names: tuple[str, ...]) -> type:
    """``base`` (a backend's frozen options dataclass) with the fields ``names`` added, so that
    ``options.__dict__`` and ``options.hash()`` hold them as they hold the backend's own."""
    import dataclasses
    return dataclasses.make_dataclass(base.__name__, [(n, Any, dataclasses.field(default=None)) for n in names],
                                      bases=(base,), frozen=True,
                                      namespace={"__module__": base.__module__, "tritium_plugin_fields": names})


def plugin_option_fields(options: Any) -> tuple[str, ...]:
    """The fields that plugin options added to a compile's backend options (none where the backend declares a
    name itself: Triton 3.8+ has AMD's ``llvm_fn_attrs``, and then applies it itself)."""
    return getattr(type(options), "tritium_plugin_fields", ())


def _with_plugin_options(options: Any, extra: dict[str, Any]) -> Any:
    names = tuple(sorted(extra))
    out = object.__new__(_options_class(type(options), names))
    out.__dict__.update(options.__dict__)  # the backend's fields as its __post_init__ left them (no second run)
    for name in names:
        object.__setattr__(out, name, extra[name])
    return out


def _parse_options_with_plugins(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def parse_options(self: Any, opts: dict) -> Any:
        options = original(self, opts)
        resolver = _option_resolver
        if resolver is None:
            return options
        known = getattr(type(options), "__dataclass_fields__", {})
        extra = resolver.resolve(self.target.backend, {k: v for k, v in opts.items() if k not in known})
        return _with_plugin_options(options, extra) if extra else options
    return parse_options


def _pack_args_listing_known(self: Any, backend: Any, kwargs: dict, *args: Any) -> Any:
    """Triton's check of launch keywords, with the keywords it would have taken in its message."""
    try:
        return _orig_pack_args(self, backend, kwargs, *args)
    except KeyError as e:
        match = _UNRECOGNISED.search(str(e))
        if match is None:
            raise
        options = getattr(backend.parse_options({}), "__dataclass_fields__", {})
        plugin = _option_resolver.names(backend.target.backend) if _option_resolver is not None else []
        raise KeyError(f"Keyword argument {match[1]} was specified but unrecognised; known: kernel parameters "
                       f"{', '.join(p.name for p in self.params) or 'none'}; options of the "
                       f"{backend.target.backend} backend {', '.join(sorted(options))}; plugin options "
                       f"{', '.join(plugin) or 'none'}") from None


def _config_init_with_plugin_options(self: Any, kwargs: dict, *args: Any, **extra: Any) -> None:
    """``triton.Config(meta, ..., NAME=value)`` for a plugin option NAME: the value joins the meta-parameters,
    which the autotuner passes to the launch as keywords."""
    resolver = _option_resolver
    plugin = {k: extra.pop(k) for k in list(extra) if resolver is not None and k in resolver.names()}
    _orig_config_init(self, {**kwargs, **plugin} if plugin else kwargs, *args, **extra)


def install_launch_options(resolver: OptionResolver) -> None:
    """Let launches and ``triton.Config`` take the options ``resolver`` declares (replacing any resolver
    installed before); :func:`uninstall_launch_options` puts Triton's functions back."""
    global _option_resolver
    _option_resolver = resolver
    for cls, original in _orig_parse_options.items():
        cls.parse_options = _parse_options_with_plugins(original)
    _jit.JITFunction._pack_args = _pack_args_listing_known
    triton.Config.__init__ = _config_init_with_plugin_options


def uninstall_launch_options(resolver: Optional[OptionResolver] = None) -> None:
    """Restore Triton's option parsing (only if ``resolver``, when given, is the installed one)."""
    global _option_resolver
    if resolver is not None and resolver is not _option_resolver:
        return
    _option_resolver = None
    for cls, original in _orig_parse_options.items():
        cls.parse_options = original
    _jit.JITFunction._pack_args = _orig_pack_args
    triton.Config.__init__ = _orig_config_init


def wrap_config_init(wrap: Callable[[Callable[..., None]], Callable[..., None]]) -> None:
    """Make ``wrap(init)`` ``triton.Config.__init__``'s base, beneath the plugin options' patch, so that installing
    and uninstalling the launch options keep it (TLX's acceptance of the fork's ``ctas_per_cga``): two patches
    of one attribute, each restoring what it found, would drop each other. Wrapping twice with one function
    is a no-op."""
    global _orig_config_init
    mark = getattr(wrap, "__name__", "")
    if mark in getattr(_orig_config_init, "tritium_wrapped", ()):
        return
    base_in_place = triton.Config.__init__ is _orig_config_init
    wrapped = wrap(_orig_config_init)
    wrapped.tritium_wrapped = (*getattr(_orig_config_init, "tritium_wrapped", ()), mark)
    _orig_config_init = wrapped
    if base_in_place:
        triton.Config.__init__ = wrapped


# --------------------------------------------------------------------------------------------
# Clusters of independent CTAs
# --------------------------------------------------------------------------------------------
# Triton 3.6-3.9's NVIDIA launcher takes ``(num_warps, num_ctas, shared)`` as the kernel's packed metadata,
# launches ``gridX * num_ctas`` CTAs along x and, for ``num_ctas > 1``, sets the cluster dimension
# ``(num_ctas, 1, 1)``. A kernel compiled with ``num_ctas=1`` and launched so runs as clusters of independent
# programs, each with its own ``program_id``: the fork's ``ctas_per_cga=(n, 1, 1)``, whose grid counts CTAs.
# The launcher class is wrapped once; a kernel whose metadata lacks the field launches exactly as before. A
# compiled kernel's metadata gives the field as a tuple, as it was given.
_cluster_field: Optional[str] = None


def _cluster_x(metadata: Any, field: str) -> int:
    shape = getattr(metadata, field, None)
    return int(shape[0]) if shape else 1


def install_cluster_launch(field: str) -> None:
    """Launch every NVIDIA kernel whose compile options hold ``field = (n, 1, 1)`` with ``n > 1`` as clusters of
    ``n`` CTAs along x, its grid counting CTAs (a multiple of ``n``). Installing again is a no-op."""
    global _cluster_field
    from triton.backends.nvidia import driver as nv
    launcher = nv.CudaLauncher
    if _cluster_field is not None:
        if field != _cluster_field:
            raise ValueError(f"the cluster launch reads {_cluster_field!r} already, not {field!r}")
        return
    _cluster_field = field
    init, call = launcher.__init__, launcher.__call__

    @functools.wraps(init)
    def __init__(self: Any, src: Any, metadata: Any) -> None:
        init(self, src, metadata)
        self.tritium_cluster = _cluster_x(metadata, field)
        if self.tritium_cluster > 1:
            self.num_ctas = self.tritium_cluster  # per-CTA scratch: gridX below counts clusters

    @functools.wraps(call)
    def __call__(self: Any, gridX: int, gridY: int, gridZ: int, stream: Any, function: Any, kernel_metadata: Any,
                 *rest: Any) -> Any:
        n = getattr(self, "tritium_cluster", 1)
        if n > 1:
            if gridX % n:
                raise ValueError(f"{field}=({n}, 1, 1): the grid's x size {gridX} is not a multiple of the {n} CTAs "
                                 "of a cluster (the grid counts CTAs)")
            gridX //= n
            kernel_metadata = (kernel_metadata[0], n, *kernel_metadata[2:])
        return call(self, gridX, gridY, gridZ, stream, function, kernel_metadata, *rest)

    launcher.__init__, launcher.__call__ = __init__, __call__
    from triton.compiler.compiler import CompiledKernel
    kernel_init = CompiledKernel.__init__

    @functools.wraps(kernel_init)
    def compiled_init(self: Any, *args: Any, **kwargs: Any) -> None:
        kernel_init(self, *args, **kwargs)
        shape = getattr(self.metadata, field, None)
        if isinstance(shape, list):  # the metadata's JSON made a list of the option's tuple (the fork gives a tuple)
            self.metadata = self.metadata._replace(**{field: tuple(shape)})

    CompiledKernel.__init__ = compiled_init


def launch_options_pristine() -> bool:
    """True when Triton's option parsing is its own (no resolver installed or left behind)."""
    return (_jit.JITFunction._pack_args is _orig_pack_args and triton.Config.__init__ is _orig_config_init
            and all(cls.__dict__["parse_options"] is f for cls, f in _orig_parse_options.items()))


# --------------------------------------------------------------------------------------------
# Pass builders and pass managers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PassBuilder:
    """One ``add_*`` function of Triton's bindings, under the name users write."""
    name: str  # e.g. "ttgpuir.coalesce" or "nvidia.ttnvgpuir.plan_cta"
    fn: Callable[..., None]


def _binding_namespaces() -> Iterator[tuple[str, Any]]:
    yield "", passes
    for backend in ("nvidia", "amd"):
        try:
            module = getattr(__import__("triton._C.libtriton", fromlist=[backend]), backend)
        except (ImportError, AttributeError):
            continue
        if hasattr(module, "passes"):
            yield f"{backend}.", module.passes


def _discover_pass_builders() -> dict[str, tuple[Any, str, PassBuilder]]:
    found: dict[str, tuple[Any, str, PassBuilder]] = {}
    for prefix, root in _binding_namespaces():
        for ns in dir(root):
            sub = getattr(root, ns)
            if ns.startswith("_") or not hasattr(sub, "__dict__"):
                continue
            for attr in dir(sub):
                if attr.startswith("add_") and callable(getattr(sub, attr)):
                    name = f"{prefix}{ns}.{attr[4:]}"
                    found[name] = (sub, attr, PassBuilder(name, getattr(sub, attr)))
    return found


PASS_BUILDERS: dict[str, tuple[Any, str, PassBuilder]] = _discover_pass_builders()
_BasePassManager = ir.pass_manager


def stock_pass_builder(name: str) -> PassBuilder:
    """The builder behind a stock pass name (``KeyError`` if Triton has none by that name)."""
    return PASS_BUILDERS[name][2]


@dataclass
class RecordedPass:
    """A pass a backend asked for: its builder and the arguments after the pass manager."""
    builder: PassBuilder
    args: tuple

    def add_to(self, pm: Any) -> None:
        self.builder.fn(pm, *self.args)


class _Recorder(threading.local):
    #: callable(pm, mod, name, recorded, debug) set while a tritium stage runs on this thread
    on_run: Optional[Callable[..., None]] = None


_recorder = _Recorder()


class RecordingPassManager(_BasePassManager):
    """A real pass manager that, inside a tritium stage, collects passes instead of adding them.

    Outside a tritium stage (another thread, no pipeline) it is exactly ``ir.pass_manager``.
    """

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.context = context
        self.debug = False
        self.recorded: Optional[list[RecordedPass]] = [] if _recorder.on_run is not None else None
        self._on_run = _recorder.on_run

    def enable_debug(self) -> bool:
        self.debug = True
        return super().enable_debug()

    def run(self, mod: Any, name: str) -> None:
        if self.recorded is None:
            return super().run(mod, name)
        return self._on_run(self, mod, name, self.recorded)


def new_pass_manager(context: Any, debug: bool) -> Any:
    """A plain pass manager (never recording), with debugging enabled like the one it stands for."""
    pm = _BasePassManager(context)
    if debug:
        pm.enable_debug()
    return pm


def check_pass_args(name: str, args: tuple) -> Optional[str]:
    """Why the stock pass ``name`` rejects ``args`` (its builder's own message), or None if it takes them.

    Adds the pass to a throwaway pass manager, so a bad argument fails where the pass is named, not
    in the middle of a compilation.
    """
    try:
        stock_pass_builder(name).fn(_BasePassManager(_scratch_context()), *args)
    except TypeError as e:
        return str(e).split("\n\nInvoked with")[0]
    return None


@functools.lru_cache(maxsize=1)
def _scratch_context() -> Any:
    return ir.context()


#: Triton >= 3.8's ``llvm.translate_to_asm`` takes a ``canonicalize_gep`` flag after ``is_object``.
LLVM_TRANSLATE_CANONICALIZE_GEP: bool = TRITON_VERSION >= (3, 8)

#: The LLVM IR checker's code: a fresh interpreter (never a fork of the caller, which may be running threads)
#: that reads length-prefixed IR on stdin and answers on stdout, where LLVM's own messages also go.
_LLVM_CHECKER = r"""
import faulthandler, os, re, struct, sys
faulthandler.disable()  # LLVM aborts on bad IR: that is the answer, not a crash to report
from triton._C.libtriton import llvm
answer = os.dup(1)
os.dup2(1, 2)
extra = (False,) if sys.argv[1] == "1" else ()
while True:
    head = sys.stdin.buffer.read(8)
    if len(head) < 8:
        break
    text = sys.stdin.buffer.read(struct.unpack("<Q", head)[0]).decode()
    triple = re.search(r'target triple = "([^"]+)"', text)
    try:  # translate_to_asm(ir, triple, proc, features, flags, enable_fp_fusion, is_object[, canonicalize_gep])
        llvm.translate_to_asm(text, triple.group(1) if triple else "nvptx64-nvidia-cuda", "", "", [], False, False,
                              *extra)
        reply = "ok"
    except TypeError as e:  # the binding's arguments changed
        reply = "typeerror " + str(e).replace(chr(10), " ")
    os.write(answer, ("\n" + sys.argv[2] + reply + "\n").encode())
"""


class LLVMCheckError(RuntimeError):
    """The LLVM IR checker did not answer: it hung past the timeout, or was killed."""


class _LLVMChecker:
    """One checker process, started on first use and kept for the next checks; one check at a time."""
    MARK = "tritium-llvm-check-answer: "

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: Optional[Any] = None

    def _start(self) -> Any:
        import subprocess
        self.proc = subprocess.Popen([sys.executable, "-c", _LLVM_CHECKER, "1" if LLVM_TRANSLATE_CANONICALIZE_GEP
                                      else "0", self.MARK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        return self.proc

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()

    def check(self, text: str, timeout: float) -> tuple[bool, str]:
        """``(answered, output)``: answered False when the process died on this IR (LLVM aborts on a parse
        error), with what it printed."""
        import select
        import struct
        with self.lock:
            proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
            data = text.encode()
            try:
                proc.stdin.write(struct.pack("<Q", len(data)) + data)
                proc.stdin.flush()
            except BrokenPipeError:  # died before reading (killed meanwhile): its output says why
                pass
            out, deadline = b"", time.monotonic() + timeout
            fd = proc.stdout.fileno()
            while self.MARK.encode() not in out or not out.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    self.stop()
                    raise LLVMCheckError(f"the LLVM IR check did not answer within {timeout:g} s "
                                         "(tritium.knobs.runtime.llvm_check_timeout); its process was stopped")
                chunk = os.read(fd, 1 << 16)
                if not chunk:  # the process ended
                    code = proc.wait()
                    self.stop()
                    message = out.decode(errors="replace").strip()
                    if code in (-9, -15):  # SIGKILL, SIGTERM: killed, not LLVM's answer
                        raise LLVMCheckError(f"the LLVM IR check's process was killed (signal {-code})"
                                             + (f": {message}" if message else ""))
                    return False, message
                out += chunk
            return True, out.decode(errors="replace").split(self.MARK)[-1].strip()


_llvm_checker = _LLVMChecker()
atexit.register(_llvm_checker.stop)


def llvm_ir_parse_error(text: str, timeout: float = 120.0) -> Optional[str]:
    """LLVM's message if ``text`` is not valid LLVM IR, else None.

    Triton parses LLVM IR with a fatal-error handler that aborts the process, so the parse runs in a helper
    process, started once (a fresh interpreter, so a threaded caller is never forked) and reused; it runs
    LLVM's translation, whose parse step is what matters, and only a parse failure counts.

    Raises:
        LLVMCheckError: the helper did not answer within ``timeout`` seconds, or was killed.
        RuntimeError: this Triton's ``translate_to_asm`` takes other arguments (never taken for valid IR).
    """
    if os.name != "posix":  # the helper's pipe is waited on with select()
        return None
    answered, output = _llvm_checker.check(text, timeout)
    if answered:
        if output.startswith("typeerror "):
            raise RuntimeError("tritium.compat.llvm_ir_parse_error: llvm.translate_to_asm does not take these "
                               f"arguments on triton {triton.__version__}: {output[len('typeerror '):]}")
        return None
    return output if "parse" in output else None


def run_plain(pm: Any, mod: Any, name: str) -> None:
    """Run ``pm`` with the stock ``run``, bypassing recording."""
    _BasePassManager.run(pm, mod, name)


def _wrap_builder(builder: PassBuilder) -> Callable[..., None]:
    def add(pm: Any, *args: Any) -> None:
        recorded = getattr(pm, "recorded", None)
        if recorded is None:
            return builder.fn(pm, *args)
        recorded.append(RecordedPass(builder, args))
    add.__wrapped__ = builder.fn  # type: ignore[attr-defined]
    add.__name__ = builder.fn.__name__
    return add


_intercept_lock = threading.Lock()
_intercept_depth = 0


class intercept_pass_managers:
    """Context manager: while any thread is inside, pass builders record into recording managers.

    Reference counted so that concurrent compiles on several threads share one installation; the
    bindings are restored when the last one leaves, even on error.
    """

    def __init__(self, on_run: Callable[..., None]) -> None:
        self.on_run = on_run
        self.saved: Optional[Callable[..., None]] = None

    def __enter__(self) -> "intercept_pass_managers":
        global _intercept_depth
        with _intercept_lock:
            if _intercept_depth == 0:
                for sub, attr, builder in PASS_BUILDERS.values():
                    setattr(sub, attr, _wrap_builder(builder))
                ir.pass_manager = RecordingPassManager
            _intercept_depth += 1
        self.saved, _recorder.on_run = _recorder.on_run, self.on_run
        return self

    def __exit__(self, *exc: Any) -> None:
        global _intercept_depth
        _recorder.on_run = self.saved
        with _intercept_lock:
            _intercept_depth -= 1
            if _intercept_depth == 0:
                for sub, attr, builder in PASS_BUILDERS.values():
                    setattr(sub, attr, builder.fn)
                ir.pass_manager = _BasePassManager


def pass_builders_pristine() -> bool:
    """True when every binding is Triton's own (no interception left behind)."""
    return ir.pass_manager is _BasePassManager and all(
        getattr(sub, attr) is builder.fn for sub, attr, builder in PASS_BUILDERS.values())


_native_loaded: dict[str, list[str]] = {}


def load_native_plugin(path: str) -> list[str]:
    """Load a ``.so`` plugin through Triton's API (``NATIVE_PLUGIN_LOADER == "api"``).

    Returns the stock pass names it added (``plugin.<pass>``).  Triton keeps the library loaded for
    good, so a second call for the same file returns the first call's answer.  Raises ``RuntimeError``
    (Triton's message) when the file is not a plugin for this Triton.
    """
    if NATIVE_PLUGIN_LOADER != "api":
        raise RuntimeError(f"Triton {triton.__version__} has no API to load native plugins")
    real = os.path.realpath(path)
    with _intercept_lock:
        if real not in _native_loaded:
            if _intercept_depth:
                raise RuntimeError("cannot load a native plugin while a compilation is running")
            before = {name: builder.fn for name, (_, _, builder) in PASS_BUILDERS.items()}
            passes.plugin.extend_with(real)
            ir.extend_dialects_with(real)
            ir.builder.extend_with(real)
            PASS_BUILDERS.update(_discover_pass_builders())
            # extend_with (re)creates passes.plugin.add_<pass> for this library's passes only
            _native_loaded[real] = sorted(name for name, (_, _, builder) in PASS_BUILDERS.items()
                                          if builder.fn is not before.get(name))
        return _native_loaded[real]


# --------------------------------------------------------------------------------------------
# Generated code
# --------------------------------------------------------------------------------------------
def ptxas_path(arch: int) -> str:
    """The ptxas Triton assembles PTX for ``sm_<arch>`` with: 3.6-3.8 the legacy one below sm_100, 3.9 the
    newer (``ptxas-blackwell``) one from sm_90 on, as its PTX has a version the legacy one rejects."""
    from triton.backends.nvidia.compiler import get_ptxas
    return get_ptxas(arch).path


# --------------------------------------------------------------------------------------------
# MLIR modules
# --------------------------------------------------------------------------------------------
def signature_type_names() -> list[str]:
    """The scalar type names a kernel signature may use (``i32``, ``fp16``, ...), as Triton's own table has them."""
    from triton._utils import BITWIDTH_DICT
    return list(BITWIDTH_DICT)


def entry_function_name(mod: Any) -> Optional[str]:
    """The name of the module's public (kernel) function, '' if it has none; None where this Triton's
    bindings cannot tell."""
    get = getattr(mod, "get_entry_func_name", None)
    return get() if get is not None else None


def is_mlir_module(obj: Any) -> bool:
    return isinstance(obj, ir.module)


#: ``%x = llvm.call_intrinsic ... -> !llvm.void``: how 3.6 prints a void intrinsic call, which its parser
#: rejects ("expected a non-void result type"); reparsed as the same call with no result.
_VOID_CALL = re.compile(r"^(\s*)%[\w$.-]+ = (llvm\.call_intrinsic .*\)) -> !llvm\.void", re.M)
#: ``nvvm.barrier [id = %a] [number_of_threads = %b] loc(...)``: 3.7's parser of that printed form reads the
#: location as the op's optional reduction (its third operand group) and fails; reparsed in generic form.
_NVVM_BARRIER = re.compile(r"^(\s*)nvvm\.barrier(?: id = (%[\w$.-]+))?(?: number_of_threads = (%[\w$.-]+))?"
                           r"(?P<loc> loc\(.*\))?$", re.M)


def _generic_barrier(m: re.Match) -> str:
    operands = [v for v in m.group(2, 3) if v]
    segments = ", ".join("1" if v else "0" for v in m.group(2, 3))
    return (f'{m[1]}"nvvm.barrier"({", ".join(operands)}) <{{operandSegmentSizes = array<i32: {segments}, 0>}}> : '
            f'({", ".join(["i32"] * len(operands))}) -> (){m["loc"] or ""}')


def _reparsable(text: str) -> str:
    """Printed MLIR as the installed Triton's parser reads it back (see the two patterns above)."""
    text = _VOID_CALL.sub(r"\1\2 -> ()", text)
    return _NVVM_BARRIER.sub(_generic_barrier, text) if TRITON_VERSION[:2] == (3, 7) else text


def parse_module(text: str, context: Any) -> Any:
    """Parse MLIR text in ``context`` (the bindings only parse files), as printed by this Triton."""
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".mlir", prefix="tritium-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(_reparsable(text))
        module = ir.parse_mlir_module(path, context)
        module.context = context  # as Triton's own sources do; backends read mod.context
        return module
    finally:
        os.unlink(path)


def _body_block(mod: Any) -> Any:
    region = mod.get_region(0)
    found: list[Any] = []

    def visit(op: Any) -> None:
        block = op.get_block()
        if not found and block is not None and block.get_parent().id() == region.id():
            found.append(block)

    mod.walk(visit)
    if not found:
        raise ValueError("module has an empty body")
    return found[0]


_MODULE_ATTRS = re.compile(r"^module(?: @\S+)? attributes \{(.*)\}", re.MULTILINE)
_ATTR_NAME = re.compile(r'(?:^|, )("[^"]+"|[\w.$-]+) = ')


def replace_module_body(old: Any, new: Any) -> None:
    """Make ``old`` hold ``new``'s operations and integer/string/bool module attributes.

    Backends keep using the module object they created after ``pm.run`` returns (for metadata and
    for translation to LLVM), so a pass that returns a fresh module must be folded back into it.
    """
    if new is old:
        return
    match = _MODULE_ATTRS.search(new.str())  # read before the move: an empty module prints generically
    new_block, old_block = _body_block(new), _body_block(old)
    new_block.move_before(old_block)
    old_block.erase()
    builder = ir.builder(old.context)
    op = new.get_operation()
    for raw in _ATTR_NAME.findall(match.group(1)) if match else ():
        name = raw.strip('"')
        if (flag := op.get_bool_attr(name)) is not None:  # before ints: a bool is an i1 integer attribute
            old.set_attr(name, builder.get_bool_attr(flag))
        elif (value := new.get_int_attr(name)) is not None:
            old.set_attr(name, builder.get_int32_attr(value))
        elif (text := op.get_str_attr(name)) is not None:
            old.set_attr(name, builder.get_string_attr(text))


def ast_source(fn: Any, signature: dict, constexprs: dict, attrs: dict) -> Any:
    """Triton's or Gluon's AST source for ``fn``: Gluon keeps its source class in a private module.

    Constexpr parameters left out take their defaults, as a launch binds them: Triton 3.6 reads an omitted
    constexpr's default itself, 3.7+ give it no type and fail."""
    for param in fn.params:
        if param.is_constexpr and param.has_default and param.name not in constexprs:
            constexprs = {**constexprs, param.name: param.default}
            signature = {**signature, param.name: "constexpr"}
    if getattr(fn, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource
        return GluonASTSource(fn, signature, constexprs, attrs)
    return triton.compiler.ASTSource(fn, signature, constexprs, attrs)


# --------------------------------------------------------------------------------------------
# Direct launches of compiled kernels (tritium.ops): what JITFunction.run does per call, split
# into a part done once per (kernel, arguments' shapes) and a per-call part.


def pipeline_digest(kernel: Any) -> str:
    """The hash of the pipelines in effect for ``kernel`` ("" when none): part of its JIT cache key, so a
    cached compiled kernel stays valid exactly while this stays the same."""
    key_fn = _installed.key if _installed is not None else None
    return key_fn(kernel)[1] if key_fn is not None else ""


def _hook_set(hook: Any) -> bool:
    calls = getattr(hook, "calls", None)  # 3.6+: a HookChain, empty when no hook was added
    return bool(calls) if calls is not None else hook is not None


def launch_hooks_active() -> bool:
    """Whether a profiler-style launch hook is set: direct launches skip hooks, so callers fall back."""
    return _hook_set(knobs.runtime.launch_enter_hook) or _hook_set(knobs.runtime.launch_exit_hook)


def current_stream(device: int) -> int:
    """The raw handle of the current stream of ``device``, as Triton launches on it."""
    return triton.runtime.driver.active.get_current_stream(device)


@dataclass
class DirectLaunch:
    """A compiled kernel ready to launch with already-expanded arguments.

    ``descriptor_meta`` holds, per tensor-descriptor parameter, the TMA metadata Triton computed for
    it (or None); :func:`descriptor_args` expands a host TensorDescriptor with it.
    """
    launcher: Any
    function: Any
    packed_metadata: Any
    descriptor_meta: list

    def __call__(self, grid: tuple[int, int, int], stream: int, args: list) -> None:
        self.launcher(grid[0], grid[1], grid[2], stream, self.function, self.packed_metadata, None, None, None,
                      *args)


def direct_launch(compiled: Any) -> Optional[DirectLaunch]:
    """A :class:`DirectLaunch` of ``compiled`` (the CompiledKernel ``kernel[grid](...)`` returned), whose
    launcher takes tensor descriptors already expanded by :func:`descriptor_args`; None where this
    Triton's launcher does not have the expected shape (callers then keep launching through the JIT)."""
    import copy

    run = compiled.run  # loads the binary and builds the launcher on first use
    launch = getattr(run, "launch", None)
    if launch is None:
        return None
    sig = getattr(compiled.src, "signature", {})
    has_desc = any(isinstance(t, str) and t.startswith("tensordesc") for t in sig.values())
    meta = list(getattr(compiled.metadata, "tensordesc_meta", None) or [])
    if has_desc:  # unwrap wrap_handle_tensordesc's closure: its `launcher` is the raw C launch
        names = getattr(getattr(launch, "__code__", None), "co_freevars", ())
        if "launcher" not in names or launch.__closure__ is None:
            return None
        launch = launch.__closure__[names.index("launcher")].cell_contents
        if not meta:
            meta = [None] * sum(isinstance(t, str) and t.startswith("tensordesc") for t in sig.values())
    raw = copy.copy(run)
    raw.launch = launch
    return DirectLaunch(raw, compiled.function, compiled.packed_metadata, meta)


#: Triton >= 3.8's ``make_tensordesc_arg(arg, metadata, base_args)`` also takes the launcher's leading
#: arguments (which NVIDIA's ignores); 3.6 has ``make_tensordesc_arg(arg, metadata)``.
TENSORDESC_ARG_BASE_ARGS: bool = TRITON_VERSION >= (3, 8)


def descriptor_args(desc: Any, meta: Any) -> list:
    """The launcher arguments of host TensorDescriptor ``desc`` (a CUtensorMap and its shape and strides)."""
    from triton.backends.nvidia.driver import make_tensordesc_arg
    return make_tensordesc_arg(desc, meta, ()) if TENSORDESC_ARG_BASE_ARGS else make_tensordesc_arg(desc, meta)
