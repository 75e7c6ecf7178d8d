"""Errors that name the plugin, pass, stage or argument at fault."""
from __future__ import annotations

from typing import Optional


class TritiumError(Exception):
    """Base class of every error tritium raises on purpose."""


class PluginLoadError(TritiumError):
    """A plugin could not be found, imported or registered."""


class PipelineError(TritiumError):
    """A pipeline edit does not fit the pipeline Triton really runs."""


class StageError(PipelineError):
    """A stage that pipelines edit failed in Triton's own code; ``error`` is what Triton raised."""

    def __init__(self, message: str, error: BaseException) -> None:
        super().__init__(message)
        self.error = error


class PassError(TritiumError):
    """A pass raised, or left IR that fails verification."""

    def __init__(self, message: str, *, plugin: Optional[str], pass_name: str, stage: str,
                 dump: Optional[str]) -> None:
        where = f"pass {pass_name!r}" + (f" of plugin {plugin!r}" if plugin else "") + f" in stage {stage!r}"
        text = f"{where}: {message}"
        if dump:
            text += f" (IR dumped to {dump})"
        super().__init__(text)
        self.plugin, self.pass_name, self.stage, self.dump = plugin, pass_name, stage, dump


class PassFingerprintWarning(UserWarning):
    """A pass's fingerprint changed between two compiles of one kernel, so the kernel was compiled again."""
