"""carbonshift.sim (see DESIGN.md)."""
