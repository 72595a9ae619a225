"""Command line: ``python -m dmlcore fit ...``, ``study ...`` and ``bench ...`` (a one-CSV study).

Bad input exits with status 2 and one line naming the problem; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from dmlcore.data.ihdp import IHDP_DESIGNS
from dmlcore.data.registry import dataset_options, load_dataset, real_dataset_names
from dmlcore.device import resolve_device
from dmlcore.data.simulate import NOISE_SCALES
from dmlcore.errors import DMLCoreError, FitDiverged
from dmlcore.ivinference import set_text
from dmlcore.process import set_threads
from dmlcore.estimators.second_stage import SECOND_STAGES
from dmlcore.learners import LEARNERS, NUISANCE_CHOICES
from dmlcore.runs import METHODS, fit_run
from dmlcore.studies.command import (add_covariance_options, add_debias_option, add_executor_options,
                                    add_own_data_options, add_study_parser, exit_status, own_data, run_cli_study,
                                    study_command)
from dmlcore.studies.spec import spec_from_dict


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="demand-iv", help="built-in data set (default demand-iv)")
    p.add_argument("--iv-strength", type=float, default=1.0, help="instrument strength of demand-iv")
    p.add_argument("--rho", type=float, default=0.9, help="confounding correlation of demand-iv")
    p.add_argument("--ood-test", action="store_true", help="demand-iv fresh test draws with time in [1, 11]")
    p.add_argument("--noise-scale", default="standardized", choices=tuple(NOISE_SCALES),
                   help="demand-iv/digits-iv outcome noise: 'standardized' (the authors' code behind the "
                        "paper's numbers, default) or 'raw' (the appendix's literal text; almost no confounding)")
    p.add_argument("--design", default="code", choices=tuple(IHDP_DESIGNS),
                   help="ihdp-like generator: 'code' (the authors' code that made their replicates and the "
                        "paper's numbers, default) or 'text' (the paper's appendix: a weak confounder)")
    p.add_argument("--data-dir", help="replicate folder for --dataset replicate")
    p.add_argument("--learner", default="nn", choices=LEARNERS, help="nuisance learner")
    p.add_argument("--outcome-learner", choices=NUISANCE_CHOICES,
                   help="the outcome model s(c) = E[Y|C] of dml-cmr, ce-dml-cmr instead of --learner's; auto: nn or "
                        "gb, whichever has the lower cross-fitted held-out loss (recorded in the run's nuisances)")
    p.add_argument("--sampler", choices=NUISANCE_CHOICES,
                   help="the distribution model of the treatment given C (DML family) instead of --learner's; "
                        "auto: nn or gb by cross-fitted energy score")
    p.add_argument("--folds", type=int, default=10, help="K for DML-CMR cross-fitting")
    p.add_argument("--epochs", type=int, help="maximum epochs (boosting stages) per model")
    p.add_argument("--n-draws", type=int, default=8, help="draws per row to estimate E[f(X)|c]")
    p.add_argument("--f-model", choices=tuple(SECOND_STAGES),
                   help="second stage f (default: the learner's own; sieve gives confidence bands)")
    p.add_argument("--reps-crossfit", type=int, default=1,
                   help="repeat the fit R times with seeds seed..seed+R-1 (median f-hat, split-spread band)")
    p.add_argument("--threads", type=int,
                   help="torch threads (default 1, or DMLCORE_TORCH_THREADS; 2 is faster on an idle "
                        "2-core machine, much slower when other work shares the cores)")
    p.add_argument("--device", default="auto",
                   help="where the networks run: auto (CUDA when torch sees one, else the CPU), cpu, cuda or cuda:N")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the CLI."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dmlcore",
                                     description="DML-CMR for IV regression and proximal causal learning.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    fit = sub.add_parser("fit", help="fit one estimator and report its metrics")
    _add_common(fit)
    fit.add_argument("--n", type=int, default=5000, help="rows to simulate")
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--method", default="dml-cmr", choices=METHODS)
    fit.add_argument("--json", help="write the full run record here")
    fit.add_argument("--predictions", help="write f-hat at every row here (CSV)")
    fit.add_argument("--bootstrap", type=int, metavar="B",
                     help="add a bootstrap interval of the effect from B refits on resampled rows (e.g. 200)")
    fit.add_argument("--heldout-folds", type=int, metavar="K",
                     help="folds of the held-out residual (default: 2 without a known truth, else off; 0: off)")
    fit.add_argument("--effect-folds", type=int, metavar="K",
                     help="refits that cross-fit f-hat for the debiased effect (default: the held-out residual's, "
                          "else 2; 0: correct the full-sample fit, measured biased)")
    add_debias_option(fit)
    fit.add_argument("--executor", default="local", choices=("local", "ray"),
                     help="where bootstrap refits run: local processes or a Ray cluster")
    fit.add_argument("--jobs", type=int, default=1, help="bootstrap refits run at once")
    fit.add_argument("--address", help="Ray cluster address for --executor ray (default: a local Ray)")
    add_covariance_options(fit)
    add_own_data_options(fit)

    bench = sub.add_parser("bench", help="repeat fits over sizes, seeds and methods")
    _add_common(bench)
    bench.add_argument("--sizes", default="1000,2000,5000", help="comma-separated N")
    bench.add_argument("--methods", default="dml-cmr,ce-dml-cmr,naive")
    bench.add_argument("--reps", type=int, default=10, help="repetitions (seeds 0..reps-1)")
    bench.add_argument("--seed-offset", type=int, default=0, help="first seed")
    bench.add_argument("--out", default="results.csv", help="CSV of every fit (appended as it runs)")
    add_debias_option(bench)
    add_executor_options(bench)
    add_study_parser(sub)
    return parser


def _fit(args) -> int:
    if args.csv:
        data, truth, params, dataset = own_data(args), None, {"csv": args.csv}, Path(args.csv).name
    else:
        loaded = load_dataset(args.dataset, n=args.n, seed=args.seed, rho=args.rho, iv_strength=args.iv_strength,
                              ood_test=args.ood_test, data_dir=args.data_dir, noise_scale=args.noise_scale,
                              design=args.design)
        data, truth, params, dataset = loaded.data, loaded.truth, loaded.params, args.dataset
    run = fit_run(data, args.method, truth=truth, dataset=dataset, learner=args.learner, folds=args.folds,
                  seed=args.seed, epochs=args.epochs, n_draws=args.n_draws, f_model=args.f_model,
                  reps_crossfit=args.reps_crossfit, data_params=params, device=args.device,
                  bootstrap=args.bootstrap, heldout_folds=args.heldout_folds, effect_folds=args.effect_folds,
                  debias=args.debias, executor=args.executor, jobs=args.jobs, address=args.address,
                  cov_type=args.cov, cluster=args.cluster, outcome_learner=args.outcome_learner,
                  sampler=args.sampler)
    rec = run.record
    diagnostics = rec.get("diagnostics") or {}
    if diagnostics.get("error"):      # e.g. blank pixel covariates: the fit itself went fine
        print(f"warning: no first-stage diagnostics: {diagnostics['error']}", file=sys.stderr)
    if diagnostics.get("warning"):
        print(f"warning: {diagnostics['warning']}", file=sys.stderr)
    elif (diagnostics.get("strength") or {}).get("level") == "moderate":   # labels: diagnostics.strength_label
        print(f"note: instrument strength {diagnostics['strength']['text']}", file=sys.stderr)
    for note in (diagnostics.get("inference") or {}).get("notes") or []:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(run.to_json())
    if args.predictions:
        run.predictions().to_csv(args.predictions, index=False)
    mse = "n/a (no ground truth)" if rec["mse"] is None else f"{rec['mse']:.4f}"
    extra = ""
    if rec.get("coefficients"):
        extra = " coefficients " + ", ".join(f"{k}={v:.4g}" for k, v in list(rec["coefficients"].items())[:4])
    if rec["band_width"] is not None:
        covered = "n/a" if rec["band_coverage"] is None else f"{rec['band_coverage']:.3f}"
        extra += f" band_coverage={covered} band_width={rec['band_width']:.4g}"
    extra += _effect_text(rec["effect"])
    for role, chosen in (rec.get("nuisances") or {}).items():   # "auto" nuisances: which candidate won
        extra += f" {role}-hat=auto:{chosen['choice']}"
    if rec.get("heldout"):
        held = rec["heldout"]
        extra += (f" heldout=n/a ({held['error']})" if "error" in held else
                  f" heldout={held['relative']:.4g} (projected residual / Var(Y))")
    print(f"{rec['method']} on {rec['dataset']} (n={rec['n']}, learner={rec['learner']}, folds={rec['folds']}, "
          f"seed={rec['seed']}): mse={mse} seconds={rec['seconds']:.1f}{extra}")
    return 0


def _effect_text(effect: dict) -> str:
    """The effect for the one-line summary: estimate [interval] (how), or why there is none; the
    plug-in beside a debiased headline, the debiased average derivative beside 2SLS's slope."""
    if effect.get("estimate") is None:
        return f" effect=n/a ({effect.get('error')})"
    text = f" effect={effect['estimate']:.4g}"
    interval, debiased = effect.get("interval") or "", effect.get("debiased")
    headline = bool(debiased) and effect["estimate"] == debiased["estimate"]
    if effect.get("ci_lower") is not None:
        how = ("debiased" if headline else "bootstrap" if effect.get("bootstrap") else
               "2SLS s.e." if interval.startswith("2SLS") else "delta method")
        text += f" [{effect['ci_lower']:.4g}, {effect['ci_upper']:.4g}] ({effect['level']:.0%}, {how})"
    elif interval.startswith("weakly identified"):
        text += f" ({interval})"            # weakly identified (its one-line reason): no interval
    else:
        text += " (no interval: add --bootstrap B)"
    for entry in effect.get("intervals") or []:
        if entry["interval"].startswith("Anderson-Rubin") and entry.get("set") is not None:
            text += f" anderson_rubin={set_text(entry['set'])} ({entry['kind']})"
    plug = effect.get("plug_in") or {}
    if headline and plug.get("estimate") is not None:
        text += f" plug-in={plug['estimate']:.4g}"
    elif debiased:
        text += (f" debiased average derivative={debiased['estimate']:.4g} "
                 f"[{debiased['ci_lower']:.4g}, {debiased['ci_upper']:.4g}]")
    if effect.get("debiased_error"):
        text += f" ({effect['debiased_error']})"
    return text


def _csv_header(path: Path) -> list[str]:
    """The column names on the first line of the CSV file ``path``."""
    with path.open(newline="") as handle:
        return next(csv.reader(handle), [])


def _bench(args) -> int:
    """A study of one data set without the store (every fit runs now): rows appended to one CSV."""
    try:
        sizes = [int(s) for s in _columns(args.sizes)]
    except ValueError:
        raise DMLCoreError(f"--sizes must be comma-separated integers; got {args.sizes!r}.") from None
    methods = _columns(args.methods)
    for m in methods:
        if m not in METHODS:
            raise DMLCoreError(f"Unknown method {m!r} in --methods; choose from {', '.join(METHODS)}.")
    if args.reps < 1:
        raise DMLCoreError(f"--reps must be at least 1; got {args.reps}.")
    if args.dataset in real_dataset_names():
        raise DMLCoreError(f"bench scores methods against a known truth, and {args.dataset} is a real data set "
                           f"without one; use `python -m dmlcore study --dataset {args.dataset} --methods ...` "
                           f"for each method's effect and held-out residual.")
    data = {"n": sizes, "rho": args.rho, "iv_strength": args.iv_strength, "ood_test": args.ood_test,
            "noise_scale": args.noise_scale, "design": args.design, "data_dir": args.data_dir}
    spec = spec_from_dict({"dataset": args.dataset, "methods": methods,
                           "data": {k: v for k, v in data.items() if k in dataset_options(args.dataset)},
                           "seeds": list(range(args.seed_offset, args.seed_offset + args.reps)),
                           "learner": args.learner, "folds": args.folds, "epochs": args.epochs,
                           "n_draws": args.n_draws, "f_model": args.f_model, "reps_crossfit": args.reps_crossfit,
                           "device": args.device, "outcome_learner": args.outcome_learner, "sampler": args.sampler,
                           "debias": args.debias})
    out = Path(args.out)
    design = [o for o in ("noise_scale", "design") if o in dataset_options(args.dataset)]  # which problem
    chosen = [s for s in ("outcome_learner", "sampler") if getattr(args, s) is not None]   # columns when set
    fields = ["dataset", "n", "seed", "method", "learner", "folds", "mse", "mse_fresh", "seconds", *design, *chosen]
    new = not out.exists() or out.stat().st_size == 0
    header = fields if new else _csv_header(out)
    missing = [f for f in fields if f not in header]
    if missing:
        print(f"note: {out} was started without the column(s) {', '.join(missing)}; its new rows leave them out "
              f"(write to a new file to record them)", file=sys.stderr)
    rows = []
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        if new:
            writer.writeheader()

        def write(event: dict) -> None:
            rec = event["record"]
            if rec is None:
                return
            row = {k: rec.get(k) for k in fields}
            row["mse_fresh"] = rec["metrics"].get("mse_fresh")
            row.update({o: rec["config"]["data"].get(o) for o in design})
            row.update({s: rec["config"].get(s) for s in chosen})
            writer.writerow(row)
            handle.flush()
            rows.append(row)

        result = run_cli_study(spec, args, keep=False, on_fit=write)
    print(summarize(rows))
    return exit_status(result)


def summarize(rows: list[dict]) -> str:
    """Median, quartiles, mean of the MSE and mean wall time per (n, method) cell."""
    lines = [f"{'n':>6} {'method':<12} {'reps':>4} {'median':>8} {'q1':>8} {'q3':>8} {'mean':>8} {'sec':>7}"]
    cells: dict[tuple, list[dict]] = {}
    for r in rows:
        cells.setdefault((int(r["n"]), r["method"]), []).append(r)
    for (n, method), cell in sorted(cells.items()):
        mse = np.array([float(r["mse"]) for r in cell])
        sec = np.mean([float(r["seconds"]) for r in cell])
        q1, med, q3 = np.quantile(mse, [0.25, 0.5, 0.75])
        lines.append(f"{n:>6} {method:<12} {len(cell):>4} {med:8.4f} {q1:8.4f} {q3:8.4f} {mse.mean():8.4f} {sec:7.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            print(f"error: --threads must be at least 1; got {args.threads}.", file=sys.stderr)
            return 2
        set_threads(args.threads)
    try:
        resolve_device(getattr(args, "device", "auto"))  # before any data is made
        return {"fit": _fit, "bench": _bench, "study": study_command}[args.command](args)
    except (DMLCoreError, FitDiverged) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, but the user still gets one line
        print(f"error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
