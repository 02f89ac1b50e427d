"""Instances unlike our fixtures, through every policy's CLI, judged by the independent checker.

Each *shape* below draws valid CONTRACTS.md instance files of one odd kind (1 or 30 clusters,
horizons of 1, 2 and 500+ slots, 5- and 15-minute slots, flat carbon, zeros, one huge spike,
values at the format's limits, capacity zero in some slots, several resources with one
binding, runtime equal to the horizon, no slack, every job critical, one allowed cluster,
embodied carbon dominant, look-alike ids, demands of 1e12 units, no on-time plan). Every
policy plans each through ``carbonshift plan --instance X --policy P --format json --out -``
(in process: the exit code, standard output parsed as the plan, a traceback caught and
counted); ``tests/planning/independent.py`` (no carbonshift import) judges the plan with the
rules the policy promises (``tests/planning/test_independent.py``, ``POLICIES``), the
lexicographic MILP on the small shapes.

Run: ``PYTHONPATH=src:. python bench/stress_instances.py [--per-shape 4] [--seeds 0]
[--shapes one_cluster,horizon_1] [--policies carbonshift,asap] [--dump DIR]``. Prints one
JSON line per (shape, policy, seed) and a markdown table; the figures are in
``bench/planner.md`` ("Stress shapes"). ``--dump DIR`` writes each failing instance there.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np
from tests.planning import independent
from tests.planning.stress_shapes import NO_MILP, SHAPES, Doc
from tests.planning.test_independent import POLICIES

from carbonshift.cli.app import main as cli_main


def plan_via_cli(tmp: Path, doc: Doc, policy: str, params: list[str]) -> tuple[int, str, str]:
    """``carbonshift plan -i X -p P --format json -o -`` in process: (exit code, stdout,
    stderr); a traceback is returned as code -1 with the traceback as stderr."""
    path = tmp / "instance.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    args = ["plan", "-i", str(path), "-p", policy, "--format", "json", "-o", "-"]
    for p in params:
        args += ["--param", p]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(args)
    except Exception:  # the defect we look for: a traceback instead of a message
        return -1, out.getvalue(), traceback.format_exc()
    return code, out.getvalue(), err.getvalue()


def judge(tmp: Path, shape: str, doc: Doc, policy: str) -> tuple[str, str, float]:
    """(verdict, detail, seconds): verdict ``ok``, ``exit N``, ``traceback``, ``not json`` or
    the rules broken joined by ``+``."""
    params, rules = POLICIES[policy]
    t0 = time.perf_counter()
    code, out, err = plan_via_cli(tmp, doc, policy, params)
    seconds = time.perf_counter() - t0
    if code == -1:
        return "traceback", err.strip().splitlines()[-1], seconds
    if code != 0:
        return f"exit {code}", err.strip()[-300:], seconds
    try:
        plan = json.loads(out)
    except ValueError:
        return "not json", out[:300], seconds
    report = independent.check(
        doc,
        plan,
        optimal=rules.get("optimal", False) and shape not in NO_MILP,
        **{k: v for k, v in rules.items() if k != "optimal"},
    )
    if report.ok:
        return "ok", "", seconds
    return "+".join(sorted(report.violations)), str(report)[:600], seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-shape", type=int, default=4)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--dump", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for shape in args.shapes.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                rng = np.random.default_rng([seed, sorted(SHAPES).index(shape)])
                docs = [SHAPES[shape](rng) for _ in range(args.per_shape)]
                for policy in args.policies.split(","):
                    verdicts: Counter[str] = Counter()
                    slowest = 0.0
                    cpu = time.process_time()
                    for k, doc in enumerate(docs):
                        verdict, detail, seconds = judge(tmp, shape, doc, policy)
                        slowest = max(slowest, seconds)
                        verdicts[verdict] += 1
                        if verdict != "ok":
                            print(
                                f"  {shape}/{policy}/{seed}/{k}: {verdict}: {detail}",
                                file=sys.stderr,
                                flush=True,
                            )
                            if args.dump:
                                args.dump.mkdir(parents=True, exist_ok=True)
                                dump = args.dump / f"{shape}-{policy}-{seed}-{k}.json"
                                dump.write_text(json.dumps(doc), encoding="utf-8")
                    row = {
                        "shape": shape,
                        "policy": policy,
                        "seed": seed,
                        "instances": len(docs),
                        "bad": len(docs) - verdicts["ok"],
                        "verdicts": {k: v for k, v in verdicts.items() if k != "ok"},
                        "slowest_s": round(slowest, 2),
                        "cpu_s": round(time.process_time() - cpu, 2),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    print("\n| shape | policy | seed | instances | bad | verdicts | slowest s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items())) or "-"
        print(
            f"| {r['shape']} | {r['policy']} | {r['seed']} | {r['instances']} | {r['bad']} | "
            f"{verdicts} | {r['slowest_s']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
