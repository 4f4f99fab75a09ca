"""houmao's own lifecycle monitor behind gauntlet's adapter protocol (docs/adapters.md).

Run with the interpreter scripts/install-houmao sets up (PyPI `houmao` 2.1.0):

    .implementations/houmao/venv/bin/python harness/implementations/houmao/adapter.py

Nothing of the monitor is reimplemented here: every record comes out of houmao's pipelines.

- layer `monitor`: `build_readiness_pipeline` and `build_completion_pipeline` of
  `houmao/agents/realm_controller/backends/cao_rx_monitor.py`, the pipelines `cao_rest.py`
  (`_wait_for_shadow_ready_status`, `_wait_for_shadow_completion`) subscribes to;
- layer `kernel`: `build_readiness_pipeline` and `build_anchored_completion_pipeline` of
  `houmao/lifecycle/rx_lifecycle_kernel.py`, fed through cao_rx_monitor's own
  `_to_lifecycle_observation`, so each snapshot is the one the monitor layer folds.

Virtual time. houmao's pipelines read no clock: their timers run on the reactivex scheduler
they are given, and each observation carries its `monotonic_ts`. `cao_rest.py` passes a
`HistoricalScheduler` and advances it to `time.monotonic()` before each poll and again before it
pushes the observation stamped with that time. This adapter does the same with the step's
`at_ms` in place of `time.monotonic()` (no monkeypatching): `advance_to(at_ms)` fires every
timer due at or before it, in due order, then the observation goes in with
`monotonic_ts = at_ms / 1000`. A record's `at_ms` is the scheduler's clock when the pipeline
emitted it (a timer's due time, or the step's time).

What the adapter supplies as houmao's callers do:

- observations are built from the step's classification the way houmao's unit tests build
  them (`SurfaceAssessment`, `DialogProjection`, `CaoTerminalOutputResponse`): the parser is
  not run, the scenario is its output;
- `completion_observer = {sentinel}` is the caller-supplied observer callable: the raw output
  containing the sentinel yields `{"mail_result_surfaces": [raw output]}`, as in houmao's
  `test_completion_pipeline_mailbox_observer_bypasses_stability_window`;
- `stalled_is_terminal` is cao_rest's policy, not the pipeline's: cao_rest raises at the first
  stalled result and disposes the subscription, so nothing after it is recorded.

Bad input is reported on stderr with exit status 2.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

from reactivex import operators as ops
from reactivex.scheduler import HistoricalScheduler
from reactivex.subject import Subject

from houmao import lifecycle
from houmao.agents.realm_controller.backends import cao_rx_monitor
from houmao.agents.realm_controller.backends.shadow_parser_core import (
    DialogProjection,
    ParsedShadowSnapshot,
    ProjectionMetadata,
    ShadowParserMetadata,
    SurfaceAssessment,
)
from houmao.cao.models import CaoTerminalOutputResponse

KINDS = {"monitor.readiness": "readiness", "monitor.completion": "completion"}
CONFIG_FIELDS = {
    "layer",
    "stall_timeout_ms",
    "stability_ms",
    "stalled_is_terminal",
    "baseline",
    "parser_family",
    "completion_observer",
}
OBSERVE_FIELDS = {
    "availability",
    "business_state",
    "input_mode",
    "ui_context",
    "projection_text",
    "baseline_invalidated",
    "raw_output",
}


class BadInput(Exception):
    """A line the protocol does not allow."""


def parser_metadata(baseline_invalidated: bool) -> ShadowParserMetadata:
    """The parser metadata of a codex shadow snapshot; only `baseline_invalidated` is read."""

    return ShadowParserMetadata(
        provider_id="codex",
        parser_preset_id="codex_shadow_v1",
        parser_preset_version="0.1.0",
        output_format="codex_shadow_v1",
        output_variant="codex_label_v1",
        output_format_match=True,
        baseline_invalidated=baseline_invalidated,
    )


def projection(text: str, baseline_invalidated: bool = False) -> DialogProjection:
    """A dialog projection whose normalized text is the scenario's projection text."""

    metadata = parser_metadata(baseline_invalidated)
    n_lines = len(text.splitlines())
    return DialogProjection(
        raw_text=text,
        normalized_text=text,
        dialog_text=text,
        head=text,
        tail=text,
        projection_metadata=ProjectionMetadata(
            provider_id="codex",
            source_kind="tui_snapshot",
            projector_id="gauntlet_adapter",
            parser_metadata=metadata,
            dialog_line_count=n_lines,
            head_line_count=n_lines,
            tail_line_count=n_lines,
        ),
    )


def observation(observe: dict[str, Any], at_ms: int, config: dict[str, Any]) -> cao_rx_monitor.ShadowObservation:
    """One step's observation as the ShadowObservation cao_rest would push after parsing."""

    unknown = set(observe) - OBSERVE_FIELDS
    if unknown:
        raise BadInput(f"unknown observation fields {sorted(unknown)}")
    for field in ("business_state", "input_mode"):
        if not isinstance(observe.get(field), str):
            raise BadInput(f"an observation needs `{field}` (a string)")
    text = observe.get("projection_text")
    if text is None:
        text = config["baseline"]
    raw = observe.get("raw_output")
    if raw is None:
        raw = text
    invalidated = bool(observe.get("baseline_invalidated", False))
    dialog = projection(text, invalidated)
    surface = SurfaceAssessment(
        availability=observe.get("availability", "supported"),
        business_state=observe["business_state"],
        input_mode=observe["input_mode"],
        ui_context=observe.get("ui_context", "normal_prompt"),
        parser_metadata=parser_metadata(invalidated),
    )
    return cao_rx_monitor.ShadowObservation(
        output=CaoTerminalOutputResponse(output=raw, mode="full"),
        snapshot=ParsedShadowSnapshot(surface_assessment=surface, dialog_projection=dialog),
        projection=dialog,
        monotonic_ts=at_ms / 1000,
        parser_family=config["parser_family"],
    )


def sentinel_observer(sentinel: str):
    """The caller-supplied completion observer: a definitive answer when the sentinel shows."""

    def observe(raw_output_text: str, snapshot: object, baseline: object) -> dict[str, object] | None:
        del snapshot, baseline
        if sentinel not in raw_output_text:
            return None
        return {"mail_result_surfaces": [raw_output_text]}

    return observe


def ms(seconds: float) -> int:
    """houmao's seconds (floats from millisecond inputs) back to whole milliseconds."""

    return round(seconds * 1000)


def result_record(result: Any) -> dict[str, Any]:
    """A cao_rx_monitor result as a monitor record (without `step` and `at_ms`)."""

    record: dict[str, Any] = {
        "status": result.kind,
        "observed_at_ms": ms(result.observation.monotonic_ts),
        "anomalies": [
            {"code": anomaly.code, "message": anomaly.message, "details": dict(anomaly.details)}
            for anomaly in result.anomalies
        ],
    }
    if result.kind == "stalled":
        record["elapsed_unknown_ms"] = ms(result.elapsed_unknown_seconds)
        if result.elapsed_stalled_seconds is not None:
            record["elapsed_stalled_ms"] = ms(result.elapsed_stalled_seconds)
    if result.kind == "completed" and result.completion_payload is not None:
        record["completion_payload"] = result.completion_payload
    return record


def snapshot_record(snapshot: Any) -> dict[str, Any]:
    """A lifecycle kernel snapshot as a kernel record (without `step` and `at_ms`)."""

    record: dict[str, Any] = {
        "status": snapshot.status,
        "observed_at_ms": ms(snapshot.observation.monotonic_ts),
        "entered_stalled": snapshot.entered_stalled,
        "recovered_from_stalled": snapshot.recovered_from_stalled,
    }
    optional = {
        "unknown_elapsed_ms": snapshot.unknown_elapsed_seconds,
        "elapsed_stalled_ms": snapshot.elapsed_stalled_seconds,
        "candidate_elapsed_ms": getattr(snapshot, "candidate_elapsed_seconds", None),
    }
    for key, seconds in optional.items():
        if seconds is not None:
            record[key] = ms(seconds)
    if snapshot.recovered_to is not None:
        record["recovered_to"] = snapshot.recovered_to
    if isinstance(snapshot, lifecycle.AnchoredCompletionSnapshot):
        record["saw_working"] = snapshot.saw_working
        record["saw_projection_change"] = snapshot.saw_projection_change
    return record


def read_config(header: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The phase and the settings, with gauntlet's defaults for anything absent."""

    kind = header.get("kind")
    if kind not in KINDS:
        raise BadInput(f"kind {kind!r}: this adapter runs houmao's monitor (monitor.readiness, monitor.completion)")
    given = header.get("config") or {}
    if not isinstance(given, dict):
        raise BadInput("`config` must be an object")
    unknown = set(given) - CONFIG_FIELDS
    if unknown:
        raise BadInput(f"unknown config fields {sorted(unknown)}")
    config = {
        "layer": "monitor",
        "stall_timeout_ms": 30_000,
        "stability_ms": 1_000,
        "stalled_is_terminal": False,
        "baseline": "",
        "parser_family": "codex_shadow",
        "completion_observer": None,
        **given,
    }
    if config["layer"] not in ("monitor", "kernel"):
        raise BadInput(f"layer {config['layer']!r}: expected monitor or kernel")
    for field in ("stall_timeout_ms", "stability_ms"):
        if not isinstance(config[field], int) or config[field] <= 0:
            raise BadInput(f"`{field}` must be a positive integer")
    return KINDS[kind], config


class Run:
    """One scenario: houmao's pipeline on a HistoricalScheduler, and the records it emitted."""

    def __init__(self, phase: str, config: dict[str, Any]) -> None:
        self.config = config
        self.scheduler = HistoricalScheduler()
        self.epoch = self.scheduler.now
        self.subject: Subject[cao_rx_monitor.ShadowObservation] = Subject()
        self.step = 0
        self.pending: list[dict[str, Any]] = []
        self.error: Exception | None = None
        self.finished = False
        kernel = config["layer"] == "kernel"
        stall = config["stall_timeout_ms"] / 1000
        if kernel:
            source = self.subject.pipe(ops.map(cao_rx_monitor._to_lifecycle_observation))
            if phase == "readiness":
                pipeline = lifecycle.build_readiness_pipeline(
                    source, stall_timeout_seconds=stall, scheduler=self.scheduler
                )
            else:
                pipeline = lifecycle.build_anchored_completion_pipeline(
                    source,
                    baseline_projection_text=config["baseline"],
                    stability_seconds=config["stability_ms"] / 1000,
                    stall_timeout_seconds=stall,
                    scheduler=self.scheduler,
                )
        elif phase == "readiness":
            pipeline = cao_rx_monitor.build_readiness_pipeline(
                self.subject, stall_timeout_seconds=stall, scheduler=self.scheduler
            )
        else:
            observer = config["completion_observer"]
            pipeline = cao_rx_monitor.build_completion_pipeline(
                self.subject,
                stability_seconds=config["stability_ms"] / 1000,
                stall_timeout_seconds=stall,
                baseline_projection=projection(config["baseline"]),
                completion_observer=sentinel_observer(observer["sentinel"]) if observer else None,
                scheduler=self.scheduler,
            )
        to_record = snapshot_record if kernel else result_record
        self.subscription = pipeline.subscribe(
            on_next=lambda item: self.capture(to_record(item)),
            on_error=self.fail,
        )

    def now_ms(self) -> int:
        return round((self.scheduler.now - self.epoch) / timedelta(milliseconds=1))

    def capture(self, record: dict[str, Any]) -> None:
        if self.finished:
            return
        self.pending.append({"step": self.step, "at_ms": self.now_ms(), **record})
        terminal = self.config["stalled_is_terminal"] and self.config["layer"] == "monitor"
        if terminal and record["status"] == "stalled":
            self.finished = True

    def fail(self, error: Exception) -> None:
        self.error = error

    def apply(self, step: int, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """One step: timers due at or before `at_ms` fire, then the observation goes in."""

        at_ms = entry.get("at_ms")
        if not isinstance(at_ms, int) or at_ms < 0:
            raise BadInput(f"step {step}: `at_ms` must be a non-negative integer")
        if at_ms < self.now_ms():
            raise BadInput(f"step {step}: at_ms {at_ms} is before {self.now_ms()}")
        self.step = step
        if not self.finished:
            self.scheduler.advance_to(self.epoch + timedelta(milliseconds=at_ms))
            observe = entry.get("observe")
            if observe is not None:
                if not isinstance(observe, dict):
                    raise BadInput(f"step {step}: `observe` must be an object")
                self.subject.on_next(observation(observe, at_ms, self.config))
        if self.finished:
            self.subscription.dispose()
        if self.error is not None:
            raise self.error
        records, self.pending = self.pending, []
        return records


def run(lines: list[str]) -> list[dict[str, Any]]:
    """Every record of one scenario given as its protocol lines (used by the differential)."""

    records: list[dict[str, Any]] = []
    serve(iter(lines), records.append)
    return records


def serve(lines, emit) -> None:
    """Reads the header, then answers each step line with its records."""

    entries = (json.loads(line) for line in lines if line.strip())
    header = next(entries, None)
    if not isinstance(header, dict):
        raise BadInput("the first line must be the header object")
    phase, config = read_config(header)
    monitor = Run(phase, config)
    for step, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise BadInput(f"step {step}: not a JSON object")
        for record in monitor.apply(step, entry):
            emit(record)


def main() -> int:
    def emit(record: dict[str, Any]) -> None:
        print(json.dumps(record, sort_keys=True), flush=True)

    try:
        serve(sys.stdin, emit)
    except (BadInput, json.JSONDecodeError) as error:
        print(f"houmao adapter: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
