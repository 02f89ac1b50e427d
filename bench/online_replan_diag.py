"""Why re-plans move planned starts: each move of one online day sorted by what the re-plan
hysteresis could have done about it (bench/online.md, "What the hysteresis can reach").

One online ``carbonshift`` run of ``bench_online``'s experiment (oracle carbon). After each
round's hold rule, every planned start the round moved (``planning.hold.plan_moves``) is put
in one class by what its earlier start looks like against the round's final plan:

- ``invalid``: no longer allowed, before release, past the horizon, or it would now be late;
- ``fits``: it still fits, so the move passed the thresholds (saved at least
  ``replan_min_improvement_g`` and ``_pct``) or the hysteresis is off;
- ``blocked_reserve``: it fits the real work but not the room the policy keeps for work
  still to arrive (``PolicyResult.reserved_units``);
- ``blocked_work``: real work (pending or held) fills it.

Run: ``PYTHONPATH=src:packages/fakekube/src:. .venv/bin/python bench/online_replan_diag.py
SEED`` (about as long as one online day of ``bench_online``). Prints the online kg, the
engine's move and return counts, CPU, and per class the count and the deciles of grams per
move (the earlier start's grams minus the new start's by the round's forecast).
"""

from __future__ import annotations

import collections
import sys
import time
from typing import Any

import numpy as np

from bench.bench_online import experiment
from carbonshift.planning import snapshot as snapshot_module
from carbonshift.planning.hold import _place_all, _reserve, plan_moves
from carbonshift.planning.ledger import CapacityLedger
from carbonshift.planning.problem import arrays_of
from carbonshift.sim.experiment import prepare, simulate_policy
from carbonshift.sim.outputs import run_metrics

GAINS: dict[str, list[float]] = collections.defaultdict(list)
_HOLD = snapshot_module.Snapshot.hold


def _classified_hold(self: Any, plan: Any, rule: Any, *args: Any, **kwargs: Any) -> Any:
    out = _HOLD(self, plan, rule, *args, **kwargs)
    inst, context = self.instance, self.context()
    moves = plan_moves(inst, context, out.plan, self.previous)
    if not moves:
        return out
    arrays = arrays_of(inst, context)
    job_index = {job.id: j for j, job in enumerate(inst.jobs)}
    cluster_index = {c.name: m for m, c in enumerate(inst.clusters)}
    starts = {a.job: (cluster_index[a.cluster], a.start_slot) for a in out.plan.assignments}
    on_time = arrays.latest_on_time_start
    reserved = kwargs.get("reserved_units")
    for move in moves:
        j, pm, ps = job_index[move.job], cluster_index.get(move.from_cluster), move.from_slot
        runtime = int(arrays.runtime_slots[j])
        if (
            pm is None
            or not arrays.allowed[j, pm]
            or ps < arrays.release_slot[j]
            or ps + runtime > arrays.horizon_slots
            or (ps > on_time[j] and move.to_slot <= on_time[j])
        ):
            GAINS["invalid"].append(move.gain_g)
            continue
        ledger = CapacityLedger(arrays)
        others = [(job_index[k], m, s) for k, (m, s) in starts.items() if k != move.job]
        _place_all(ledger, arrays, others)
        fits_work = ledger.fits(j, pm, ps)
        ledger.free_units -= _reserve(reserved, ledger.free_units.shape)
        kind = (
            "fits" if ledger.fits(j, pm, ps) else "blocked_reserve" if fits_work else "blocked_work"
        )
        GAINS[kind].append(move.gain_g)
    return out


def main(argv: list[str]) -> int:
    seed = int(argv[0])
    snapshot_module.Snapshot.hold = _classified_hold  # type: ignore[method-assign]
    exp = experiment(seed, 200, "carbonshift")
    prepared = prepare(exp)
    began = time.process_time()
    run = simulate_policy(exp, prepared, "carbonshift", {})
    cpu = time.process_time() - began
    metrics = run_metrics(run)
    print(
        f"seed {seed}: online {metrics['carbon_kg']:.3f} kg, moves {metrics['replan_moves']}, "
        f"returns {metrics['replan_returns']}, rounds {run.rounds}, CPU {cpu:.1f} s"
    )
    for kind, gains in sorted(GAINS.items()):
        deciles = np.percentile(np.asarray(gains), [10, 25, 50, 75, 90]).round(1).tolist()
        print(f"{kind}: {len(gains)} moves, grams per move p10/25/50/75/90 {deciles}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
