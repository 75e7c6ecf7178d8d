"""Benchmarks behind ``tritium bench``: each prints a table of ratios and saves a PNG plot."""
