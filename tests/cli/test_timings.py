"""How long a bring-up really took: recorded engine events (tests/cli/recorded/engine-events-phase1.jsonl,
shaped as Pulumi's event log writes them) through the Recorder `blueprint up` gives the Automation
API, into the file beside the state, and into `blueprint verify`'s report."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from pulumi.automation import EngineEvent

from cli import timings
from cli.verify import verify
from cli.verify.report import SCHEMA
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.verify.platforms import platform_on

EVENTS = Path(__file__).parent / "recorded" / "engine-events-phase1.jsonl"


def _recorded(state: Path) -> None:
    recorder = timings.Recorder("phase1")
    for line in EVENTS.read_text().splitlines():
        recorder(EngineEvent.from_json(json.loads(line)))
    timings.write(state, recorder)


def test_an_up_records_each_resources_start_and_end_beside_the_state(tmp_path: Path) -> None:
    _recorded(tmp_path)
    record = json.loads((tmp_path / "blueprint-timings" / "phase1.json").read_text())
    cluster = next(step for step in record["steps"] if step["urn"].endswith("::blueprint-cluster"))
    assert (cluster["end"] - cluster["start"], cluster["op"], cluster["status"]) == (95, "create", "done")
    assert record["total_seconds"] == 132


def test_the_record_holds_no_input_or_output_and_no_step_that_did_nothing(tmp_path: Path) -> None:
    _recorded(tmp_path)
    text = (tmp_path / "blueprint-timings" / "phase1.json").read_text()
    assert "never-recorded" not in text
    assert "pulumi:providers:kubernetes" not in text  # a `same` step
    assert "pulumi:pulumi:Stack" not in text  # it only waits for the others


def test_the_slowest_chain_is_the_one_that_ran(tmp_path: Path) -> None:
    _recorded(tmp_path)
    measured = timings.measured(tmp_path, ["phase1", "phase2"])
    assert measured is not None
    assert [(link["name"], link["seconds"]) for link in measured["slowest_chain"]] == [
        ("data-folder", 2), ("blueprint-cluster", 95), ("gateway-crds", 33),
    ]  # fmt: skip
    assert measured["phases"] == {"phase1": 132}
    assert [step["name"] for step in measured["slowest_steps"][:2]] == ["blueprint-cluster", "gateway-crds"]


def test_verify_reports_the_last_bring_ups_durations(tmp_path: Path) -> None:
    _recorded(tmp_path)
    when = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
    _, document = verify(platform_on(FakeMachine(tools={}, outputs={})), when=when, state_dir=tmp_path)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["bring_up"]["slowest_steps"][0] == {
        "stack": "phase1", "name": "blueprint-cluster", "type": "command:local:Command", "op": "create", "seconds": 95,
    }  # fmt: skip


def test_verify_without_a_recorded_up_reports_no_durations(tmp_path: Path) -> None:
    _, document = verify(platform_on(FakeMachine(tools={}, outputs={})), state_dir=tmp_path)
    assert "bring_up" not in document


def test_the_real_runners_up_hands_the_engines_events_to_the_recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import stack_runner

    class Stack:
        def up(self, **options: Any) -> None:
            for line in EVENTS.read_text().splitlines():
                options["on_event"](EngineEvent.from_json(json.loads(line)))

    (tmp_path / ".pulumi-state").mkdir()
    monkeypatch.setattr(stack_runner, "PROJECT_DIR", tmp_path)
    monkeypatch.setattr(stack_runner.AutomationRunner, "_stack", lambda self, name: Stack())
    stack_runner.AutomationRunner().up("phase1", lambda line: None)
    assert timings.measured(tmp_path / ".pulumi-state", ["phase1"]) is not None


def test_the_table_gives_each_phases_total_and_the_slowest_steps(tmp_path: Path) -> None:
    from cli.verify.report import to_table

    _recorded(tmp_path)
    _, document = verify(platform_on(FakeMachine(tools={}, outputs={})), state_dir=tmp_path)
    assert "last bring-up: phase1 132 s; slowest steps: blueprint-cluster 95 s, gateway-crds 33 s, mirror-docker-io 4 s" in to_table(
        document
    )
