"""carbonshift: move flexible batch work to the times and places where electricity is cleanest.

The public surface is small; see :mod:`carbonshift.domain` for the vocabulary,
:mod:`carbonshift.formats` for the contract files and :mod:`carbonshift.carbon` for signals
and forecasts.
"""

from carbonshift.errors import CarbonshiftError, InputError

__all__ = ["CarbonshiftError", "InputError", "__version__"]

__version__ = "0.1.0"
