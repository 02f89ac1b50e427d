"""A sub-MILP on which HiGHS 1.16's MILP presolve ran past its time limit (minutes).

The model comes from the polish in a CJPS simulation round (``reproduce cjps --quick``).
The polish's options (:func:`sub_milp_options`) must solve it within their time limit; the
solve runs in a subprocess so that a regression fails the test instead of stalling the run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MODEL = Path(__file__).parent / "data" / "polish_presolve_hang.json"

_SOLVE = """
import json, sys
import numpy as np
import scipy.sparse as sp
from carbonshift.planning.backends.highs import solve
from carbonshift.planning.policies._polish import sub_milp_options
from carbonshift.planning.problem import LinearProgram

d = json.load(open(sys.argv[1]))
matrix = sp.csc_matrix((d["values"], (d["rows"], d["cols"])), shape=tuple(d["shape"]))
lower = d["row_lower"]
program = LinearProgram(
    objective=np.array(d["objective"]),
    matrix=matrix,
    row_upper=np.array(d["row_upper"]),
    maximise=d["maximise"],
    n_integer=d["n_integer"],
    row_lower=None if lower is None else np.array([-np.inf if v is None else v for v in lower]),
    column_upper=None if d["column_upper"] is None else np.array(d["column_upper"]),
)
answer = solve(program, sub_milp_options(5.0, 20, False), start=np.array(d["start"]))
print(answer.status.value)
"""


def test_the_polish_options_solve_the_model_whose_presolve_hung() -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SOLVE, str(MODEL)],
            capture_output=True,
            text=True,
            timeout=120,  # the options' time limit is 5 s; a hang runs for minutes
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("HiGHS ran past the polish's 5 s time limit on the presolve-hang model")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] in {"optimal", "feasible"}
