"""Imported last in the /v1/plan forkserver: the program's main module, loaded there once.

multiprocessing starts each solve worker by importing the parent's main module (as
``__mp_main__``) unless the process it forks from already has it. The forkserver's own
``"__main__"`` preload does not do that before Python 3.14 (its start-up data never carries
the main path: CPython gh-126631), so every worker imported the main module again; for the
``carbonshift`` console script that is the whole CLI, 1.3-1.8 s of each request. The
parent names its main path in ``MAIN_PATH_ENV`` while it starts the forkserver
(:class:`carbonshift.api.solves.SolveRunner`), and this module, named last in the preload
(after :mod:`carbonshift.api.solves`, which the main module may import), imports it here.
Imported anywhere else without that variable, it does nothing.
"""

from __future__ import annotations

import os
from multiprocessing import spawn

from carbonshift.api.solves import MAIN_PATH_ENV

__all__: list[str] = []

_main_path = os.environ.pop(MAIN_PATH_ENV, "")
if _main_path:
    spawn.import_main_path(_main_path)
