"""tritium: a plugin system and TLX for stock Triton, in pure Python."""
__version__ = "0.1.0"
