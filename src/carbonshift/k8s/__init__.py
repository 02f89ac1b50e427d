"""carbonshift.k8s (see DESIGN.md)."""
