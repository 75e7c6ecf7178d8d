"""Codegen parity: compile the same TLX kernels with uTLX and with tritium on one Triton, and compare.

``dump`` runs inside one environment (uTLX's or tritium's) and writes each kernel's TTGIR and
PTX/AMDGCN; ``compare`` reads both dumps, normalizes them and writes docs/codegen-parity.md.
``scripts/ci_codegen_parity.sh`` builds the two environments and runs both steps.
"""
