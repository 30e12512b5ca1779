"""The program (stacks/program.py): a phase stack reads its upstream's outputs only when this
release brought the upstream up, and the stacks' names cost the CLI nothing to import."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pulumi
import pytest

import versions
from cli import plan as plan_module
from cli.plan import ProgramFailed, plan
from stacks import outputs
from stacks.config import PROJECT_DIR


def upstream_recorded(monkeypatch: pytest.MonkeyPatch, release: str | None, lacking: tuple[str, ...] = ()) -> None:
    """phase1's outputs, as phase2's reference reads them, say `release` brought it up (None: no release),
    and hold none of the outputs `lacking` (ones that release did not export yet)."""
    resolve = plan_module._StandInMocks._reference

    def reference(self: Any, name: str) -> dict[str, Any]:
        resolved = resolve(self, name)
        # phase1's planned outputs (its reference to itself, when it is planned first, reads none)
        if name.endswith("/phase1") and outputs.BLUEPRINT_VERSION in resolved["outputs"]:
            del resolved["outputs"][outputs.BLUEPRINT_VERSION]
            if release is not None:
                resolved["outputs"][outputs.BLUEPRINT_VERSION] = release
            for key in lacking:
                del resolved["outputs"][key]
        return resolved

    monkeypatch.setattr(plan_module._StandInMocks, "_reference", reference)


def refused(stack: str, **options: Any) -> str:
    with pytest.raises(ProgramFailed) as failed:
        plan(stack, **options)
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert [r["type"] for r in failed.value.registered if r["custom"]] == ["pulumi:pulumi:StackReference"], "a read, nothing else"
    return str(failed.value.cause)


def test_a_stack_over_an_upstream_a_newer_release_brought_up_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream_recorded(monkeypatch, "9.0.0")
    assert refused("phase2") == (
        f"stack phase2 reads the outputs of stack phase1: stack phase1's blueprintVersion records blueprint 9.0.0, newer "
        f"than this checkout ({versions.BLUEPRINT}), which cannot know what 9.0.0 changed in its state and data; nothing "
        "was changed. Update this checkout (`git pull`), or run blueprint 9.0.0's checkout"
    )


def test_a_stack_over_an_upstream_an_older_release_brought_up_is_told_to_bring_it_up_first(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream_recorded(monkeypatch, "0.0.9")
    assert refused("phase2") == (
        f"stack phase2 reads the outputs of stack phase1, which blueprint 0.0.9 brought up, not this checkout "
        f"({versions.BLUEPRINT}): bring phase1 up with this release first (`uv run blueprint up`)"
    )


def test_a_stack_over_an_upstream_that_records_no_release_is_told_to_bring_it_up_first(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream_recorded(monkeypatch, None)
    assert refused("phase2").endswith(
        "which a blueprint that recorded no release brought up, not this checkout "
        f"({versions.BLUEPRINT}): bring phase1 up with this release first (`uv run blueprint up`)"
    )


def test_a_stack_over_an_upstream_whose_release_is_no_version_is_refused_in_a_bounded_message(monkeypatch: pytest.MonkeyPatch) -> None:
    upstream_recorded(monkeypatch, "\x1b[2J" + "9" * 5000)
    said = refused("phase2")
    assert "stack phase1's blueprintVersion records" in said
    assert "\x1b" not in said
    assert len(said) < 600


def test_a_preview_over_an_upstream_an_older_release_brought_up_warns_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """`blueprint preview` after a `git pull`: phase1 is still the older release's until the `up`."""
    upstream_recorded(monkeypatch, "0.0.9")
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    plan("phase2", preview=True)
    assert "stack phase2 reads the outputs of stack phase1, which blueprint 0.0.9 brought up" in warned[0]
    assert warned[0].endswith("; this preview reads phase1's outputs as they are")


def test_a_preview_over_an_older_upstream_that_lacks_an_output_this_release_reads_names_the_release_not_a_stack_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """phase1 is up, brought up by a release that did not export yet what this one reads: the fix is
    to bring it up with this release, not to bring up a stack that is up."""
    upstream_recorded(monkeypatch, "0.0.9", lacking=(outputs.OPENBAO_PORT,))
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: None)
    assert refused("phase2", preview=True) == (
        f"stack phase2 reads the outputs of stack phase1, which blueprint 0.0.9 brought up, not this checkout "
        f"({versions.BLUEPRINT}): bring phase1 up with this release first (`uv run blueprint up`)"
    )


def test_the_upstreams_release_is_no_input_of_the_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    import stacks.phase2

    given: list[set[str]] = []
    deploy = stacks.phase2.deploy

    def recorded(inputs: dict[str, Any]) -> dict[str, Any]:
        given.append(set(inputs))
        return deploy(inputs)

    monkeypatch.setattr(stacks.phase2, "deploy", recorded)
    plan("phase2")
    assert given == [set(outputs.PHASE1)]


def test_the_stacks_names_import_nothing_heavy_so_the_clis_help_stays_fast() -> None:
    probe = "import sys, cli.main; print(sorted(name for name in ('pulumi', 'yaml', 'requests') if name in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
