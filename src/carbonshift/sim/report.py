"""Plots and a self-contained HTML report of one simulation (policy against baseline).

Plots: cumulative emissions of policy and baseline and their difference (Caspian Fig. 5a,
CO2 scheduler Figs. 10.4e-f), the completion-ratio histogram (Caspian Figs. 5b-c), carbon
intensity per cluster with the forecast beside the actual, and allocation per cluster with
its capacity. Each is written as PNG (embedded in the report), SVG and PDF, in a
:class:`FigureStyle` (``default`` for screens, ``paper`` for print, or a matplotlib style
file). The HTML page opens with a headline (carbon saved, deadlines met, extra wait), a
policy/baseline table and the parameters that produced the run, so it can be mailed.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift._extras import pyplot
from carbonshift.errors import InputError
from carbonshift.sim.engine import RunResult, SimCluster

__all__ = ["FIGURE_FORMATS", "FigureStyle", "Plot", "write_html_report", "write_plots"]

_PLOTS = "the simulation report's plots"  # matplotlib comes with carbonshift[sim]

_ATTRIBUTION = (
    "Carbon intensity data: Electricity Maps (ODbL). Workload traces as named in the scenario."
)

#: Every figure is saved in each of these formats (PNG first: the report embeds it).
FIGURE_FORMATS = ("png", "svg", "pdf")

#: rcParams of the built-in styles; ``paper`` suits a one-column figure in print.
_STYLES: dict[str, dict[str, Any]] = {
    "default": {"font.size": 11, "axes.titlesize": 12, "legend.fontsize": 9},
    "paper": {
        "font.size": 9,
        "axes.titlesize": 9,
        "axes.labelsize": 9,
        "legend.fontsize": 7,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "font.family": "serif",
        "lines.linewidth": 1.2,
        "axes.grid": True,
        "grid.alpha": 0.3,
    },
}
_DEFAULT_SIZE_IN = {"default": (8.0, 4.5), "paper": (3.5, 2.4)}
_DEFAULT_DPI = {"default": 150, "paper": 300}


def _plt() -> Any:
    """matplotlib's pyplot (Agg), imported on first use: a run without plots needs none."""
    return pyplot(needed_for=_PLOTS)


@dataclass(frozen=True, slots=True)
class FigureStyle:
    """How figures look: a built-in style (``default``, ``paper``) or a matplotlib style file.

    ``width_in`` and ``dpi`` override the style's figure width (inches; heights keep each
    figure's proportions) and raster resolution (dots per inch, PNG only).
    """

    name: str = "default"
    width_in: float | None = None
    dpi: int | None = None

    def __post_init__(self) -> None:
        if self.name not in _STYLES and not Path(self.name).is_file():
            raise InputError(
                f"figure style {self.name!r} is neither a built-in style "
                f"({', '.join(_STYLES)}) nor a matplotlib style file; give one of those"
            )
        if self.width_in is not None and not 1.0 <= self.width_in <= 40.0:
            raise InputError(
                f"figure width {self.width_in} in is outside 1..40 inches; give e.g. 3.5 or 7"
            )
        if self.dpi is not None and not 50 <= self.dpi <= 1200:
            raise InputError(f"dpi {self.dpi} is outside 50..1200; give e.g. 150 or 300")

    @property
    def _base(self) -> str:
        return self.name if self.name in _STYLES else "default"

    def size_in(self, height_ratio: float) -> tuple[float, float]:
        """(width, height) in inches for a figure of ``height_ratio`` = height / width."""
        width = self.width_in or _DEFAULT_SIZE_IN[self._base][0]
        return (width, width * height_ratio)

    @property
    def resolution_dpi(self) -> int:
        """Dots per inch of the PNG."""
        return self.dpi or _DEFAULT_DPI[self._base]

    @contextmanager
    def applied(self) -> Iterator[None]:
        """matplotlib's settings for this style, for the figures made inside the block."""
        spec: Any = _STYLES.get(self.name, self.name)
        with _plt().style.context(spec):
            yield


@dataclass(frozen=True, slots=True)
class Plot:
    """A written figure: its PNG (the others lie beside it) and the caption the report shows."""

    path: Path
    caption: str


def _cumulative(run: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative kg at the END of each slot, starting from 0 at hour 0."""
    by_slot: dict[float, float] = {}
    for s in run.slots:
        by_slot[s.start_h] = by_slot.get(s.start_h, 0.0) + s.carbon_g
    starts = np.array(sorted(by_slot))
    slot_h = float(starts[1] - starts[0]) if len(starts) > 1 else 1.0
    grams = np.array([by_slot[h] for h in starts])
    hours = np.concatenate([[0.0], starts + slot_h]) if len(starts) else np.zeros(1)
    return hours, np.concatenate([[0.0], np.cumsum(grams) / 1000.0])


def _signal_label(clusters: Sequence[SimCluster]) -> str:
    """``gCO2e/kWh, direct`` (or life-cycle): which signal the grams were charged on."""
    kinds = sorted({str(c.actual.kind.value) for c in clusters})
    names = {"direct": "direct", "lca": "life-cycle"}
    return "gCO2e/kWh, " + " and ".join(names.get(k, k) for k in kinds)


def write_plots(
    run: RunResult,
    baseline_run: RunResult,
    out_dir: Path,
    *,
    policy: str,
    baseline: str,
    clusters: Sequence[SimCluster] = (),
    style: FigureStyle | None = None,
) -> list[Plot]:
    """Write the report's figures into ``out_dir`` (PNG, SVG and PDF each); return them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = style or FigureStyle()
    signal = _signal_label(clusters) if clusters else "gCO2e/kWh"
    with chosen.applied():
        return [
            _plot_cumulative(run, baseline_run, out_dir, chosen, policy, baseline),
            _plot_completion(run, baseline_run, out_dir, chosen, policy, baseline),
            _plot_intensity(run, out_dir, chosen, signal),
            _plot_allocation(run, out_dir, chosen, policy, clusters),
        ]


def _plot_cumulative(
    run: RunResult,
    base: RunResult,
    out_dir: Path,
    style: FigureStyle,
    policy: str,
    baseline: str,
) -> Plot:
    fig, (top, bottom) = _plt().subplots(
        2, 1, figsize=style.size_in(0.75), sharex=True, layout="constrained"
    )
    h1, c1 = _cumulative(run)
    h0, c0 = _cumulative(base)
    top.plot(h0, c0, label=f"baseline ({baseline})", color="tab:gray")
    top.plot(h1, c1, label=f"policy ({policy})", color="tab:green")
    top.set_ylabel("cumulative kg CO2e")
    top.legend(loc="upper left")  # the curves rise to the right; "best" is slow on long runs
    top.grid(alpha=0.3)
    grid = np.union1d(h0, h1)
    diff = np.interp(grid, h0, c0, left=0) - np.interp(grid, h1, c1, left=0)
    bottom.plot(grid, diff, color="tab:blue")
    bottom.axhline(0, color="black", lw=0.5)
    bottom.set_ylabel("saved so far (kg)")
    bottom.set_xlabel("hours since start")
    bottom.grid(alpha=0.3)
    caption = (
        f"Cumulative emissions of the jobs under {policy} and under the {baseline} baseline "
        "(top), charged on the actual carbon signal, and the carbon saved so far (bottom: "
        "baseline minus policy; above zero is a saving)."
    )
    return _save(fig, out_dir / "cumulative_emissions.png", style, caption)


def _ratios(run: RunResult) -> list[float]:
    return [
        (r.end_h - r.submit_h) / (r.deadline_h - r.submit_h)
        for r in run.jobs
        if r.state == "completed"
        and r.end_h is not None
        and math.isfinite(r.deadline_h)
        and r.deadline_h > r.submit_h
    ]


def _plot_completion(
    run: RunResult,
    base: RunResult,
    out_dir: Path,
    style: FigureStyle,
    policy: str,
    baseline: str,
) -> Plot:
    fig, ax = _plt().subplots(figsize=style.size_in(0.5), layout="constrained")
    bins = [i / 20 for i in range(41)]
    ax.hist(np.clip(_ratios(base), 0, 2), bins=bins, alpha=0.5, label=baseline, color="tab:gray")
    ax.hist(np.clip(_ratios(run), 0, 2), bins=bins, alpha=0.6, label=policy, color="tab:green")
    ax.axvline(1.0, color="red", lw=1, ls="--", label="deadline")
    ax.set_xlabel("completion ratio (end - submit) / (deadline - submit)")
    ax.set_ylabel("jobs")
    ax.legend()
    caption = (
        "How much of each completed job's allowed time it used: 0 is an instant finish, 1 "
        "finishes exactly at the deadline, above 1 is late (clipped at 2). Policy and "
        "baseline overlaid."
    )
    return _save(fig, out_dir / "completion_ratio.png", style, caption)


def _plot_intensity(run: RunResult, out_dir: Path, style: FigureStyle, signal: str) -> Plot:
    clusters = sorted({s.cluster for s in run.slots})
    fig, ax = _plt().subplots(figsize=style.size_in(0.6), layout="constrained")
    forecast_shown = False
    for i, name in enumerate(clusters):
        rows = [s for s in run.slots if s.cluster == name]
        hours = [s.start_h for s in rows]
        actual = np.array([s.ci_g_per_kwh for s in rows])
        forecast = np.array([s.forecast_ci_g_per_kwh for s in rows])
        color = f"C{i}"
        ax.step(hours, actual, where="post", color=color, label=name)
        # an oracle forecast is the actual: drawing (and listing) it again would only hide
        # it; slots where nothing was planned have no forecast (NaN)
        planned = np.isfinite(forecast)
        if not np.allclose(forecast[planned], actual[planned], rtol=1e-9, atol=1e-9):
            forecast_shown = True
            ax.step(
                hours,
                forecast,
                where="post",
                color=color,
                ls="--",
                alpha=0.7,
                label=f"{name} forecast",
            )
    ax.set_xlabel("hours since start")
    ax.set_ylabel(f"carbon intensity ({signal})")
    fig.legend(loc="outside lower center", ncol=min(3, max(1, len(clusters))))
    ax.grid(alpha=0.3)
    caption = f"Carbon intensity of each cluster's grid zone ({signal}), actual (solid)" + (
        ", and the forecast the policy planned with, as it stood at planning time (dashed)."
        if forecast_shown
        else "; the policy planned with this same signal (an oracle forecast)."
    )
    return _save(fig, out_dir / "carbon_intensity.png", style, caption)


def _plot_allocation(
    run: RunResult,
    out_dir: Path,
    style: FigureStyle,
    policy: str,
    clusters: Sequence[SimCluster],
) -> Plot:
    names = sorted({s.cluster for s in run.slots})
    resource = next(iter(run.slots[0].allocated)) if run.slots else "units"
    capacity = {c.name: c.capacity.get(resource, 0.0) for c in clusters}
    fig, ax = _plt().subplots(figsize=style.size_in(0.5), layout="constrained")
    for i, name in enumerate(names):
        rows = [s for s in run.slots if s.cluster == name]
        ax.step(
            [s.start_h for s in rows],
            [s.allocated.get(resource, 0.0) for s in rows],
            where="post",
            color=f"C{i}",
            label=name,
        )
        if name in capacity:
            ax.axhline(capacity[name], color=f"C{i}", ls=":", lw=1)
    ax.set_xlabel("hours since start")
    ax.set_ylabel(f"{resource} in use")
    ax.legend(loc="upper right", framealpha=0.8)  # "best" is slow on long runs
    ax.grid(alpha=0.3)
    caption = f"{resource} in use per cluster under {policy} (slot averages)" + (
        "; dotted lines are each cluster's capacity." if capacity else "."
    )
    return _save(fig, out_dir / "allocation.png", style, caption)


def _save(fig: Any, path: Path, style: FigureStyle, caption: str) -> Plot:
    """Save ``fig`` as PNG, SVG and PDF beside each other."""
    for suffix in FIGURE_FORMATS:  # every figure is made with layout='constrained'
        target = path.with_suffix(f".{suffix}")
        fig.savefig(target, dpi=style.resolution_dpi if suffix == "png" else None)
    _plt().close(fig)
    return Plot(path, caption)


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}g}"
    return html.escape(str(value))


#: The side-by-side table: (summary key, label, unit, better when lower?).
_COMPARED = (
    ("carbon_kg", "carbon of the jobs", "kg CO2e", True),
    ("idle_carbon_kg", "idle carbon of the clusters", "kg CO2e", True),
    ("jobs_completed", "jobs completed", "", False),
    ("jobs_rejected", "jobs rejected (no cluster can hold them)", "", True),
    ("deadline_met_pct", "deadlines met", "%", False),
    ("mean_completion_ratio", "mean completion ratio", "", True),
    ("mean_wait_h", "mean wait before start", "h", True),
    ("planner_seconds_total", "planner time, total", "s", True),
    ("planner_seconds_max", "planner time, slowest round", "s", True),
)


def _headline(summary: Mapping[str, Any]) -> str:
    base = summary.get("baseline_metrics", {})
    baseline = html.escape(str(summary.get("baseline", "baseline")))
    saving, kg, base_kg = (
        summary.get("carbon_saving_pct"),
        summary.get("carbon_kg"),
        summary.get("baseline_carbon_kg"),
    )
    items = []
    if saving is not None and kg is not None and base_kg is not None:
        items.append(
            f"<strong>{saving:.1f} % less carbon</strong> than {baseline}: "
            f"{base_kg - kg:,.3g} kg saved ({kg:,.4g} kg against {base_kg:,.4g} kg)"
        )
    met, base_met = summary.get("deadline_met_pct"), base.get("deadline_met_pct")
    if met is not None:
        items.append(
            f"<strong>{met:.1f} % of deadlines met</strong>"
            + (f" ({baseline}: {base_met:.1f} %)" if base_met is not None else "")
        )
    wait, base_wait = summary.get("mean_wait_h"), base.get("mean_wait_h")
    if wait is not None and base_wait is not None:
        items.append(
            f"<strong>{wait - base_wait:+.2f} h of extra wait</strong> per job on average "
            f"({wait:.2f} h against {base_wait:.2f} h)"
        )
    return "<ul class=headline>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _comparison(summary: Mapping[str, Any]) -> str:
    base = summary.get("baseline_metrics", {})
    policy = html.escape(str(summary.get("policy", "policy")))
    baseline = html.escape(str(summary.get("baseline", "baseline")))
    rows = []
    for key, label, unit, _ in _COMPARED:
        mine, theirs = summary.get(key), base.get(key)
        if mine is None and theirs is None:
            continue
        delta = (
            _fmt(mine - theirs)
            if isinstance(mine, int | float) and isinstance(theirs, int | float)
            else ""
        )
        rows.append(
            f"<tr><th>{html.escape(label)}</th><td>{html.escape(unit)}</td>"
            f"<td>{_fmt(mine)}</td><td>{_fmt(theirs)}</td><td>{delta}</td></tr>"
        )
    head = (
        f"<tr><th>metric</th><th>unit</th><th>{policy} (policy)</th>"
        f"<th>{baseline} (baseline)</th><th>policy - baseline</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _parameters(summary: Mapping[str, Any]) -> str:
    """The scenario settings behind the run, in the scenario file's own TOML shape."""

    def toml(value: Any) -> str:
        return (
            json.dumps(value, allow_nan=False)
            if not isinstance(value, bool)
            else str(value).lower()
        )

    simulation = [
        ("start", summary.get("start")),
        ("hours", summary.get("hours")),
        ("slot_minutes", summary.get("slot_minutes")),
        ("policy", summary.get("policy")),
        ("baseline", summary.get("baseline")),
        ("forecast", summary.get("forecast")),
        ("seed", summary.get("seed")),
    ]
    lines = ["[simulation]"]
    lines += [f"{k} = {toml(v)}" for k, v in simulation if v is not None]
    for table in ("policy_params", "baseline_params"):
        params = summary.get(table) or {}
        if params:
            lines += ["", f"[{table}]", *(f"{k} = {toml(v)}" for k, v in params.items())]
    clusters = summary.get("clusters") or []
    if clusters:
        lines += ["", f"# clusters: {', '.join(str(c) for c in clusters)}"]
    if summary.get("replayed"):
        lines += ["# carbon past the end of the data was replayed (allow_replay = true)"]
    return "<pre>" + html.escape("\n".join(lines)) + "</pre>"


def write_html_report(
    summary: Mapping[str, Any], plots: Sequence[Plot], path: Path, *, title: str
) -> Path:
    """Write a single self-contained HTML page (headline, tables, base64-embedded figures)."""
    figures = "\n".join(
        f'<figure><img alt="{html.escape(p.path.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.path.read_bytes()).decode()}"><figcaption>'
        f"<strong>Figure {i}.</strong> {html.escape(p.caption)} "
        f"<span class=files>({html.escape(p.path.stem)}.png / .svg / .pdf)</span>"
        "</figcaption></figure>"
        for i, p in enumerate(plots, start=1)
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: left; }}
td {{ font-variant-numeric: tabular-nums; }}
th {{ background: #f3f3f3; font-weight: 600; }}
ul.headline {{ font-size: 1.2em; line-height: 1.6; }}
pre {{ background: #f6f6f6; padding: 0.8em; }}
img {{ max-width: 100%; }} figure {{ margin: 1.5em 0; }}
figcaption {{ font-size: 0.95em; }} .files {{ color: #777; font-size: 0.85em; }}
footer {{ font-size: 0.85em; color: #666; margin-top: 2em; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
{_headline(summary)}
<h2>Policy and baseline, side by side</h2>{_comparison(summary)}
<h2>Parameters</h2>
<p>The settings that produced this run (summary.json holds them all).</p>{_parameters(summary)}
<h2>Figures</h2>{figures}
<footer>{html.escape(_ATTRIBUTION)} Generated by carbonshift.</footer>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
