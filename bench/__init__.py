"""carbonshift benchmarks: run with ``make bench`` or ``python -m bench [NAME ...]``."""
