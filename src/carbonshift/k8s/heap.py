"""What a controller process does with Python's cyclic garbage collector.

The first list of a controller or hub fills its caches with thousands of objects (10,000
Pods, each a tree of dicts and lists), which then live as long as the process. Every full
collection after that walks them all again and finds nothing to free: 5-6 full collections,
0.55-0.60 s of the first pass over 10,000 held Pods (bench/controller.md, 2026-11-27).
:func:`settle` collects once and moves what is alive into the permanent generation
(:func:`gc.freeze`, the step CPython documents for long-lived servers), so later
collections walk only what came after. Cycles among frozen objects are
never collected: an object that leaves the cache later (a deleted Pod) is freed by its
reference count as before, and only one caught in a reference cycle would stay.

While the first list fills the caches, the youngest generation's threshold of 700
allocations sets off a collection every 700 new containers, and each tenth of those a
collection of the middle one: :func:`prepare` raises it to :data:`YOUNG_THRESHOLD` (the older
generations' ratios stay; the young cyclic garbage it lets wait is a few MB at most).
Freezing alone would not do: the old generation, emptied into the permanent one, passes its
25 % growth rule sooner, and full collections come more often (8 instead of 5 in that pass).
Together: 0.60 s of collection in the first pass over 10,000 held Pods became 0.32 s, a
quiet period's 0.13-0.18 s became 0.01-0.04 s (bench/controller.md, "The collector tuned").

Process-wide, so only the entry points (``carbonshift controller`` through
:meth:`~carbonshift.k8s.app.ControllerApp.connect`, and ``carbonshift hub``) call them:
:func:`prepare` at the start, :func:`settle` once their first lists are stored; a library
object that tests build many times does not.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "prepare", "settle"]

#: allocations (less deallocations) of containers between two young-generation collections
YOUNG_THRESHOLD = 10_000


def prepare() -> None:
    """Raise the young generation's threshold to :data:`YOUNG_THRESHOLD` (the process's
    start; the older generations' thresholds stay as they are)."""
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(max(_young, YOUNG_THRESHOLD), middle, old)


def settle() -> None:
    """Collect once, then freeze every object alive now (:func:`gc.freeze`)."""
    gc.collect()
    gc.freeze()
