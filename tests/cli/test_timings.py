"""How long a bring-up really took: recorded engine events (tests/cli/recorded/engine-events-phase1.jsonl,
shaped as Pulumi's event log writes them) through the Recorder `blueprint up` gives the Automation
API, into the file in the checkout's `.pulumi-state/`, and into `blueprint verify`'s report."""

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


def test_an_up_records_each_resources_start_and_end(tmp_path: Path) -> None:
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


def _events(stack: str, *steps: tuple[int, str, str, str]) -> timings.Recorder:
    """A Recorder fed (timestamp, event kind, operation, resource name) of custom resources of `stack`."""
    recorder = timings.Recorder(stack)
    for sequence, (when, kind, op, name) in enumerate(steps):
        urn = f"urn:pulumi:{stack}::blueprint::kubernetes:helm.sh/v3:Release::{name}"
        state = {"type": "kubernetes:helm.sh/v3:Release", "urn": urn, "custom": True}
        meta = {"op": op, "urn": urn, "type": state["type"], "provider": "", "old": state, "new": state}
        recorder(EngineEvent.from_json({"sequence": sequence, "timestamp": when, kind: {"metadata": meta}}))
    return recorder


def test_a_replacement_takes_from_its_first_step_to_its_last_with_its_operations() -> None:
    pre, done = "resourcePreEvent", "resOutputsEvent"
    recorder = _events(
        "phase2",
        (100, pre, "create-replacement", "gitlab"), (700, done, "create-replacement", "gitlab"),
        (700, pre, "replace", "gitlab"), (700, done, "replace", "gitlab"),
        (900, pre, "delete-replaced", "gitlab"), (905, done, "delete-replaced", "gitlab"),
    )  # fmt: skip
    (step,) = recorder.record()["steps"]
    assert (step["op"], step["end"] - step["start"], step["status"]) == ("create-replacement+replace+delete-replaced", 805, "done")


def test_an_up_that_changed_nothing_keeps_the_record_of_the_bring_up(tmp_path: Path) -> None:
    """The re-run after `up` stopped (the DNS stop before phase3, a failed phase3) runs phase1 again: all `same`."""
    _recorded(tmp_path)
    nothing = timings.Recorder("phase1")
    nothing(EngineEvent.from_json({"sequence": 0, "timestamp": 1764700000, "preludeEvent": {"config": {}}}))
    nothing(EngineEvent.from_json({"sequence": 1, "timestamp": 1764700004, "summaryEvent": {"maybeCorrupt": False,
            "durationSeconds": 4, "resourceChanges": {"same": 6}, "policyPacks": {}}}))  # fmt: skip
    timings.write(tmp_path, nothing)
    measured = timings.measured(tmp_path, ["phase1"])
    assert measured is not None
    assert measured["phases"] == {"phase1": 132}
    assert measured["slowest_chain"]


def test_an_up_that_made_nothing_writes_no_record_even_a_first(tmp_path: Path) -> None:
    # A locked stack or a missing pulumi: verify must not report a bring-up that never happened.
    timings.write(tmp_path, timings.Recorder("phase1"))
    assert not timings.folder(tmp_path).exists()
    assert timings.measured(tmp_path, ["phase1"]) is None


def test_an_up_that_changed_something_replaces_the_record(tmp_path: Path) -> None:
    _recorded(tmp_path)
    timings.write(tmp_path, _events("phase1", (10, "resourcePreEvent", "update", "x"), (16, "resOutputsEvent", "update", "x")))
    assert timings.measured(tmp_path, ["phase1"])["phases"] == {"phase1": 6}  # type: ignore[index]


def test_a_record_cut_short_while_written_leaves_the_last_one_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _recorded(tmp_path)

    def crash(path: Path, text: str) -> None:
        with path.open("w") as half:
            half.write(text[: len(text) // 2])
        raise OSError("No space left on device")

    monkeypatch.setattr(Path, "write_text", crash)
    with pytest.raises(OSError, match="No space left"):
        timings.write(tmp_path, _events("phase1", (10, "resourcePreEvent", "update", "x"), (16, "resOutputsEvent", "update", "x")))
    monkeypatch.undo()
    assert timings.measured(tmp_path, ["phase1"])["phases"] == {"phase1": 132}  # type: ignore[index]
    assert [path.name for path in (tmp_path / "blueprint-timings").iterdir()] == ["phase1.json"]


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
    monkeypatch.setattr(stack_runner, "LOCAL_STATE_DIR", tmp_path / ".pulumi-state")
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


def test_slowest_chain_of_steps_that_start_and_end_in_the_same_second_ends() -> None:
    # Engine times are whole seconds: A and B each "ended before the other started"; a walk that
    # does not go strictly back in time loops for ever between them.
    steps = [
        {"urn": f"urn:pulumi:s::p::kubernetes:core/v1:ConfigMap::{name}", "type": "ConfigMap", "op": "create", "start": 5, "end": 5}
        for name in ("a", "b")
    ]
    assert len(timings.slowest_chain(steps)) == 1


def test_a_record_goes_where_no_state_folder_exists_yet(tmp_path: Path) -> None:
    _recorded(tmp_path / "not-yet" / ".pulumi-state")
    assert timings.measured(tmp_path / "not-yet" / ".pulumi-state", ["phase1"]) is not None


@pytest.mark.parametrize(
    "text", ["null", "[]", '{"steps": "abc"}', '{"steps": [{"urn": "u", "type": "t", "op": "create", "start": null}]}', "{"]
)
def test_a_timings_file_of_another_shape_is_said_unreadable_and_verify_goes_on(tmp_path: Path, text: str) -> None:
    (tmp_path / "blueprint-timings").mkdir()
    (tmp_path / "blueprint-timings" / "phase1.json").write_text(text)
    _, document = verify(platform_on(FakeMachine(tools={}, outputs={})), state_dir=tmp_path)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["bring_up"]["phases"] == {}
    assert "phase1.json: unreadable" in document["bring_up"]["unreadable"][0]
