"""Plots and a self-contained HTML report of one simulation (policy against baseline).

Plots (PNG): cumulative emissions of policy and baseline and their difference (Caspian
Fig. 5a, CO2 scheduler Figs. 10.4e-f), the completion-ratio histogram (Caspian Figs. 5b-c),
carbon intensity per cluster with the forecast beside the actual, and allocation per cluster
over time. The HTML page embeds them (base64) with the summary table, so it can be mailed.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from carbonshift._extras import pyplot
from carbonshift.sim.engine import RunResult
from carbonshift.sim.outputs import SUMMARY_KEYS

__all__ = ["write_html_report", "write_plots"]

_PLOTS = "the simulation report's plots"  # matplotlib comes with carbonshift[sim]

_ATTRIBUTION = (
    "Carbon intensity data: Electricity Maps (ODbL). Workload traces as named in the scenario."
)


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


def write_plots(
    run: RunResult, baseline_run: RunResult, out_dir: Path, *, policy: str, baseline: str
) -> list[Path]:
    """Write the report's PNG plots into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        _plot_cumulative(run, baseline_run, out_dir / "cumulative_emissions.png", policy, baseline),
        _plot_completion(run, baseline_run, out_dir / "completion_ratio.png", policy, baseline),
        _plot_intensity(run, out_dir / "carbon_intensity.png"),
        _plot_allocation(run, out_dir / "allocation.png", policy),
    ]


def _plot_cumulative(
    run: RunResult, base: RunResult, path: Path, policy: str, baseline: str
) -> Path:
    plt = pyplot(needed_for=_PLOTS)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    h1, c1 = _cumulative(run)
    h0, c0 = _cumulative(base)
    top.plot(h0, c0, label=f"baseline ({baseline})", color="tab:gray")
    top.plot(h1, c1, label=f"policy ({policy})", color="tab:green")
    top.set_ylabel("cumulative emissions (kg CO2e)")
    top.legend()
    top.grid(alpha=0.3)
    grid = np.union1d(h0, h1)
    diff = np.interp(grid, h0, c0, left=0) - np.interp(grid, h1, c1, left=0)
    bottom.plot(grid, diff, color="tab:blue")
    bottom.axhline(0, color="black", lw=0.5)
    bottom.set_ylabel("baseline - policy (kg)")
    bottom.set_xlabel("hours since start")
    bottom.grid(alpha=0.3)
    fig.suptitle("Cumulative emissions")
    return _save(fig, path)


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
    run: RunResult, base: RunResult, path: Path, policy: str, baseline: str
) -> Path:
    plt = pyplot(needed_for=_PLOTS)
    fig, ax = plt.subplots(figsize=(8, 4))
    bins = [i / 20 for i in range(41)]
    ax.hist(np.clip(_ratios(base), 0, 2), bins=bins, alpha=0.5, label=baseline, color="tab:gray")
    ax.hist(np.clip(_ratios(run), 0, 2), bins=bins, alpha=0.6, label=policy, color="tab:green")
    ax.axvline(1.0, color="red", lw=1, ls="--", label="deadline")
    ax.set_xlabel("completion ratio (end - submit) / (deadline - submit), clipped at 2")
    ax.set_ylabel("jobs")
    ax.legend()
    ax.set_title("Completion ratio")
    return _save(fig, path)


def _plot_intensity(run: RunResult, path: Path) -> Path:
    clusters = sorted({s.cluster for s in run.slots})
    plt = pyplot(needed_for=_PLOTS)
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, name in enumerate(clusters):
        rows = [s for s in run.slots if s.cluster == name]
        hours = [s.start_h for s in rows]
        color = f"C{i}"
        ax.step(hours, [s.ci_g_per_kwh for s in rows], where="post", color=color, label=name)
        ax.step(
            hours,
            [s.forecast_ci_g_per_kwh for s in rows],
            where="post",
            color=color,
            ls="--",
            alpha=0.7,
            label=f"{name} forecast",
        )
    ax.set_xlabel("hours since start")
    ax.set_ylabel("carbon intensity (g/kWh)")
    ax.set_title("Actual (solid) and forecast at planning time (dashed)")
    ax.legend(fontsize="small", ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _plot_allocation(run: RunResult, path: Path, policy: str) -> Path:
    clusters = sorted({s.cluster for s in run.slots})
    resource = next(iter(run.slots[0].allocated)) if run.slots else "units"
    plt = pyplot(needed_for=_PLOTS)
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, name in enumerate(clusters):
        rows = [s for s in run.slots if s.cluster == name]
        ax.step(
            [s.start_h for s in rows],
            [s.allocated.get(resource, 0.0) for s in rows],
            where="post",
            color=f"C{i}",
            label=name,
        )
    ax.set_xlabel("hours since start")
    ax.set_ylabel(f"{resource} in use (slot average)")
    ax.set_title(f"Allocation under {policy}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    """Save as PNG (embedded in the report) and SVG beside it."""
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    fig.savefig(path.with_suffix(".svg"))
    pyplot(needed_for=_PLOTS).close(fig)
    return path


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return html.escape(str(value))


def write_html_report(
    summary: Mapping[str, Any], plots: Sequence[Path], path: Path, *, title: str
) -> Path:
    """Write a single self-contained HTML page (tables and base64-embedded plots)."""
    rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{_fmt(summary.get(k))}</td></tr>" for k in SUMMARY_KEYS
    )
    base = summary.get("baseline_metrics", {})
    base_rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in base.items()
    )
    images = "\n".join(
        f'<figure><img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"><figcaption>{html.escape(p.stem)}'
        "</figcaption></figure>"
        for p in plots
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: left; }}
th {{ background: #f3f3f3; font-weight: 600; }}
img {{ max-width: 100%; }} figure {{ margin: 1.5em 0; }}
footer {{ font-size: 0.85em; color: #666; margin-top: 2em; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<h2>Summary</h2><table>{rows}</table>
<h2>Baseline run</h2><table>{base_rows}</table>
<h2>Plots</h2>{images}
<footer>{html.escape(_ATTRIBUTION)} Generated by carbonshift.</footer>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
