"""The cost plan's prediction error: `plan-cost` before a run against what the run then measured.

1. The demo graph runs (2 cores, the default profile's threads). The bundled rates,
   config/cost_rates.json, predict it.
2. A large local run: one WARC source whose two snapshots hold the sample's WARCs
   (data/sample/warc/*/*.warc*) copied COPIES times under new names (half the copies in each
   snapshot, so the second is a re-crawl of the first), in parts of up to 16 files and 10 MB;
   at 16 copies, 4,432 documents, enough that a per-part job's cost is mostly per document.
   The demo's rates cost it before it runs (as a user would; the plan writes the listing the
   run then reads), then it runs and is measured the same way.
3. The demo and the large run calibrated together (tokenmill.cost.calibrate: the demo's many
   small jobs pin each stage's fixed cost, the large run's jobs its rate per document); with
   --write-rates, the rates file (config/cost_rates.json is written this way).
4. A run of another size (CHECK_COPIES copies), costed by step 3's rates before it runs, then
   run and measured: the plan's error on a run it was not fitted on.

Per stage: jobs predicted and run, and documents, core-seconds (Snakemake's cpu_time; the wall
seconds of a job too short to be sampled) and bytes written (the outputs on disk), predicted
and measured, with the error in percent.

usage: python bench/bench_cost.py [WORKDIR] [--copies 16] [--check-copies 8]
       [--calibration DEMO_RESULTS [LARGE_RESULTS]] [--write-rates RATES] [--tiny]
(--calibration: finished runs instead of steps 1 and 2's; --tiny: the results/ of the demo run
in the working directory is the calibration and the run checked, and nothing runs: its figures
mean nothing)
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
from tokenmill.cost import calibrate, measure_run, measured_totals, plan_cost, write_rates  # noqa: E402
from tokenmill.io import read_json  # noqa: E402
from tokenmill.plan import list_inputs  # noqa: E402

COPIES = 16  # 4,432 documents: enough that the per-part jobs' cost is mostly per document
CHECK_COPIES = 8
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
    config["chains"]["sources"] = ["crawl"]  # the chain jobs' rates, fitted and checked like every stage's
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


def run_and_compare(workdir: Path, config: dict, rates: dict, title: str) -> None:
    """Cost the run's config before it runs (as a user plans it; the plan writes the listing the
    run then reads), run its graph, and print predicted against measured."""
    write_config(workdir, config)
    cost = cost_of(workdir, config, rates)
    inputs = cost["inputs"]
    print(f"\n{workdir.name}: {inputs['files']} input files, {inputs['bytes'] / 1e6:.1f} MB in {inputs['parts']} "
          f"parts of {inputs['snapshots']} snapshots")
    print(f"graph on {CORES} cores: {run_graph(workdir):.0f} s wall")
    compare(title, cost, measured_totals(measure_run(str(workdir / "results"))))


def main(workdir: Path, copies: int, check_copies: int, calibration: list[Path], rates_out: Path | None,
         tiny: bool) -> None:
    bundled = read_json(REPO / "config" / "cost_rates.json")
    if tiny:
        demo, calibration = Path.cwd(), [Path.cwd() / "results"]
        print(f"tiny: the demo run in {demo} is the calibration and the run checked; its figures mean nothing")
    elif not calibration:
        demo = workdir / "demo"
        write_config(demo, demo_config())
        print(f"demo graph on {CORES} cores: {run_graph(demo):.0f} s wall")
        calibration = [demo / "results"]
    else:
        demo = calibration[0].parent
    demo_config_used = yaml.safe_load((demo / "config.yaml").read_text()) if (demo / "config.yaml").exists() else \
        yaml.safe_load((demo / "config" / "config.yaml").read_text())
    compare(f"demo run: predicted by the bundled rates of {bundled['provenance']['date']} / measured",
            cost_of(demo, demo_config_used, bundled), measured_totals(measure_run(str(calibration[0]))))
    if len(calibration) == 1 and not tiny:  # the large run: per-document rates dominate its jobs
        run_and_compare(workdir / "large", larger_config(workdir / "large", copies), calibrate(str(calibration[0])),
                        f"large run ({copies} copies): predicted by the demo's rates / measured")
        calibration.append(workdir / "large" / "results")
    rates = calibrate([str(folder) for folder in calibration])
    print(f"\ncalibration: {', '.join(map(str, calibration))} ({len(calibration)} run(s) fitted together: "
          f"{rates['run']['parts']} parts, {sum(rates['run']['documents'].values()):,} documents)")
    if rates_out:
        write_rates(rates, str(rates_out))
        print(f"rates written to {rates_out}")
    if tiny:
        compare("the same run: predicted by its own rates / measured", cost_of(demo, demo_config_used, rates),
                measured_totals(measure_run(str(calibration[0]))))
        return
    run_and_compare(workdir / "check", larger_config(workdir / "check", check_copies), rates,
                    f"a run of another size ({check_copies} copies): predicted by the calibration's rates / measured")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", nargs="?", help="where the runs go (kept afterwards); default a temporary folder")
    parser.add_argument("--copies", type=int, default=COPIES, help="copies of the sample WARCs in the large run")
    parser.add_argument("--check-copies", type=int, default=CHECK_COPIES,
                        help="copies of the sample WARCs in the run the calibrated rates predict")
    parser.add_argument("--calibration", type=Path, nargs="+", default=[],
                        help="finished runs' results folders, the demo's first (skips the demo run, and with two "
                             "or more the large run too)")
    parser.add_argument("--write-rates", type=Path, help="write the calibrated rates here (config/cost_rates.json)")
    add_tiny_option(parser)
    args = parser.parse_args()
    calibration = [folder.resolve() for folder in args.calibration]
    if args.workdir:
        main(Path(args.workdir).resolve(), args.copies, args.check_copies, calibration, args.write_rates, args.tiny)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp), args.copies, args.check_copies, calibration, args.write_rates, args.tiny)
