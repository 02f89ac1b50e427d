"""The object store: one global resourceVersion counter, a bounded event window, watchers.

Every write gets the next resourceVersion (as etcd's revision does) and is appended to a
window of recent events. A watch from resourceVersion N replays the window after N; when N
is older than the window, the watch answers a single ``ERROR`` event with a 410 ``Expired``
Status, as the real watch cache does. The store runs on the server's event loop only.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fakekube._errors import ApiError
from fakekube.resources import ResourceType
from fakekube.selection import FieldSelector, LabelSelector

__all__ = ["Store", "Watcher"]

Obj = dict[str, Any]
ObjKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write, kept in the event window."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: tuple[str, str]
    obj: Obj
    old: Obj | None


class Watcher:
    """One open watch: filters changes for its resource, namespace and selectors."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        api_version: str,
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.api_version = api_version
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.closed = False
        self.bookmarks = False
        self.table: Any = None

    def _selected(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels") or {}) and self.fields.matches(obj)

    def _emit(self, type_: str, obj: Obj, *, snapshot: bool = False) -> None:
        # a committed change's snapshot is never written again: its top level is enough to
        # copy (a deep copy per watcher per write was a third of the fake's time at scale)
        out = dict(obj) if snapshot else copy.deepcopy(obj)
        out["apiVersion"] = self.api_version
        self.queue.put_nowait({"type": type_, "object": out})

    def offer(self, change: Change) -> None:
        if self.closed or change.key != self.rt.key:
            return
        now, before = self._selected(change.obj), self._selected(change.old)
        if change.type == "DELETED":
            if before or now:
                self._emit("DELETED", change.obj, snapshot=True)
        elif now and before:
            self._emit("MODIFIED", change.obj, snapshot=True)
        elif now:
            self._emit("ADDED", change.obj, snapshot=True)
        elif before:
            self._emit("DELETED", change.obj, snapshot=True)

    def send(self, event: dict[str, Any]) -> None:
        if not self.closed:
            self.queue.put_nowait(event)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


class Store:
    """Objects by resource and (namespace, name); writes bump the global resourceVersion."""

    def __init__(self, *, window: int = 1000, first_rv: int = 1000) -> None:
        self._rv = first_rv
        self._objects: dict[tuple[str, str], dict[ObjKey, Obj]] = {}
        #: each bucket's keys in order, kept until a key comes or goes (sorting on every
        #: read cost O(n log n) per controller run)
        self._order: dict[tuple[str, str], list[ObjKey]] = {}
        self._window: deque[Change] = deque(maxlen=max(1, window))
        self._compacted_rv = first_rv
        self._watchers: set[Watcher] = set()
        self.on_commit: list[Any] = []
        #: called with each committed change, before ``on_commit`` (indexes kept from writes)
        self.observers: list[Callable[[Change], None]] = []

    @property
    def rv(self) -> int:
        return self._rv

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def bucket(self, rt: ResourceType) -> dict[ObjKey, Obj]:
        return self._objects.setdefault(rt.key, {})

    def peek(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        """The stored object itself (no copy): for read-only use inside the server."""
        return self.bucket(rt).get((namespace, name))

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.peek(rt, namespace, name)
        if obj is None:
            raise ApiError.not_found(rt.group, rt.plural, name)
        return copy.deepcopy(obj)

    def items(self, rt: ResourceType, namespace: str | None = None) -> Iterator[Obj]:
        """Stored objects (no copies), ordered by namespace and name."""
        bucket = self.bucket(rt)
        order = self._order.get(rt.key)
        if order is None:
            order = self._order[rt.key] = sorted(bucket)
        for key in order:
            if namespace is None or key[0] == namespace:
                obj = bucket.get(key)
                if obj is not None:  # gone while the caller iterated
                    yield obj

    def commit(self, rt: ResourceType, type_: str, obj: Obj, old: Obj | None) -> Obj:
        """Store (or drop, for DELETED) ``obj`` with a fresh resourceVersion; notify.

        Returns the change's snapshot of ``obj``: shared with the event window and the
        watches, so read it (or copy it), never write it.
        """
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        bucket = self.bucket(rt)
        if type_ == "DELETED":
            if bucket.pop(key, None) is not None:
                self._order.pop(rt.key, None)
        else:
            if key not in bucket:
                self._order.pop(rt.key, None)
            bucket[key] = obj
        change = Change(rv, type_, rt.key, copy.deepcopy(obj), copy.deepcopy(old) if old else None)
        if len(self._window) == self._window.maxlen:
            self._compacted_rv = self._window[0].rv
        self._window.append(change)
        for observer in self.observers:
            observer(change)
        for watcher in list(self._watchers):
            watcher.offer(change)
        for hook in self.on_commit:
            hook()
        return change.obj

    def drop_all(self, rt: ResourceType) -> None:
        self._objects.pop(rt.key, None)
        self._order.pop(rt.key, None)

    def compact(self) -> None:
        """Forget the event window: any watch from an older resourceVersion gets 410 Gone."""
        self._window.clear()
        self._compacted_rv = self._rv

    def watch(self, watcher: Watcher, since: int | None) -> None:
        """Register ``watcher``; replay the window after ``since`` or the current state."""
        if since is None:
            for obj in self.items(watcher.rt, watcher.namespace):
                if watcher._selected(obj):
                    watcher._emit("ADDED", obj)
        else:
            if since < self._compacted_rv:
                raise ApiError.gone(f"too old resource version: {since} ({self._compacted_rv + 1})")
            for change in self._window:
                if change.rv > since:
                    watcher.offer(change)
        self._watchers.add(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    def watchers(self) -> list[Watcher]:
        return list(self._watchers)
