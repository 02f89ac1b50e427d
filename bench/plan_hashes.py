"""Hashes of ``carbonshift``'s plans, to show a change keeps them: the stress shapes
(``bench/stress_instances.py``'s draw) and bench_planner instances, with CPU seconds.

Run: ``PYTHONPATH=src:. python bench/plan_hashes.py SHAPES SEEDS PER_SHAPE`` (SHAPES
``all`` or names joined by commas), or ``... bench FAMILY:N:SEED ...`` (e.g.
``cjps-small:100:0 ten-zone:300:0``); one JSON line per instance. The hash is of the
sorted assignments, the unscheduled jobs and the bound's ``repr``. Figures in
bench/planner.md ("Repeated polish windows").
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from carbonshift.domain import Instance
from carbonshift.formats import instance_from_dict
from carbonshift.planning import run_policy


def _row(instance: Instance, **where: Any) -> str:
    began = time.process_time()
    result = run_policy("carbonshift", instance)
    cpu = time.process_time() - began
    key = json.dumps(
        [
            sorted((str(a.job), str(a.cluster), a.start_slot) for a in result.plan.assignments),
            sorted(str(u) for u in result.plan.unscheduled),
            None if result.bound is None else repr(result.bound.lower_bound_g),
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return json.dumps({**where, "hash": digest, "cpu_s": round(cpu, 3)})


def main(argv: list[str]) -> int:
    logging.disable(logging.WARNING)
    if argv and argv[0] == "bench":
        from bench.bench_planner import build

        for spec in argv[1:]:
            family, n, seed = spec.split(":")
            print(_row(build(family, int(n), int(seed)), inst=spec), flush=True)
        return 0
    from tests.planning.stress_shapes import SHAPES

    shapes = sorted(SHAPES) if argv[0] == "all" else argv[0].split(",")
    for shape in shapes:
        for seed in (int(s) for s in argv[1].split(",")):
            rng = np.random.default_rng([seed, sorted(SHAPES).index(shape)])
            docs = [SHAPES[shape](rng) for _ in range(int(argv[2]))]
            for k, doc in enumerate(docs):
                print(_row(instance_from_dict(doc), shape=shape, seed=seed, k=k), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
