"""The ``carbonshift`` command line."""
