"""Planning solves of ``/v1/plan`` in worker processes that can be stopped.

A solve (HiGHS, or a long greedy pass) cannot be interrupted from another thread, so each
request's solve runs in a process of its own, forked from a clean ``forkserver`` process that
has the planning code loaded. The request waits for it without blocking the event loop and
kills it when the client goes away, when the request's wall-time budget is spent, and when
the server stops (SIGTERM): no solve outlives its request. At most ``max_solves`` run at
once; a request beyond that is refused at once with 429 and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import resource
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing import forkserver, spawn
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from carbonshift.domain import Instance
from carbonshift.errors import (
    CarbonshiftError,
    InputError,
    PermanentError,
    SolverError,
    SolverMemoryError,
    TemporaryError,
)
from carbonshift.planning.registry import operator_policy_modules

__all__ = [
    "DEFAULT_SOLVE_MEMORY_MB",
    "MAIN_PATH_ENV",
    "BusyError",
    "ClientGoneError",
    "SolveBudgetError",
    "SolveMemoryError",
    "SolveRunner",
    "StoppingError",
]

_LOG = logging.getLogger("carbonshift.api.solves")

#: names the program's main path to :mod:`carbonshift.api._solve_main`, only while the
#: forkserver starts
MAIN_PATH_ENV = "CARBONSHIFT_SOLVE_MAIN_PATH"
_POLL_S = 0.05


class BusyError(TemporaryError):
    """Every solve slot is taken; retry after ``delay_s`` (answered 429)."""


class SolveBudgetError(InputError):
    """The solve ran past the request's wall-time budget and was stopped."""


class SolveMemoryError(InputError):
    """The solve needed more memory than the worker's cap and was stopped (answered 400)."""


#: Address-space cap of one solve worker, MiB (``serve --max-solve-memory-mb``). The worker
#: starts at about 0.5-1 GiB of address space (numpy, scipy and HiGHS mapped); the largest
#: instance ``max_plan_cells`` admits solves well within 4 GiB.
DEFAULT_SOLVE_MEMORY_MB = 4096


class ClientGoneError(CarbonshiftError):
    """The client disconnected; its solve was stopped (nobody reads the answer)."""


class StoppingError(TemporaryError):
    """The server is stopping; the solve was stopped (answered 503)."""


def _solve_child(
    conn: Connection,
    instance: Instance,
    policy: str,
    params: dict[str, str],
    modules: tuple[str, ...] = (),
    memory_mb: int | None = None,
) -> None:
    """In the worker: run the policy and send back ``("ok", body)`` or an error family.

    ``modules`` are the policy modules the operator named at start-up: the worker, forked
    from a clean forkserver, registers them again (never a module named in a request).
    ``memory_mb`` caps the worker's address space (RLIMIT_AS): an allocation past it fails
    with MemoryError (or ends the worker), so one request cannot exhaust the host."""
    try:
        if memory_mb is not None:
            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from carbonshift.domain import check_feasibility, score_plan
        from carbonshift.formats import null_if_undefined, plan_to_dict
        from carbonshift.planning import run_policy
        from carbonshift.planning.registry import load_policy_module

        for ref in modules:
            load_policy_module(ref)
        result = run_policy(policy, instance, params, import_modules=False)
        body = plan_to_dict(result.plan, score_plan(instance, result.plan), result.bound)
        body["status"] = str(result.status)
        body["feasible"] = not check_feasibility(instance, result.plan)
        body["stats"] = {k: float(v) for k, v in result.stats.items()}
        conn.send(("ok", null_if_undefined(body)))
    except (MemoryError, SolverMemoryError):  # Python's or HiGHS's allocation failed
        conn.send(("memory", ""))
    except InputError as exc:
        conn.send(("input", str(exc)))
    except SolverError as exc:
        conn.send(("solver", str(exc)))
    except CarbonshiftError as exc:
        conn.send(("other", str(exc)))
    except BaseException:  # reported to the parent, which answers 500
        conn.send(("bug", traceback.format_exc()))
    finally:
        conn.close()


def _start_forkserver_with_main() -> None:
    """Start the forkserver with the program's main path in its environment, so that
    :mod:`carbonshift.api._solve_main` imports the main module there once."""
    main_path = spawn.get_preparation_data("solve").get("init_main_from_path")
    if not main_path:  # run with -m, or interactively: workers import nothing heavy
        forkserver.ensure_running()
        return
    os.environ[MAIN_PATH_ENV] = main_path
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(MAIN_PATH_ENV, None)


@dataclass(frozen=True, slots=True)
class _Slot:
    process: BaseProcess
    conn: Connection


class SolveRunner:
    """Runs solves in killable worker processes; see the module docstring."""

    def __init__(
        self, *, max_solves: int = 2, memory_mb: int | None = DEFAULT_SOLVE_MEMORY_MB
    ) -> None:
        self.max_solves = max_solves
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._live: set[_Slot] = set()
        self._stopping = False
        self._ctx: Any = None

    def _context(self) -> Any:
        if self._ctx is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(
                [
                    "carbonshift.planning",
                    "carbonshift.formats",
                    "carbonshift.api.solves",
                    "carbonshift.api._solve_main",  # the main module, once (see there)
                ]
            )
            _start_forkserver_with_main()
            self._ctx = ctx
        return self._ctx

    @property
    def running(self) -> int:
        """Worker processes alive now."""
        with self._lock:
            return sum(1 for slot in self._live if slot.process.is_alive())

    def stop_all(self) -> None:
        """Kill every running solve and refuse new ones (server shutdown)."""
        with self._lock:
            self._stopping = True
            slots = list(self._live)
        for slot in slots:
            if slot.process.pid is not None and slot.process.is_alive():
                slot.process.kill()  # reaped by the request that started it

    async def solve(
        self,
        instance: Instance,
        policy: str,
        params: dict[str, str],
        *,
        budget_s: float,
        is_disconnected: Callable[[], Awaitable[bool]],
    ) -> dict[str, Any]:
        """The plan body of ``policy`` on ``instance``, solved in a worker process."""
        with self._lock:
            if self._stopping:
                raise StoppingError("the server is stopping; retry on another replica")
            if len(self._live) >= self.max_solves:
                raise BusyError(
                    f"all {self.max_solves} solve slots of this server are busy; retry shortly",
                    delay_s=5.0,
                )
            ctx = self._context()
            receiver, sender = ctx.Pipe(duplex=False)
            process = ctx.Process(
                target=_solve_child,
                args=(
                    sender,
                    instance,
                    policy,
                    params,
                    operator_policy_modules(),
                    self.memory_mb,
                ),
                daemon=True,
            )
            slot = _Slot(process, receiver)
            self._live.add(slot)
        try:
            await asyncio.to_thread(process.start)
            sender.close()
            outcome = await self._wait(slot, budget_s, is_disconnected)
        finally:
            _kill(process)
            receiver.close()
            with self._lock:
                self._live.discard(slot)
        return _unpack(outcome, policy, self.memory_mb)

    async def _wait(
        self, slot: _Slot, budget_s: float, is_disconnected: Callable[[], Awaitable[bool]]
    ) -> tuple[Any, ...]:
        deadline = time.monotonic() + budget_s
        while True:
            if slot.conn.poll():
                try:
                    got: tuple[Any, ...] = await asyncio.to_thread(slot.conn.recv)
                except (EOFError, OSError):
                    # the worker ended without an answer: killed (stop_all) or it died
                    await asyncio.to_thread(slot.process.join, 5)
                    got = ("died", f"exit code {slot.process.exitcode}")
                if got[0] != "died" or not self._stopping:
                    return got
            if not slot.process.is_alive() and not slot.conn.poll() and not self._stopping:
                return ("died", f"exit code {slot.process.exitcode}")
            if self._stopping:
                raise StoppingError("the server is stopping; retry on another replica")
            if time.monotonic() > deadline:
                raise SolveBudgetError(
                    f"planning took longer than this server's budget of {budget_s:g} s per "
                    "request and was stopped; send fewer jobs or clusters, a shorter horizon, "
                    "or a cheaper policy (asap, fluidos)"
                )
            if await is_disconnected():
                raise ClientGoneError("the client went away; its solve was stopped")
            await asyncio.sleep(_POLL_S)


def _kill(process: BaseProcess) -> None:
    if process.pid is None:
        return
    if process.is_alive():
        process.kill()
    process.join(timeout=5)


def _unpack(outcome: tuple[Any, ...], policy: str, memory_mb: int | None) -> dict[str, Any]:
    kind = outcome[0]
    if kind == "ok":
        body: dict[str, Any] = outcome[1]
        return body
    if kind == "memory" or (kind == "died" and memory_mb is not None):
        # a C++ allocation failure (HiGHS) ends the worker instead of raising MemoryError
        how = "needed more than" if kind == "memory" else f"ended ({outcome[1]}), most likely past"
        raise SolveMemoryError(
            f"the {policy} solve {how} this server's memory "
            f"{f'cap of {memory_mb} MiB' if memory_mb else 'limit'} per request "
            "and was stopped; send fewer jobs or clusters, a shorter horizon, or a cheaper "
            "policy (asap, fluidos)"
        )
    if kind == "input":
        raise InputError(outcome[1])
    if kind == "solver":
        raise SolverError(outcome[1])
    if kind == "other":
        raise PermanentError(outcome[1])
    if kind == "died":
        raise SolverError(
            f"the {policy} solve stopped unexpectedly ({outcome[1]}: out of memory?); send a "
            "smaller instance"
        )
    _LOG.error("the %s solve failed:\n%s", policy, outcome[1])
    raise RuntimeError(f"the {policy} solve failed; the server log has the traceback")
