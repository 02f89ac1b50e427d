"""carbonshift.planning (see DESIGN.md)."""
