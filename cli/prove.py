"""``kraftspec prove``: the table of proof obligations, and the checks that keep the proofs honest.

What it runs, in order:

1. the model's invariants, proved inductive with Z3 (:mod:`kraftspec.proofs.inductive`) in every
   behaviour profile, one line per invariant and transition (once for all profiles where the
   obligation is the same formula in each, else one per profile), plus a non-vacuity line per
   transition and profile and the invariants the encoding does not state, each with the reason;
2. the lease timing theorems for the default configuration (:mod:`kraftspec.proofs.timing`);
3. the guard-removal check (:mod:`kraftspec.proofs.guards`), in every profile: each guard an
   invariant depends on, removed, must make its obligation fail with a counterexample;
4. with ``--drift N``: the drift check (:mod:`kraftspec.proofs.drift`) on every step of the
   regression corpus's traces of ``--profile``, a scripted run and N steps of random walks under it;
5. with ``--crosshair``: the CrossHair contracts (:mod:`kraftspec.proofs.contracts`).

Exit status 0 when everything holds; 1 when an obligation fails or is unknown, a guard removal
is not caught, the drift check finds a mismatch, or CrossHair finds a counterexample; 2 for bad
input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from kraftspec.cli import add_profile_option, bounded
from kraftspec.spec.profiles import DEFAULT_PROFILE
from kraftspec.traces import Progress, junit

DESCRIPTION = re.sub(r":mod:`([^`]+)`", r"\1", __doc__.split("\n\n", 1)[1].rsplit("\n\nExit status", 1)[0])


def add_parser(commands) -> None:
    prove = commands.add_parser(
        "prove",
        help="prove the model's invariants and the lease timing theorems with Z3",
        description="Prove, with Z3, that the model's invariants hold after every step from every state "
        "that satisfies them (for any number of brokers and partitions), and the lease timing theorems "
        "for the default configuration; show that each guard the proofs rely on matters. Exit status: "
        "0 everything holds, 1 something does not, 2 bad input.",
        epilog=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prove.add_argument("--only", metavar="ID", nargs="+", default=None,
                       help="only these invariant ids (for example INV-3 INV-9); the timing theorems are left out")
    prove.add_argument("--drift", metavar="N", type=bounded("--drift", 0, 10_000_000), default=None,
                       help="also check the encoding against the model on every step of the corpus and N "
                       "sampled steps of random walks (1,000 take about a minute)")
    prove.add_argument("--seed", type=bounded("--seed", 0, 2**63 - 1), default=0,
                       help="random seed of the drift check's walks (default 0)")
    prove.add_argument("--crosshair", action="store_true",
                       help="also run the CrossHair contracts and their planted bugs (several minutes)")
    prove.add_argument("--no-guards", action="store_true", help="leave out the guard-removal check")
    prove.add_argument("--timeout-ms", type=bounded("--timeout-ms", 100, 600_000), default=20_000,
                       help="Z3's time limit per obligation (default 20000)")
    prove.add_argument("--traces", metavar="DIR",
                       help="write the trace of every counterexample the model can reach to DIR (for the corpus)")
    prove.add_argument("--json", metavar="FILE", help="write every obligation and check as JSON to FILE")
    prove.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE, one test case per obligation")
    add_profile_option(prove, "the behaviour profile of the drift check's corpus traces, scripted run and walks, and "
                       "of the table of which invariant needs which (the invariant proofs and the guard check "
                       "cover every profile whatever this says; the timing theorems follow kip-631)")


def run(args) -> int:
    from kraftspec.proofs import inductive
    from kraftspec.proofs.obligations import PROVED
    from kraftspec.spec import rules

    if args.only:
        unknown = [i for i in args.only if i not in rules() or not i.startswith("INV-")]
        if unknown:
            print(f"kraftspec prove: --only: {', '.join(unknown)} is not an invariant id of the spec "
                  f"(INV-1 to INV-{sum(1 for r in rules() if r.startswith('INV-'))})", file=sys.stderr)
            return 2
    if args.traces:
        from kraftspec.proofs import counterexample

        folder = Path(args.traces)
        if folder.exists() and not folder.is_dir():
            print(f"kraftspec prove: --traces: {folder} exists and is not a folder", file=sys.stderr)
            return 2
        folder.mkdir(parents=True, exist_ok=True)
        counterexample.TRACES_TO = folder
    started = time.perf_counter()
    out = sys.stdout
    report: dict = {"profile": args.profile}
    failures: list[str] = []
    if args.profile != DEFAULT_PROFILE:
        print(f"profile {args.profile}: the drift check (--drift) samples the model under it. The invariant proofs "
              f"and the guard check below cover every profile (the profile column); the timing theorems follow "
              f"{DEFAULT_PROFILE}.\n", file=out)

    found = inductive.obligations(tuple(args.only) if args.only else None, timeout_ms=args.timeout_ms)
    if not args.only:
        from kraftspec.proofs import timing

        found += timing.obligations()
    _table(out, found)
    report["obligations"] = [o.to_json() for o in found]
    bad = [o for o in found if o.result not in (PROVED, "not encoded")]
    failures += [f"{o.subject} {o.transition}: {o.result}" for o in bad]
    proved = sum(o.proved for o in found)
    not_encoded = sorted({o.subject for o in found if o.result == "not encoded"})
    print(f"\n{proved} of {len(found) - len(not_encoded)} obligations proved in "
          f"{sum(o.seconds for o in found):.1f} s of solver time"
          + (f"; not encoded: {', '.join(not_encoded)} (reasons above)" if not_encoded else ""), file=out)

    if not args.only:
        report["dependencies"] = _dependencies(out, args.profile)
    if not args.no_guards and not args.only:
        report["guards"] = _guards(out, failures)
    if args.drift is not None:
        report["drift"] = _drift(out, args.drift, args.seed, failures, args.profile)
    if args.crosshair:
        report["crosshair"] = _crosshair(out, failures)

    seconds = time.perf_counter() - started
    report["seconds"] = round(seconds, 2)
    report["passed"] = not failures
    print(f"\n{'all checks passed' if not failures else f'{len(failures)} problem(s): ' + '; '.join(failures[:5])} "
          f"in {seconds:.1f} s", file=out)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if args.junit:
        cases = [(f"prove.{o.group}", f"{o.subject} {o.transition}" + (f" [{o.profile}]" if o.profile else ""), o.seconds,
                  None if o.result in (PROVED, "not encoded") else f"{o.result}: {o.detail}") for o in found]
        Path(args.junit).write_text(junit("kraftspec prove", cases))
    return 1 if failures else 0


def _table(out, found) -> None:
    print(f"{'group':9}  {'subject':12}  {'transition / case':40}  {'profile':8}  {'result':12}  {'time':>7}", file=out)
    print(f"{'-' * 9}  {'-' * 12}  {'-' * 40}  {'-' * 8}  {'-' * 12}  {'-' * 7}", file=out)
    for o in found:
        time_text = f"{o.seconds * 1000:.0f} ms" if o.result != "not encoded" else "-"
        print(f"{o.group:9}  {o.subject:12}  {o.transition[:40]:40}  {(o.profile or '-')[:8]:8}  {o.result:12}  "
              f"{time_text:>7}", file=out)
        if o.result not in ("proved",) and o.detail:
            for line in o.detail.splitlines():
                print(f"{'':11}{line}", file=out)


def _dependencies(out, profile: str = DEFAULT_PROFILE) -> dict:
    from kraftspec.proofs import inductive

    print(f"\nwhich invariants are inductive on their own, and what the others need (profile {profile})", file=out)
    found = inductive.dependencies(profile_name=profile)
    for inv_id, needs in found.items():
        if not needs:
            print(f"  {inv_id:7} inductive on its own", file=out)
        for transition, branch, helpers in needs:
            print(f"  {inv_id:7} needs {' or '.join(helpers) or 'more than one other invariant'} "
                  f"for {transition} ({branch})", file=out)
    return {inv_id: [{"transition": t, "branch": b, "needs one of": h} for t, b, h in needs]
            for inv_id, needs in found.items()}


def _guards(out, failures) -> list[dict]:
    from kraftspec.proofs import guards

    print("\nguard removed         transition                    profile   must break  result", file=out)
    rows: list[dict] = []  # one for each guard removed, as the JSON report has them
    for removal, obligation in guards.run(explain=False):
        caught = guards.killed(obligation)
        print(f"{removal.guard:20}  {removal.transition:28}  {obligation.profile:8}  {removal.breaks:10}  "
              f"{'fails, as it must' if caught else 'STILL ' + obligation.result.upper()}", file=out)
        if not caught:
            failures.append(f"removing {removal.guard} does not break {removal.breaks} in {obligation.profile}")
        rows.append({"guard": removal.guard, "transition": removal.transition, "breaks": removal.breaks,
                     "profile": obligation.profile, "description": removal.description, "result": obligation.result,
                     "caught": caught})
    print(f"{sum(r['caught'] for r in rows)} of {len(rows)} guard removals make their obligation fail", file=out)
    return rows


def _drift(out, count: int, seed: int, failures, profile: str = DEFAULT_PROFILE) -> dict:
    from kraftspec.proofs import drift

    corpus_steps = sum(1 for _ in drift.corpus_samples(profile=profile))
    scripted = sum(1 for _ in drift.scripted_samples(profile))
    bar = Progress(corpus_steps + scripted + count, "drift check")
    report = drift.run(count, seed=seed, progress=lambda n: bar.advance(), profile=profile)
    bar.finish()
    kinds = ", ".join(f"{k.removesuffix('Request')} {n}" for k, n in sorted(report.kinds.items(), key=lambda kv: -kv[1]))
    print(f"\ndrift check: {report.checked} steps ({corpus_steps} from the corpus, {scripted} scripted, "
          f"{count} from random walks, "
          f"seed {seed}, profile {profile}) in {report.seconds:.1f} s: {len(report.mismatches)} mismatches\n"
          f"  by kind: {kinds}", file=out)
    for mismatch in report.mismatches[:10]:
        print(f"  {mismatch}", file=out)
    if report.mismatches:
        failures.append(f"drift check: {len(report.mismatches)} mismatches")
    untaken = report.untaken()
    if untaken:
        print(f"  branches no step took: {', '.join(f'{t} ({b})' for t, b in untaken)}", file=out)
    return {"checked": report.checked, "kinds": report.kinds, "seconds": round(report.seconds, 2),
            "untaken": [f"{t} ({b})" for t, b in untaken],
            "mismatches": [str(m) for m in report.mismatches]}


def _crosshair(out, failures) -> list[dict]:
    from kraftspec.proofs import contracts
    from kraftspec.proofs.obligations import FAILED

    print("\nCrossHair: the contracts must show no counterexample, and each planted twin must show one", file=out)
    real = contracts.check() + contracts.compare()
    planted = contracts.check(planted=True) + contracts.compare(planted=True)
    for kind, found in (("real", real), ("planted", planted)):
        for o in found:
            print(f"  {kind:8}  {o.subject[:60]:60}  {o.result:18}  {o.seconds:5.1f} s", file=out)
    failures += [f"CrossHair: {o.subject}: {o.result}" for o in real if o.result == FAILED]
    failures += [f"CrossHair missed the planted bug in {o.subject}" for o in planted if o.result != FAILED]
    return [{**o.to_json(), "planted": o in planted} for o in real + planted]
