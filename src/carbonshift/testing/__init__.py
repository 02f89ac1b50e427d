"""carbonshift.testing (see DESIGN.md)."""
