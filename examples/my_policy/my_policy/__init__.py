"""An example of a user's own carbonshift policy (see README.md)."""
