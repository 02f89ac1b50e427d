"""carbonshift.carbon (see DESIGN.md)."""
