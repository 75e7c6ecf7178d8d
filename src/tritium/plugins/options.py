"""Launch and compile options that plugins declare: ``kernel[grid](..., NAME=value)`` and
``triton.Config(..., NAME=value)`` on stock Triton, checked here and carried by the backend's options
object (``compat.install_launch_options``), so they reach the plugin's passes (``ctx.options``) and the
cache keys like the backend's own options."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Union

from .errors import PluginLoadError, TritiumError


class OptionError(TritiumError, ValueError):
    """A plugin option given a value of the wrong type, or on a target its plugin does not declare it for."""


@dataclass(frozen=True)
class PluginOption:
    """One option a plugin declares.

    ``type`` (a type or tuple of types) is checked with ``isinstance``; ``convert``, if given, then turns the
    value into the form passes read (hashable with a stable ``repr``: it is part of the cache key; and accepted
    again, as Triton parses options twice) and may raise ``ValueError`` for a bad value. ``targets`` names the
    backends it applies to ("cuda", "hip"); empty means all. Elsewhere only the default is accepted (launch code
    shared between targets may pass it). An option left out of a launch is absent from the options object, so kernels
    that do not use it keep bare Triton's keys: passes read it with :meth:`value`.
    """
    name: str
    type: Union[type, tuple[type, ...]]
    default: Any = None
    targets: tuple[str, ...] = ()
    help: str = ""
    convert: Optional[Callable[[Any], Any]] = None

    def value(self, options: Any) -> Any:
        """This option's value in a compile's backend options (``ctx.options``), or its default."""
        return getattr(options, self.name, self.default)


class OptionTable:
    """The options of the loaded plugins, by name, with the plugin that declares each (a
    ``compat.OptionResolver``)."""

    def __init__(self, declared: Iterable[tuple[str, PluginOption]] = ()) -> None:
        self.by_name: dict[str, tuple[str, PluginOption]] = {}
        for plugin, opt in declared:
            other = self.by_name.get(opt.name)
            if other is not None:
                raise PluginLoadError(f"plugin {plugin!r}: option {opt.name!r} is declared by plugin {other[0]!r} "
                                      "already; two plugins cannot share a launch keyword")
            self.by_name[opt.name] = (plugin, opt)

    def names(self, backend: Optional[str] = None) -> list[str]:
        return sorted(name for name, (_, opt) in self.by_name.items()
                      if backend is None or not opt.targets or backend in opt.targets)

    def resolve(self, backend: str, opts: dict) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in opts.items():
            if name not in self.by_name or value is None:
                continue
            plugin, opt = self.by_name[name]
            elsewhere = bool(opt.targets) and backend not in opt.targets
            if not isinstance(value, opt.type):
                types = opt.type if isinstance(opt.type, tuple) else (opt.type,)
                raise OptionError(f"option {name!r} of plugin {plugin!r} expects "
                                  f"{' or '.join(t.__name__ for t in types)}, got {type(value).__name__} {value!r}")
            if opt.convert is not None:
                try:
                    value = opt.convert(value)
                except (TypeError, ValueError) as e:
                    raise OptionError(f"option {name!r} of plugin {plugin!r}: {e}") from e
            if elsewhere and value != opt.default:  # portable launch code may pass the default everywhere
                raise OptionError(f"option {name!r} of plugin {plugin!r} applies to {', '.join(opt.targets)} "
                                  f"targets only; this compile targets {backend}")
            out[name] = value
        return out
