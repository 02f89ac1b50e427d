"""The /v1/plan solve workers do not import the program's main module again per request.

Each worker is forked from the forkserver. Unless the forkserver preloads ``__main__``,
multiprocessing imports the parent's main module in every worker before it runs; for the
``carbonshift`` console script that is the whole CLI, 1.3-1.8 s of each request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.api.test_plan_limits import instance

_MAIN = textwrap.dedent(
    """
    import asyncio, json, os, sys

    with open(os.environ["IMPORT_LOG"], "a") as log:  # one line per import of this module
        log.write(__name__ + "\\n")

    from carbonshift.api.solves import SolveRunner
    from carbonshift.formats import instance_from_dict


    async def _never() -> bool:
        return False


    async def _solve_three(runner, body):
        for _ in range(3):
            plan = await runner.solve(
                instance_from_dict(body), "asap", {}, budget_s=120, is_disconnected=_never
            )
            assert plan["feasible"], plan


    if __name__ == "__main__":
        runner = SolveRunner(max_solves=1)
        try:
            asyncio.run(_solve_three(runner, json.loads(sys.argv[1])))
        finally:
            runner.stop_all()
    """
)


def test_workers_inherit_the_main_module_instead_of_importing_it(tmp_path: Path) -> None:
    script = tmp_path / "server_main.py"
    script.write_text(_MAIN)
    log = tmp_path / "imports.log"
    env = {**os.environ, "IMPORT_LOG": str(log)}
    env["PYTHONPATH"] = os.pathsep.join([*sys.path, env.get("PYTHONPATH", "")])
    subprocess.run(
        [sys.executable, str(script), json.dumps(instance())],
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
    )
    # the program itself, then the forkserver once; never once per solve (3 solves ran)
    assert log.read_text().split() == ["__main__", "__mp_main__"]
