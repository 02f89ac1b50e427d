"""A watch-fed cache of one collection: what the controller and the hub read instead of lists.

One :class:`Informer` holds the objects of one collection (a path, optionally label- or
field-selected) as the API server last said: a list fills it (:meth:`Informer.relist`), a
watch from that list's ``resourceVersion`` keeps it (:meth:`Informer.follow`, deletions
included: an object leaving a selector comes as ``DELETED``), and :meth:`Informer.run` keeps
watching for good, resuming when the server ends a stream and relisting after a 410 or a
failure. A write's answer goes in only when it is not older than what the watch brought
(:meth:`Informer.keep`, :func:`older`): answers can arrive after the watch events of later
writes. Model: client-go's reflector and store (``tools/cache/reflector.go``), one per
collection, shared by whoever reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from carbonshift.errors import TemporaryError
from carbonshift.k8s.client import GoneError, KubeError

__all__ = ["Informer", "Source", "namespaced_key", "older"]

Obj = dict[str, Any]
Backoff = Callable[[float], Awaitable[None]]

_TOMBSTONES = 4096
"""Deletions remembered so a late create answer does not bring a deleted object back."""
_MAX_RELIST_BACKOFF_S = 30.0
_INTERNED_CHARS = 32


class Source(Protocol):
    """The two verbs an informer needs (``ApiKube`` and the hub's ``HubApi`` have them)."""

    async def list(self, path: str, **query: str) -> Obj: ...

    def watch(self, path: str, resource_version: str, **query: str) -> AsyncIterator[Obj]: ...


def namespaced_key(obj: Obj) -> str:
    """``namespace/name`` (``name`` alone for a cluster-scoped object)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def _compact(value: Any, old: Any = None) -> Any:
    """``value`` with its keys and short strings interned, and every part equal to the same
    part of ``old`` (the version cached before, or another object of the collection) taken
    from ``old``.

    Each parsed object has its own copy of every key ("metadata", "annotations", ...) and
    label, half its memory (a hub Job: 9.1 KiB parsed, 4.2 KiB compacted); and a new version
    of an object mostly repeats the one before (a Pod's annotations change, its spec does
    not), as objects of one template repeat each other (their spec, their status while
    pending): they share what is equal instead of copying it again (a dict compare runs in
    C, a copy in Python). Parsed JSON holds exact dicts, lists and strings: leaves
    are handled in their dict, without a call each (a hub Job has about 70 values). Cached
    objects are never changed in place, so sharing their parts is safe."""
    kind = type(value)
    if kind is dict:
        was: dict[str, Any] = old if type(old) is dict else _NOTHING
        out: dict[str, Any] = {}
        for key, item in value.items():
            item_kind = type(item)
            if item_kind is str:
                if len(item) <= _INTERNED_CHARS:
                    out[_intern(key)] = _intern(item)
                else:
                    prev = was.get(key)
                    out[_intern(key)] = prev if prev == item else item
            elif item_kind is dict or item_kind is list:
                prev = was.get(key)
                if prev is not None and prev == item:
                    out[_intern(key)] = prev
                else:
                    out[_intern(key)] = _compact(item, prev)
            else:
                out[_intern(key)] = item
        return out
    if kind is list:
        if type(old) is list and len(old) == len(value):
            return [o if o == v else _compact(v, o) for v, o in zip(value, old, strict=True)]
        return [_compact(v) for v in value]
    if kind is str and len(value) <= _INTERNED_CHARS:
        return _intern(value)
    return value


_NOTHING: dict[str, Any] = {}
_intern = sys.intern


def _rv(obj: Obj | None) -> int | None:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion", ""))
    except (TypeError, ValueError):
        return None


def _same_version(obj: Obj, than: Obj) -> bool:
    """Whether ``obj`` and ``than`` carry the same resourceVersion (the same version of one
    object: nothing but ``managedFields``, which the cache drops, can differ)."""
    mine = (obj.get("metadata") or {}).get("resourceVersion")
    return bool(mine) and mine == (than.get("metadata") or {}).get("resourceVersion")


def older(obj: Obj, than: Obj | None) -> bool:
    """Whether ``obj`` is an older version of the same object than ``than`` (resourceVersions
    are etcd revisions: integers; anything else counts as not older)."""
    mine, theirs = _rv(obj), _rv(than)
    return mine is not None and theirs is not None and mine < theirs


class Informer:
    """The objects of one collection, kept by a watch (see the module doc).

    ``key`` names an object in :attr:`items` (default ``namespace/name``); ``kind`` and
    ``api_version`` are set on objects that arrive without them (list items do);
    ``page_size``: objects per list request (:meth:`relist`).
    """

    def __init__(
        self,
        source: Source,
        path: str,
        *,
        kind: str,
        api_version: str,
        key: Callable[[Obj], str] = namespaced_key,
        query: Mapping[str, str] | None = None,
        page_size: int = 500,
    ) -> None:
        self.source = source
        self.path = path
        self.kind = kind
        self.api_version = api_version
        self.key = key
        self.query = dict(query or {})
        self.page_size = page_size
        """Objects per list request (0: the whole collection in one answer)."""
        self.items: dict[str, Obj] = {}
        self.resource_version = ""
        """The collection's version the cache has reached (the watch resumes from it)."""
        self.listed = False
        """Whether a list has filled the cache once."""
        self.watching = False
        """Whether a watch keeps the cache now (set by whoever runs :meth:`run`)."""
        self.failing = False
        """Whether the watch failed and no list has mended the cache since (a reader that
        needs it fresh relists at once rather than wait for :meth:`run`'s backoff)."""
        self.lists = 0
        """How many list requests this informer made, pages included (tests count them)."""
        self._deleted: dict[str, int | None] = {}
        self._last: Obj | None = None  # the object stored last (a new one shares with it)
        self._task: asyncio.Task[None] | None = None

    # -- filling ----------------------------------------------------------------------------

    def _label(self, obj: Obj) -> None:
        """Set kind and apiVersion on ``obj`` where it has none (list items have none) and
        drop its ``managedFields`` (nothing reads them from a cache, and they are a good part
        of each object: client-go's informers strip them too,
        ``TransformStripManagedFields``; whoever needs them GETs the object)."""
        obj.setdefault("kind", self.kind)
        obj.setdefault("apiVersion", self.api_version)
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)

    def _put(self, key: str, new: Obj) -> None:
        """Cache ``new`` (labelled) under ``key``, sharing what it has in common with the
        version cached before (:func:`_compact`), unless that version is the same or newer."""
        prev = self.items.get(key)
        if prev is not None and (older(new, prev) or _same_version(new, prev)):
            return
        self.items[key] = _compact(new, prev)

    def store(self, obj: Obj) -> str:
        """Cache ``obj`` (a watch event's or a list's); answers its key. A version already
        cached (the answer of our own write, then its watch event) is kept as it is."""
        self._label(obj)
        key = self.key(obj)
        prev = self.items.get(key)
        if prev is None:  # a new object: it shares what it has in common with the last one
            self.items[key] = self._last = _compact(obj, self._last)
        elif not _same_version(obj, prev):
            self.items[key] = self._last = _compact(obj, prev)
        return key

    async def relist(self) -> None:
        """Fill the cache from one list, in pages of :attr:`page_size` objects (what the list
        does not name is dropped).

        Each page's parsed items are let go one by one as they are stored, so a list answer
        and the cache never hold every object twice (at 10,000 Pods one parsed list is about
        as big as the cache, and its JSON half that again); pages, as client-go's reflector
        lists (``pager``, 500 a page), keep only one page's answer at a time. A version the
        cache already holds is kept, not copied again, and an object new to it shares what
        it has in common with the one listed before it. The cache changes only once the last
        page is in: a reader between two pages sees the cache as it was."""
        query = dict(self.query)
        if self.page_size > 0:
            query["limit"] = str(self.page_size)
        before = dict(self.items)
        fresh: dict[str, Obj] = {}
        last: Obj | None = None
        resource_version: str | None = None
        while True:
            listed = await self.source.list(self.path, **query)
            self.lists += 1
            meta = listed.get("metadata") or {}
            if resource_version is None:  # every page is of the first page's snapshot
                resource_version = str(meta.get("resourceVersion", ""))
            items: list[Obj] = listed.pop("items", None) or []
            items.reverse()
            while items:
                obj = items.pop()
                self._label(obj)
                key = self.key(obj)
                prev = before.pop(key, None)
                if prev is not None and _same_version(obj, prev):
                    fresh[key] = last = prev
                else:
                    # no version before: the object listed before it shares what they have
                    # in common (Pods of one template: their spec, their status while pending)
                    fresh[key] = last = _compact(obj, prev if prev is not None else last)
                del obj
            token = meta.get("continue")
            if not token:
                break
            query["continue"] = str(token)
        self.items.clear()
        self.items.update(fresh)
        self._deleted.clear()
        self.resource_version = resource_version
        self.listed = True
        self.failing = False

    async def follow(self, on_change: Callable[[str], None] | None = None) -> None:
        """Apply watch events from :attr:`resource_version` until the server ends the stream.

        ``on_change`` hears the key of each object added, modified or deleted. Raises
        :class:`~carbonshift.k8s.client.GoneError` (410: the version is too old, relist),
        :class:`~carbonshift.k8s.client.KubeError`,
        :class:`~carbonshift.errors.TemporaryError` or ``OSError`` when the watch fails.
        """
        async for event in self.source.watch(self.path, self.resource_version, **self.query):
            obj = event.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = str(rv)
            if event.get("type") == "BOOKMARK":
                continue
            if event.get("type") == "DELETED":
                key = self.key(obj)
                if not older(obj, self.items.get(key)):  # not one created again since
                    self.items.pop(key, None)
                self._tombstone(key, _rv(obj))
            else:
                key = self.store(obj)
            if on_change is not None:
                on_change(key)

    async def run(
        self,
        backoff: Backoff,
        *,
        on_change: Callable[[str], None] | None = None,
        on_restart: Callable[[str], None] | None = None,
        on_relist: Callable[[], None] | None = None,
        lock: asyncio.Lock | None = None,
    ) -> None:
        """Watch for good: resume when the server ends a stream (``on_restart("closed")``);
        after a 410 (``"gone"``) or a failure (``"error"``, after ``backoff(1.0)``, growing
        while the watch keeps failing) relist, retrying with a growing backoff, under ``lock``
        when given, then ``on_relist()``. Ends only when cancelled."""
        failures = 0  # in a row: a watch refused each time (403) must not spin
        while True:
            try:
                await self.follow(on_change)
                failures = 0
                if on_restart is not None:
                    on_restart("closed")
                continue
            except GoneError:
                self.failing = True
                if on_restart is not None:
                    on_restart("gone")
            except (TemporaryError, KubeError, OSError):
                self.failing = True
                if on_restart is not None:
                    on_restart("error")
                await backoff(min(2.0**failures, _MAX_RELIST_BACKOFF_S))
                failures += 1
            wait_s = 2.0
            while True:
                try:
                    async with lock if lock is not None else contextlib.nullcontext():
                        await self.relist()
                    break
                except (TemporaryError, KubeError, OSError):
                    await backoff(wait_s)
                    wait_s = min(2 * wait_s, _MAX_RELIST_BACKOFF_S)
            if on_relist is not None:
                on_relist()

    def start(self, backoff: Backoff, **hooks: Any) -> None:
        """:meth:`run` in a task of the running loop (once; :meth:`stop` ends it)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(backoff, **hooks))
            self.watching = True

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        task, self._task = self._task, None
        self.watching = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- what writes answered -----------------------------------------------------------------

    def keep(self, key: str, new: Obj) -> None:
        """Cache the answer of a write to an existing object unless the watch already brought
        a newer version, or its deletion (nothing relists per pass to mend an older copy, or
        drop one of a deleted object); a version already cached is not copied again."""
        self._label(new)
        if self.watching and key not in self.items:
            return  # deleted since: the watch dropped it
        self._put(key, new)

    def add(self, key: str, new: Obj) -> None:
        """Cache the answer of a create, unless the watch saw that object deleted since."""
        self._label(new)
        gone, made = self._deleted.get(key), _rv(new)
        if gone is not None and made is not None and made <= gone:
            return  # the watch saw this very object deleted before the answer came
        self._put(key, new)

    def forget(self, key: str) -> None:
        """Drop an object whose deletion the server answered (its watch event may follow)."""
        self.items.pop(key, None)
        self._tombstone(key, None)

    def _tombstone(self, key: str, rv: int | None) -> None:
        self._deleted.pop(key, None)
        self._deleted[key] = rv
        if len(self._deleted) > _TOMBSTONES:
            del self._deleted[next(iter(self._deleted))]
