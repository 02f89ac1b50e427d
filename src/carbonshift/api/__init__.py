"""carbonshift.api (see DESIGN.md)."""
