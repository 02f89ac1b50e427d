"""A simulation's results in Python: the summary, the job and slot tables, the report.

:func:`carbonshift.simulate` returns a :class:`SimulationResult`. Its tables are the rows of
``jobs.csv`` and ``slots.csv`` (same columns, typed values) as pandas DataFrames; pandas is
imported only when a table is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carbonshift.sim.experiment import Experiment, ExperimentRuns, write_outputs
from carbonshift.sim.outputs import job_columns, job_rows, slot_columns, slot_rows
from carbonshift.sim.report import FigureStyle

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SimulationResult"]


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """A policy run and its baseline run on the same input and seed.

    >>> import carbonshift as cs
    >>> r = cs.simulate("examples/caspian.toml")  # doctest: +SKIP
    >>> r.summary["carbon_saving_pct"]  # doctest: +SKIP
    21.4...
    """

    experiment: Experiment
    runs: ExperimentRuns

    @property
    def summary(self) -> dict[str, Any]:
        """``summary.json`` as a dict (the docs/formats.md keys and more); a copy."""
        return dict(self.runs.summary)

    def jobs_df(self) -> pd.DataFrame:
        """The policy run's ``jobs.csv`` as a DataFrame (one row per job, or per piece)."""
        return self._jobs(self.runs.run.jobs)

    def baseline_jobs_df(self) -> pd.DataFrame:
        """The baseline run's ``baseline_jobs.csv`` as a DataFrame."""
        return self._jobs(self.runs.baseline_run.jobs)

    def slots_df(self) -> pd.DataFrame:
        """The policy run's ``slots.csv`` as a DataFrame (one row per slot and cluster)."""
        import pandas as pd

        resources = self.experiment.workload.resources
        return pd.DataFrame(
            slot_rows(self.runs.run, resources), columns=slot_columns(resources)
        ).astype({"forecast_ci_g_per_kwh": float})

    def _jobs(self, records: Any) -> pd.DataFrame:
        import pandas as pd

        resources = self.experiment.workload.resources
        frame = pd.DataFrame(job_rows(records, resources), columns=job_columns(resources))
        floats = ("submit_h", "start_h", "end_h", "deadline_h", "runtime_h", "carbon_g")
        return frame.astype(dict.fromkeys(floats, float))

    def report(
        self, out_dir: str | Path, *, plots: bool = True, style: FigureStyle | None = None
    ) -> Path:
        """Write what ``carbonshift simulate --out DIR`` writes into ``out_dir``.

        summary.json, jobs.csv, baseline_jobs.csv, slots.csv and, unless ``plots`` is
        false, plots/ (PNG, SVG and PDF, in ``style``: e.g. ``FigureStyle("paper")``) and
        report.html. Returns the path of report.html (or of summary.json).
        """
        out = Path(out_dir)
        write_outputs(
            self.experiment,
            self.runs.run,
            self.runs.baseline_run,
            self.runs.summary,
            out,
            report=plots,
            style=style,
        )
        return out / ("report.html" if plots else "summary.json")
