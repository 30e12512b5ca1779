"""The image cache as the commands see it (`cli/image_cache.py`): its size, its mirrors in
`blueprint status`, and its removal, with Docker faked."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from cli import image_cache
from components.image_cache import CACHE_MARKER, mirrors
from stacks import outputs

REAL_RMTREE = shutil.rmtree


def a_cache(tmp_path: Path) -> Path:
    folder = tmp_path / "images"
    (folder / "quay.io" / "storage" / "docker" / "registry").mkdir(parents=True)
    (folder / "quay.io" / "storage" / "docker" / "registry" / "data").write_bytes(b"x" * 2_000_000)
    (folder / CACHE_MARKER).write_text("blueprint's image cache\n")
    return folder


def no_docker(argv: Sequence[str]) -> tuple[int, str]:
    raise AssertionError(f"Docker was not to be asked: {argv}")


def test_files_the_user_cannot_remove_go_through_a_one_shot_container_of_an_image_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = a_cache(tmp_path)
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda path, ignore_errors=False: None)  # as EACCES would leave them
    ran: list[list[str]] = []

    def docker(argv: Sequence[str]) -> tuple[int, str]:
        ran.append(list(argv))
        for path in folder.iterdir():
            if path.name != CACHE_MARKER:
                REAL_RMTREE(path)
        return 0, ""

    wiped = image_cache.wipe(folder, docker, "kindest/node:v1")
    assert wiped.ok, wiped.said
    assert not folder.exists()
    assert ran[0][:2] == ["docker", "run"]
    assert ran[0][ran[0].index("--pull") + 1] == "never"
    assert ran[0][ran[0].index("--user") + 1] == "0"
    assert "kindest/node:v1" in ran[0]
    assert f"/blueprint-cache/{CACHE_MARKER}" in ran[0], "the marker goes last, so a wipe cut short can be run again"


def test_a_wipe_that_cannot_remove_everything_keeps_the_marker_and_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "it's cached"
    folder.mkdir()
    (folder / CACHE_MARKER).write_text("\n")
    (folder / "ghcr.io").mkdir()
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda path, ignore_errors=False: None)
    wiped = image_cache.wipe(folder, lambda argv: (125, "Unable to find image locally"), "kindest/node:v1")
    assert not wiped.ok
    assert wiped.said.endswith(f"remove it by hand: sudo rm -rf '{tmp_path}/it'\"'\"'s cached'")
    assert (folder / CACHE_MARKER).exists()


def test_the_wipe_says_how_much_it_freed(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    wiped = image_cache.wipe(folder, no_docker, "unused")
    assert wiped.ok
    assert wiped.said == f"removed the image cache {folder}, freeing 2 MiB"


def test_the_size_on_disk_counts_each_file_once_and_follows_no_link(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    data = folder / "quay.io" / "storage" / "docker" / "registry" / "data"
    once, complete = image_cache.size_on_disk(folder)
    (folder / "hard").hardlink_to(data)
    (folder / "soft").symlink_to(tmp_path)
    assert complete
    assert image_cache.size_on_disk(folder)[0] - once < 10_000  # the links' own entries only
    assert once >= 2_000_000


PHASE1 = {outputs.IMAGE_MIRRORS: {"docker.io": "blueprint-mirror-docker-io:5000", "quay.io": "blueprint-mirror-quay-io:5000"}}


def test_status_shows_the_cache_folder_its_size_and_each_mirror_up_or_down(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    listing = "blueprint-mirror-docker-io\tUp 3 hours\nblueprint-mirror-quay-io\tExited (2) 5 minutes ago\nkind-control-plane\tUp 3 hours\n"
    lines = image_cache.status_lines(
        {**PHASE1, outputs.IMAGE_CACHE_DIR: str(folder)}, lambda: {}, lambda argv: (0, listing), lambda path: (3 << 30, True)
    )
    assert lines == [
        f"image cache: {folder}, 3.0 GiB on disk",
        "  mirror of docker.io (blueprint-mirror-docker-io): up",
        "  mirror of quay.io (blueprint-mirror-quay-io): down (Exited (2) 5 minutes ago)",
    ]


def test_status_says_unknown_for_the_mirrors_when_docker_does_not_answer(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    lines = image_cache.status_lines(
        {**PHASE1, outputs.IMAGE_CACHE_DIR: str(folder)}, lambda: {}, lambda argv: (1, "Cannot connect"), image_cache.size_on_disk
    )
    assert lines[1:] == [
        "  mirror of docker.io (blueprint-mirror-docker-io): unknown (Docker does not answer)",
        "  mirror of quay.io (blueprint-mirror-quay-io): unknown (Docker does not answer)",
    ]


def test_status_with_the_cache_off_says_so() -> None:
    lines = image_cache.status_lines(
        {outputs.IMAGE_CACHE_DIR: ""}, lambda: {"blueprint:imageCache": "false"}, no_docker, lambda p: (0, True)
    )
    assert lines == ["image cache: off (blueprint:imageCache=false)"]


def test_status_with_phase1_down_reads_the_folder_from_its_config_and_asks_docker_nothing(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    lines = image_cache.status_lines(None, lambda: {"blueprint:imageCacheDir": str(folder)}, no_docker, lambda p: (1 << 20, False))
    assert lines == [f"image cache: {folder}, at least 1 MiB on disk", "  mirrors: none (phase1 is not up)"]


def test_status_with_an_unreadable_config_says_unknown_not_a_traceback() -> None:
    def broken() -> dict[str, str]:
        raise OSError("Pulumi.phase1.yaml: permission denied")

    assert image_cache.status_lines(None, broken, no_docker, lambda p: (0, True)) == [
        "image cache: unknown: phase1's config cannot be read (OSError: Pulumi.phase1.yaml: permission denied)"
    ]


def test_the_mirror_names_status_reads_are_the_containers_phase1_starts() -> None:
    from components.image_cache import mirror_container

    assert {registry: endpoint.rsplit(":", 1)[0] for registry, endpoint in mirrors("blueprint").items()} == {
        registry: mirror_container("blueprint", registry) for registry in mirrors("blueprint")
    }
