"""The cost plan's prediction error: `plan-cost` before a run against what the run then measured.

1. The demo graph runs (2 cores, the default profile's threads) and is calibrated
   (tokenmill.cost.calibrate). The bundled rates, config/cost_rates.json (another demo run),
   predict it: the demo's error, run to run on one machine.
2. A larger local run: one WARC source whose two snapshots hold the sample's WARCs
   (data/sample/warc/*/*.warc*) copied COPIES times under new names (half the copies in each
   snapshot, so the second is a re-crawl of the first), in parts of up to 16 files and 10 MB,
   larger than any demo part. The rates of step 1 cost it with `plan_cost` before it runs (as
   a user would; the plan writes the listing the run then reads); then the graph runs and is
   measured the same way.

Per stage: jobs predicted and run, and documents, core-seconds (Snakemake's cpu_time; the wall
seconds of a job too short to be sampled) and bytes written (the outputs on disk), predicted
and measured, with the error in percent.

usage: python bench/bench_cost.py [WORKDIR] [--copies 4] [--calibration RESULTS] [--tiny]
(--calibration: a finished demo run's results folder instead of step 1's run; --tiny: the
results/ of the demo run in the working directory is both the calibration and the "larger"
run, and nothing runs: its figures mean nothing)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from common import REPO, add_tiny_option, run_checked  # noqa: E402 (puts the repository on the path)
from tests.sample_data import demo_config, with_sources, write_config  # noqa: E402
from tokenmill.config import validate  # noqa: E402
from tokenmill.cost import calibrate, measure_run, measured_totals, plan_cost  # noqa: E402
from tokenmill.io import read_json  # noqa: E402
from tokenmill.plan import list_inputs  # noqa: E402

COPIES = 4
CORES = "2"  # both runs alike: the rates carry the threads of the run they come from


def run_graph(workdir: Path) -> float:
    """The whole graph on the run's own config (`workdir`/config.yaml); its wall seconds."""
    start = time.perf_counter()
    run_checked("snakemake", [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
                              "--configfile", str(workdir / "config.yaml"), "--cores", CORES], cwd=workdir)
    return time.perf_counter() - start


def larger_config(workdir: Path, copies: int) -> dict:
    """The sample WARCs `copies` times under new names, as two snapshots of one crawl source."""
    originals = sorted((REPO / "data" / "sample" / "warc").glob("*/*.warc*"))
    snapshots = {}
    for copy in range(copies):
        snapshot = "crawl-a" if copy < max(copies // 2, 1) else "crawl-b"
        folder = workdir / "inputs" / snapshot
        folder.mkdir(parents=True, exist_ok=True)
        for original in originals:
            shutil.copyfile(original, folder / f"copy{copy}-{original.parent.name}-{original.name}")
        snapshots[snapshot] = [str(workdir / "inputs" / snapshot / "*.warc*")]
    config = demo_config()
    with_sources(config, {"crawl": {"kind": "warc", "tier": "crawl", "license_id": "CC-TOU", "snapshots": snapshots}})
    config["parts"] = {"target_bytes": 10_000_000, "max_files": 16}
    # the demo's holdout pin is the demo's carve; these inputs carve their own, unpinned
    config["holdout"].update(manifest_sha256=None, time_forward={"cutoff": None, "sources": []})
    return config


def error(predicted: float | None, measured: float | None) -> str:
    if predicted is None or not measured:
        return "-"
    return f"{100 * (predicted - measured) / measured:+.0f}%"


def compare(title: str, cost: dict, measured: dict[str, dict]) -> None:
    """Predicted against measured, per stage in pipeline order and in total."""
    print(f"\n{title}")
    print(f"{'stage':<23}{'jobs':>9}{'documents (pred / meas)':>25}{'err':>6}{'core-s (pred / meas)':>23}{'err':>6}"
          f"{'MB written (pred / meas)':>26}{'err':>6}")
    totals = {"core_seconds": [0.0, 0.0], "bytes_written": [0.0, 0.0]}
    for row in cost["stages"]:
        truth = measured.get(row["stage"])
        if truth is None or row["core_seconds"] is None:
            continue
        for measure in totals:
            totals[measure][0] += row[measure]
            totals[measure][1] += truth[measure]
        docs = "-" if row["documents"] is None else f"{row['documents']:,.0f} / {truth['documents']:,.0f}"
        print(f"{row['stage']:<23}{row['jobs']:>4} /{truth['jobs']:>3}{docs:>25}"
              f"{error(row['documents'], truth['documents']):>6}"
              f"{row['core_seconds']:>11.1f} /{truth['core_seconds']:>8.1f}"
              f"{error(row['core_seconds'], truth['core_seconds']):>6}"
              f"{row['bytes_written'] / 1e6:>13.2f} /{truth['bytes_written'] / 1e6:>9.2f}"
              f"{error(row['bytes_written'], truth['bytes_written']):>6}")
    core, written = totals["core_seconds"], totals["bytes_written"]
    print(f"{'total':<23}{'':>9}{'':>25}{'':>6}{core[0]:>11.1f} /{core[1]:>8.1f}{error(*core):>6}"
          f"{written[0] / 1e6:>13.2f} /{written[1] / 1e6:>9.2f}{error(*written):>6}")
    missing = sorted(set(measured) - {row["stage"] for row in cost["stages"] if row["core_seconds"] is not None})
    if missing:
        print(f"measured but not costed (no rates): {', '.join(missing)}")


def cost_of(workdir: Path, config: dict, rates: dict) -> dict:
    """plan_cost of the run in `workdir` (its listings under results/plan; no profile: costs only)."""
    checked = validate(yaml.safe_load(yaml.safe_dump(config)))
    return plan_cost(checked, list_inputs(checked, str(workdir / "results" / "plan")), rates, {}, cores=int(CORES))


def main(workdir: Path, copies: int, calibration: Path | None, tiny: bool) -> None:
    bundled = read_json(REPO / "config" / "cost_rates.json")
    if tiny:
        demo, calibration = Path.cwd(), Path.cwd() / "results"
        print(f"tiny: the demo run in {demo} is the calibration and the larger run; its figures mean nothing")
    elif calibration is None:
        demo = workdir / "demo"
        write_config(demo, demo_config())
        print(f"demo graph on {CORES} cores: {run_graph(demo):.0f} s wall")
        calibration = demo / "results"
    else:
        demo = calibration.parent
    rates = calibrate(str(calibration))
    print(f"calibration: {calibration} ({rates['run']['parts']} parts, {sum(rates['run']['documents'].values())} "
          f"documents); bundled rates: config/cost_rates.json of {bundled['provenance']['date']}")
    demo_config_used = yaml.safe_load((demo / "config.yaml").read_text()) if (demo / "config.yaml").exists() else \
        yaml.safe_load((demo / "config" / "config.yaml").read_text())
    compare("demo run: predicted by the bundled rates / measured", cost_of(demo, demo_config_used, bundled),
            measured_totals(measure_run(str(calibration))))

    if tiny:
        large, config = demo, demo_config_used
    else:
        large = workdir / "large"
        config = larger_config(large, copies)
        write_config(large, config)
    cost = cost_of(large, config, rates)  # before the run, as a user plans it
    inputs = cost["inputs"]
    print(f"\nlarger run: {inputs['files']} input files, {inputs['bytes'] / 1e6:.1f} MB in {inputs['parts']} parts of "
          f"{inputs['snapshots']} snapshots")
    if not tiny:
        print(f"larger graph on {CORES} cores: {run_graph(large):.0f} s wall")
    compare("larger run: predicted by the demo's rates / measured", cost,
            measured_totals(measure_run(str(large / "results"))))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", nargs="?", help="where the runs go (kept afterwards); default a temporary folder")
    parser.add_argument("--copies", type=int, default=COPIES, help="copies of the sample WARCs in the larger run")
    parser.add_argument("--calibration", type=Path, help="a finished demo run's results folder (skips step 1's run)")
    add_tiny_option(parser)
    args = parser.parse_args()
    calibration = args.calibration.resolve() if args.calibration else None
    if args.workdir:
        main(Path(args.workdir).resolve(), args.copies, calibration, args.tiny)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp), args.copies, calibration, args.tiny)
