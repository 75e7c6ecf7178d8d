"""Example plugins shipped with tritium, each registered as a deferred ``tritium.plugins`` entry point
(``tritium/bundled.py``): loaded on first use by name, never at ``import tritium``."""
