"""Generated-stream differential: the reference monitor against houmao's, record by record.

Run through scripts/monitor-differential (which installs houmao and builds the reference):

    scripts/monitor-differential [--streams N] [--seed S] [--show K] [--save DIR]

Each stream is a seeded monitor scenario in adapter-protocol lines (docs/adapters.md): a
header (readiness or completion, kernel or monitor layer, random timers, baseline, observer,
`stalled_is_terminal`) and up to 14 timed steps of random observations and bare clock advances,
with steps landing exactly on timer due times often. The same lines go to the reference
(`target/debug/gauntlet-lifecycle`, one process per stream) and to houmao (adapter.py, in this
process); the records are compared after dropping anomaly `message`s, whose wording differs by
design. The first differing record of each differing stream is reported, and each difference
is sorted into the smallest set of known divergences whose diagnosis makes houmao agree with
the reference on that stream (the comparison itself runs houmao unchanged):

- `blank-frozen-key`: one expression of `_reduce_anchored_completion_accumulator`
  (houmao/lifecycle/rx_lifecycle_kernel.py) reads `None`, not any falsy key, as "not frozen"
  (docs/contract.md decides it);
- `line-breaks`: `normalize_projection_text` splits lines at `\n` only, as the reference does,
  not at every `str.splitlines` boundary (`\r`, `\x0b`, `\x0c`, `\x1c`-`\x1e`, `\x85`,
  `\u2028`, `\u2029`);

and `other` when none does. Exit status 0 when every difference is of a known class, 1 when
some is `other`, 2 on an error.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import random
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import adapter  # noqa: E402  (houmao's monitor behind the protocol)
from houmao.agents.realm_controller.backends import cao_rx_monitor  # noqa: E402
from houmao.lifecycle import rx_lifecycle_kernel as kernel  # noqa: E402

AVAILABILITY = ["supported"] * 8 + ["unknown", "unknown", "unsupported", "disconnected"]
BUSINESS = ["idle", "idle", "working", "working", "awaiting_operator", "unknown", "unknown"]
INPUT = ["freeform", "freeform", "modal", "closed", "unknown"]
UI = ["normal_prompt", "normal_prompt", "slash_command", "trust_prompt", "unknown"]
BASELINES = ["", "baseline", "baseline\nprompt", "  baseline  "]
TEXTS = [
    None,
    None,
    "",
    "   \n  ",
    "baseline",
    "baseline   ",
    "\nbaseline\n",
    "baseline\nprompt",
    "baseline\nan answer",
    "baseline\nan answer\nmore",
    "an answer",
    "an answer \r\nmore",
    "baseline\rprompt",
    "an answer\x0bmore ",
]
SENTINEL = "MAIL_RESULT_BEGIN"
# houmao runs one stream at a time (the diagnosis swaps a module function); the reference's
# processes overlap with it.
HOUMAO = threading.Lock()
RAW = [None, None, None, "drafting", f"{SENTINEL}\n{{}}\nMAIL_RESULT_END", ""]


def stream(rng: random.Random) -> list[str]:
    """One random scenario as protocol lines."""

    kind = rng.choice(["monitor.readiness", "monitor.completion"])
    config: dict[str, Any] = {
        "layer": rng.choice(["monitor", "kernel"]),
        "stall_timeout_ms": rng.choice([10, 20, 50, 100, 1000]),
        "stability_ms": rng.choice([10, 30, 60, 100, 1000]),
        "stalled_is_terminal": rng.random() < 0.3,
        "baseline": rng.choice(BASELINES),
        "parser_family": "codex_shadow",
        "completion_observer": {"sentinel": SENTINEL} if rng.random() < 0.3 else None,
    }
    lines = [json.dumps({"kind": kind, "config": config})]
    at_ms = 0
    timers = [config["stall_timeout_ms"], config["stability_ms"]]
    for idx in range(rng.randint(1, 14)):
        if idx:
            at_ms += rng.choice([0, 1, 5, 10, 20, 30, 50, 100, 500, *timers, *timers])
        step: dict[str, Any] = {"at_ms": at_ms}
        if rng.random() < 0.8:
            observe: dict[str, Any] = {
                "availability": rng.choice(AVAILABILITY),
                "business_state": rng.choice(BUSINESS),
                "input_mode": rng.choice(INPUT),
                "ui_context": rng.choice(UI),
                "baseline_invalidated": rng.random() < 0.12,
            }
            text = rng.choice(TEXTS)
            if text is not None:
                observe["projection_text"] = text
            raw = rng.choice(RAW)
            if raw is not None:
                observe["raw_output"] = raw
            step["observe"] = observe
        lines.append(json.dumps(step))
    return lines


def reference(binary: Path, lines: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"gauntlet-lifecycle exited {done.returncode}: {done.stderr.strip()}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def without_messages(record: dict[str, Any]) -> dict[str, Any]:
    anomalies = record.get("anomalies")
    if anomalies is None:
        return record
    kept = [{key: value for key, value in anomaly.items() if key != "message"} for anomaly in anomalies]
    return {**record, "anomalies": kept}


TRUTHINESS = "effective_projection_key = frozen_projection_key or projection_key"
EXPLICIT = "effective_projection_key = projection_key if frozen_projection_key is None else frozen_projection_key"


def blank_key_fixed() -> Any:
    """houmao's accumulator with that one expression made explicit (`None`, not falsy, means
    unfrozen), compiled from its own source in its own module's globals."""

    source = textwrap.dedent(inspect.getsource(kernel._reduce_anchored_completion_accumulator))
    if source.count(TRUTHINESS) != 1:
        raise RuntimeError("houmao's accumulator no longer reads `frozen_projection_key or projection_key`")
    namespace: dict[str, Any] = {}
    exec(compile(source.replace(TRUTHINESS, EXPLICIT), kernel.__file__, "exec"), vars(kernel), namespace)
    return namespace["_reduce_anchored_completion_accumulator"]


def newline_lines(text: str) -> str:
    """houmao's `normalize_projection_text` with lines split at `\n` only (`\r\n` included, since
    `rstrip` drops the `\r`), as Rust's `str::lines` splits them, instead of `str.splitlines`."""

    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


# Each known divergence as the houmao functions that, replaced, remove it (a diagnosis only).
DIAGNOSES = {
    "blank-frozen-key": [(kernel, "_reduce_anchored_completion_accumulator", blank_key_fixed)],
    "line-breaks": [
        (kernel, "normalize_projection_text", lambda: newline_lines),
        (cao_rx_monitor, "normalize_projection_text", lambda: newline_lines),
    ],
}


def houmao_with(names: list[str], lines: list[str]) -> list[dict[str, Any]]:
    """houmao's records for a stream with the diagnoses `names` applied, then undone."""

    patches = [patch for name in names for patch in DIAGNOSES[name]]
    originals = [(module, attr, getattr(module, attr)) for module, attr, _ in patches]
    try:
        for module, attr, make in patches:
            setattr(module, attr, make())
        return [without_messages(record) for record in adapter.run(lines)]
    finally:
        for module, attr, original in originals:
            setattr(module, attr, original)


def divergence_class(lines: list[str], reference_records: list[dict[str, Any]]) -> str:
    """The smallest set of known divergences whose diagnoses make houmao agree, or `other`."""

    for size in range(1, len(DIAGNOSES) + 1):
        for names in itertools.combinations(sorted(DIAGNOSES), size):
            if houmao_with(list(names), lines) == reference_records:
                return "+".join(names)
    return "other"


def compare(binary: Path, seed: int) -> dict[str, Any]:
    lines = stream(random.Random(seed))
    ours = [without_messages(record) for record in reference(binary, lines)]
    with HOUMAO:
        theirs = [without_messages(record) for record in adapter.run(lines)]
        kind = None if ours == theirs else divergence_class(lines, ours)
    outcome: dict[str, Any] = {"seed": seed, "records": len(ours), "lines": lines}
    if kind is None:
        return outcome
    first = next(
        (idx for idx, (a, b) in enumerate(zip(ours, theirs)) if a != b),
        min(len(ours), len(theirs)),
    )
    outcome.update(
        index=first,
        reference=ours[first] if first < len(ours) else None,
        houmao=theirs[first] if first < len(theirs) else None,
        kind=kind,
    )
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=2000, help="how many streams (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="the first stream's seed (default 0)")
    parser.add_argument("--show", type=int, default=3, help="differing streams to print in full per class")
    parser.add_argument("--save", type=Path, help="write each differing stream's lines to DIR/<seed>.jsonl")
    parser.add_argument("--reference", type=Path, default=Path("target/debug/gauntlet-lifecycle"))
    args = parser.parse_args()
    if not args.reference.is_file():
        print(f"monitor-differential: no reference at {args.reference} (cargo build -p gauntlet)", file=sys.stderr)
        return 2
    seeds = range(args.seed, args.seed + args.streams)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda seed: compare(args.reference, seed), seeds))
    differing = [outcome for outcome in outcomes if "index" in outcome]
    classes = Counter(outcome["kind"] for outcome in differing)
    shown: Counter[str] = Counter()
    for outcome in differing:
        if shown[outcome["kind"]] >= args.show:
            continue
        shown[outcome["kind"]] += 1
        print(f"seed {outcome['seed']} ({outcome['kind']}): first difference at record {outcome['index']}")
        for line in outcome["lines"]:
            print(f"  in        {line}")
        print(f"  reference {json.dumps(outcome['reference'], sort_keys=True)}")
        print(f"  houmao    {json.dumps(outcome['houmao'], sort_keys=True)}")
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        for outcome in differing:
            (args.save / f"{outcome['seed']}.jsonl").write_text("\n".join(outcome["lines"]) + "\n")
    n_records = sum(outcome["records"] for outcome in outcomes)
    summary = ", ".join(f"{kind} {count}" for kind, count in sorted(classes.items())) or "none"
    print(
        f"{len(outcomes)} streams (seeds {args.seed}..{args.seed + args.streams - 1}), "
        f"{n_records} reference records: {len(outcomes) - len(differing)} agree, "
        f"{len(differing)} differ (by class: {summary})"
    )
    return 1 if classes["other"] else 0


if __name__ == "__main__":
    sys.exit(main())
