"""carbonshift.workloads (see DESIGN.md)."""
