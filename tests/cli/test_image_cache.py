"""The image cache as the commands see it (`cli/image_cache.py`): its size, its mirrors in
`blueprint status`, and its removal, with Docker faked."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from cli import image_cache
from cli.teardown import World
from components.image_cache import CACHE_MARKER, mirrors
from stacks import outputs
from stacks.config.schema import stack_config
from tests.cli.teardown_fakes import PHASE1_HERE, FakePulumi, all_stacks, run_destroy, world

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
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda *args, **kwargs: None)  # as EACCES would leave them
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
    assert ran[0][ran[0].index("find") + 2 :] == ["/blueprint-cache/quay.io", "-xdev", "-delete"], "the registry's folder alone"


def test_a_wipe_that_cannot_remove_everything_keeps_the_marker_and_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "it's cached"
    folder.mkdir()
    (folder / CACHE_MARKER).write_text("\n")
    (folder / "ghcr.io").mkdir()
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda *args, **kwargs: None)
    wiped = image_cache.wipe(folder, lambda argv: (125, "Unable to find image locally"), "kindest/node:v1")
    assert not wiped.ok
    assert f"remove them by hand: sudo rm -rf '{tmp_path}/it'\"'\"'s cached/ghcr.io'; then" in wiped.said
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
        "  mirror of quay.io (blueprint-mirror-quay-io): down (Exited (2) 5 minutes ago): "
        "`docker start blueprint-mirror-quay-io` starts it",
    ]


def test_status_gives_the_command_that_starts_anew_a_mirror_removed_outside_blueprint(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    lines = image_cache.status_lines(
        {**PHASE1, outputs.IMAGE_CACHE_DIR: str(folder)},
        lambda: {},
        lambda argv: (0, "blueprint-mirror-docker-io\tUp 1 hour\n"),
        image_cache.size_on_disk,
    )
    assert lines[2] == (
        "  mirror of quay.io (blueprint-mirror-quay-io): down (no such container); the nodes pull from quay.io itself until "
        '`eval "$(uv run blueprint env)" && pulumi up -s phase1 --replace '
        "'urn:pulumi:phase1::blueprint::blueprint:index:KindCluster$blueprint:index:ImageCache"
        "$command:local:Command::kind-image-cache-quay-io'` starts it anew"
    )


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
        {outputs.IMAGE_CACHE_DIR: ""},
        lambda: {**stack_config("phase1")[0], "blueprint:imageCache": "false"},
        no_docker,
        lambda p: (0, True),
    )
    assert lines == ["image cache: off (blueprint:imageCache=false)"]


def test_status_with_phase1_down_reads_the_folder_from_its_config_and_asks_docker_nothing(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    config = {**stack_config("phase1")[0], "blueprint:imageCacheDir": str(folder)}
    lines = image_cache.status_lines(None, lambda: config, no_docker, lambda p: (1 << 20, False))
    assert lines == [f"image cache: {folder}, at least 1 MiB on disk", "  mirrors: none (phase1 is not up)"]


def test_status_with_an_unreadable_config_says_unknown_not_a_traceback() -> None:
    def broken() -> dict[str, str]:
        raise OSError("Pulumi.phase1.yaml: permission denied")

    assert image_cache.status_lines(None, broken, no_docker, lambda p: (0, True)) == [
        "image cache: unknown: phase1's config cannot be read (OSError: Pulumi.phase1.yaml: permission denied)"
    ]


def test_the_mirror_names_status_reads_are_the_containers_phase1_starts() -> None:
    from components.image_cache import mirror_container

    phase1 = {outputs.IMAGE_MIRRORS: mirrors("blueprint"), outputs.CLUSTER_NAME: "blueprint"}
    assert image_cache.mirror_containers(phase1) == {registry: mirror_container("blueprint", registry) for registry in mirrors("blueprint")}


def test_the_wipe_removes_only_the_registry_folders(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    (folder / "notes.txt").write_text("mine\n")
    (folder / "photos").mkdir()
    (folder / "photos" / "cat.jpg").write_bytes(b"x")
    (folder / "docker.io" / "storage").mkdir(parents=True)
    (folder / "docker.io" / ".config.a1b2c3").write_text("draft")
    image_cache.wipe(folder, no_docker, "unused")
    # The marker too, unless something else is left (then it stays: the folder is still the cache).
    assert sorted(path.name for path in folder.iterdir()) == [CACHE_MARKER, "notes.txt", "photos"]
    assert (folder / "photos" / "cat.jpg").exists()


def test_the_wipe_leaves_a_folder_that_holds_other_files_and_says_so(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    (folder / "notes.txt").write_text("mine\n")
    wiped = image_cache.wipe(folder, no_docker, "unused")
    assert wiped.ok
    assert wiped.said.endswith(f"left {folder}: it holds other files (notes.txt)")
    assert folder.is_dir()


def test_a_folder_the_wipe_left_for_other_files_stays_the_cache_the_next_up_may_use(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    (folder / ".DS_Store").write_bytes(b"Finder")
    assert image_cache.wipe(folder, no_docker, "unused").ok
    assert (folder / CACHE_MARKER).is_file()  # the up's check refuses a folder with files and no marker


def test_the_wipe_refuses_a_folder_without_the_cache_marker(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    (folder / CACHE_MARKER).unlink()
    wiped = image_cache.wipe(folder, no_docker, "unused")
    assert not wiped.ok
    assert f"it has no {CACHE_MARKER}" in wiped.said
    assert (folder / "quay.io" / "storage").is_dir()


def test_the_wipe_refuses_a_cache_folder_another_user_owns_and_names_the_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = a_cache(tmp_path)
    owner = folder.stat().st_uid
    monkeypatch.setattr("cli.image_cache.os.getuid", lambda: owner + 4242)
    wiped = image_cache.wipe(folder, no_docker, "unused")
    assert not wiped.ok
    assert f"it belongs to {image_cache.user_name(owner)}" in wiped.said
    assert (folder / "quay.io" / "storage").is_dir()


def a_victim(tmp_path: Path) -> Path:
    """Another folder of the user's, with what a cache folder would hold: a link swapped in for the cache leads here."""
    victim = tmp_path / "home"
    (victim / "quay.io").mkdir(parents=True)
    (victim / "quay.io" / "thesis.tex").write_text("years of work\n")
    (victim / CACHE_MARKER).write_text("\n")
    return victim


def swap_for_a_link(folder: Path, victim: Path) -> Path:
    """What another local user does in a shared parent: the cache folder moves away, a link to `victim` takes its name."""
    moved = folder.with_name("moved")
    if not folder.is_symlink():
        folder.rename(moved)
        folder.symlink_to(victim)
    return moved


def test_a_cache_folder_swapped_for_a_link_during_the_wipe_loses_nothing_through_the_link(tmp_path: Path) -> None:
    folder, victim = a_cache(tmp_path), a_victim(tmp_path)

    def measure(path: Path) -> tuple[int, bool]:
        swap_for_a_link(folder, victim)  # after the wipe's checks, before it removes anything
        return 0, True

    image_cache.wipe(folder, no_docker, "unused", measure)
    assert (victim / "quay.io" / "thesis.tex").exists()
    assert (victim / CACHE_MARKER).exists()
    assert not (tmp_path / "moved" / "quay.io").exists(), "what was removed is the cache folder the wipe opened"


def test_the_one_shot_container_mounts_the_folder_the_wipe_opened_not_a_link_swapped_in_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, victim = a_cache(tmp_path), a_victim(tmp_path)
    moved = tmp_path / "moved"
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda *args, **kwargs: swap_for_a_link(folder, victim))
    ran: list[list[str]] = []

    def docker(argv: Sequence[str]) -> tuple[int, str]:
        ran.append(list(argv))
        return 0, ""

    image_cache.wipe(folder, docker, "kindest/node:v1")
    assert ran[0][ran[0].index("--volume") + 1] == f"{moved}:/blueprint-cache"


def test_the_one_shot_container_is_not_run_when_the_folder_path_no_longer_names_the_folder_the_wipe_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, victim = a_cache(tmp_path), a_victim(tmp_path)
    monkeypatch.setattr("cli.image_cache.shutil.rmtree", lambda *args, **kwargs: None)
    monkeypatch.setattr("cli.image_cache._resolved_path", lambda fd, path: str(victim))
    wiped = image_cache.wipe(folder, no_docker, "kindest/node:v1")
    assert not wiped.ok
    assert "changed while it was being removed" in wiped.said
    assert (folder / CACHE_MARKER).exists()


ROOTED = {
    outputs.CLUSTER_NAME: "blueprint",
    outputs.IMAGE_MIRRORS: {"docker.io": "blueprint-mirror-docker-io.:5000", "quay.io": "blueprint-mirror-quay-io.:5000"},
}


def test_status_names_each_mirror_container_from_phase1s_cluster_not_from_its_rooted_dns_endpoint(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    listing = "blueprint-mirror-docker-io\tUp 3 hours\nblueprint-mirror-quay-io\tUp 3 hours\n"
    lines = image_cache.status_lines(
        {**ROOTED, outputs.IMAGE_CACHE_DIR: str(folder)}, lambda: {}, lambda argv: (0, listing), lambda p: (0, True)
    )
    assert lines[1:] == ["  mirror of docker.io (blueprint-mirror-docker-io): up", "  mirror of quay.io (blueprint-mirror-quay-io): up"]


def test_status_without_a_recorded_cluster_name_drops_the_rooted_dns_dot_of_an_endpoint(tmp_path: Path) -> None:
    phase1 = {outputs.IMAGE_MIRRORS: ROOTED[outputs.IMAGE_MIRRORS]}
    assert image_cache.mirror_containers(phase1) == {"docker.io": "blueprint-mirror-docker-io", "quay.io": "blueprint-mirror-quay-io"}


def test_status_says_a_restarting_mirror_crash_loops_and_names_the_docker_logs_that_say_why(tmp_path: Path) -> None:
    folder = a_cache(tmp_path)
    listing = "blueprint-mirror-docker-io\tRestarting (2) 4 seconds ago\nblueprint-mirror-quay-io\tUp 3 hours\n"
    lines = image_cache.status_lines(
        {**ROOTED, outputs.IMAGE_CACHE_DIR: str(folder)}, lambda: {}, lambda argv: (0, listing), lambda p: (0, True)
    )
    assert lines[1] == (
        "  mirror of docker.io (blueprint-mirror-docker-io): restarting (Restarting (2) 4 seconds ago): the registry it "
        "mirrors was unreachable when it started, or its config is refused; `docker logs blueprint-mirror-docker-io` says which"
    )


def test_the_wipe_refuses_a_cache_folder_that_is_a_link_and_removes_nothing_behind_it(tmp_path: Path) -> None:
    victim = a_victim(tmp_path)
    link = tmp_path / "images"
    link.symlink_to(victim)
    wiped = image_cache.wipe(link, no_docker, "unused")
    assert not wiped.ok
    assert wiped.said == f"not removing {link}: it is not a folder (a link, or a file); remove it yourself if it is yours: rm -f {link}"
    assert (victim / "quay.io" / "thesis.tex").exists()


def test_the_doctors_folder_check_refuses_what_the_mirrors_refuse(tmp_path: Path) -> None:
    mine = tmp_path / "Documents"
    mine.mkdir()
    (mine / "thesis.txt").write_text("mine")
    assert image_cache.folder_refusal(mine) == "holds files blueprint did not write"
    (mine / CACHE_MARKER).write_text("")
    assert image_cache.folder_refusal(mine) is None
    (tmp_path / "link").symlink_to(mine)
    assert image_cache.folder_refusal(tmp_path / "link") == "is a link"
    assert image_cache.folder_refusal(tmp_path / "new") is None


# `blueprint destroy --wipe-cache`: the image cache is kept by every destroy, removed by `--wipe-cache` once
# phase1's destroy stopped its mirrors.


def with_a_cache(tmp_path: Path, *, marker: bool = True, others: tuple[str, ...] = ()) -> tuple[FakePulumi, World, Path, list[list[str]]]:
    """Every stack up, phase1's mirrors storing into a cache folder in `tmp_path` (with its marker), and
    `others`: containers of another platform labelled with the same folder. Docker lists phase1's own
    mirrors until phase1 is destroyed."""
    from cli import image_cache
    from components.image_cache import CACHE_LABEL, CACHE_MARKER, mirror_container, mirrors

    folder = tmp_path / "images"
    (folder / "docker.io" / "storage").mkdir(parents=True)
    (folder / "docker.io" / "storage" / "blob").write_bytes(b"x" * 300_000)
    if marker:
        (folder / CACHE_MARKER).write_text("blueprint's image cache\n")
    pulumi = FakePulumi(all_stacks())
    own = mirrors("blueprint")
    pulumi.stack_outputs["phase1"] = {
        **pulumi.stack_outputs["phase1"],
        outputs.IMAGE_CACHE_DIR: (str(folder), False),
        outputs.IMAGE_MIRRORS: (own, False),
    }
    asked: list[list[str]] = []

    def docker(argv: Sequence[str]) -> tuple[int, str]:
        asked.append(list(argv))
        assert argv[:5] == ["docker", "ps", "--all", "--filter", f"label={CACHE_LABEL}={folder}"], argv
        listed = [f"{name}\tblueprint/phase2@elsewhere" for name in others]
        if pulumi.is_up("phase1"):
            listed += [f"{mirror_container('blueprint', registry)}\t{PHASE1_HERE}" for registry in own]
        return 0, "".join(f"{line}\n" for line in listed)

    the_world = dataclasses.replace(world(pulumi)[0], docker=docker, wipe_cache=lambda path: image_cache.wipe(path, docker, "unused-image"))
    return pulumi, the_world, folder, asked


def test_wipe_cache_removes_the_cache_after_phase1s_destroy_and_says_how_much_it_freed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not folder.exists()
    assert [stack for verb, stack in pulumi.calls if verb == "destroy"] == ["phase2", "phase1"]
    assert f"== removed the image cache {folder}, freeing " in said
    assert said.index("== phase1: pulumi destroy") < said.index("removed the image cache")


def test_every_destroy_keeps_the_image_cache_and_says_how_to_remove_it(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert (folder / "docker.io" / "storage" / "blob").exists()
    assert f"== the image cache {folder} (" in said
    assert "is kept for the next `up`: `uv run blueprint destroy --wipe-cache` removes it" in said


def test_wipe_cache_with_a_destroy_that_keeps_phase1_is_refused_before_anything_is_destroyed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    assert run_destroy(pulumi, False, phase="3")[0] == 0
    code, said = run_destroy(pulumi, True, phase="2", world=the_world, wipe_cache=True)
    assert code == 1
    assert "--wipe-cache removes the image cache, which phase1's registry mirrors store into" in said
    assert "this destroy (phase 2) keeps phase1 up; nothing was destroyed" in said
    assert pulumi.is_up("phase2")
    assert folder.exists()


def test_wipe_cache_with_the_cache_off_says_there_is_nothing_to_wipe_and_goes_on(tmp_path: Path) -> None:
    pulumi = FakePulumi(all_stacks())
    pulumi.stack_outputs["phase1"][outputs.IMAGE_CACHE_DIR] = ("", False)
    the_world = world(pulumi, imageCache="false")[0]
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert "== image cache: off (blueprint:imageCache=false): nothing to wipe" in said
    assert not pulumi.is_up("phase1")


def test_wipe_cache_after_the_cache_was_turned_off_removes_the_folder_it_left(tmp_path: Path) -> None:
    from cli import image_cache

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    pulumi.stack_outputs["phase1"][outputs.IMAGE_CACHE_DIR] = ("", False)
    pulumi.stack_outputs["phase1"][outputs.IMAGE_MIRRORS] = ({}, False)
    config = {**the_world.phase1_config(), "blueprint:imageCache": "false", "blueprint:imageCacheDir": str(folder)}
    no_mirrors = lambda argv: (0, "")  # noqa: E731 (turned off: phase1 runs none)
    wipe = lambda path: image_cache.wipe(path, no_mirrors, "unused-image")  # noqa: E731
    the_world = dataclasses.replace(the_world, phase1_config=lambda: config, docker=no_mirrors, wipe_cache=wipe)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert f"but {folder} still holds what it cached: removing it" in said
    assert not (folder / "docker.io").exists()


def test_wipe_cache_refused_for_a_silent_docker_gives_the_removal_by_hand(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    the_world = dataclasses.replace(the_world, docker=lambda argv: (1, "Cannot connect to the Docker daemon"))
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert f"rm -rf {folder / 'docker.io'}" in said
    assert pulumi.is_up("phase1")


def test_wipe_cache_keeps_the_folder_when_a_mirror_still_stores_into_it_after_the_destroy(tmp_path: Path) -> None:
    from components.image_cache import mirror_container

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    left = mirror_container("blueprint", "docker.io")  # its `docker rm` failed: the destroy only warned
    still = lambda argv: (0, f"{left}\t{PHASE1_HERE}\n")  # noqa: E731
    code, said = run_destroy(pulumi, True, world=dataclasses.replace(the_world, docker=still), wipe_cache=True)
    assert code == 1
    assert f"docker rm --force {left}" in said
    assert (folder / "docker.io" / "storage" / "blob").is_file()


def test_wipe_cache_takes_the_mirrors_phase1_started_for_its_own_when_its_outputs_do_not_list_them(tmp_path: Path) -> None:
    # An up that failed after the mirrors started keeps the outputs of the last that succeeded, without them.
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    del pulumi.stack_outputs["phase1"][outputs.IMAGE_MIRRORS]
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not (folder / "docker.io").exists()


def test_wipe_cache_of_a_folder_that_is_not_there_says_so_and_goes_on(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    shutil.rmtree(folder)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert f"== image cache: {folder} does not exist: nothing to wipe" in said
    assert not pulumi.is_up("phase1")


def test_wipe_cache_refuses_a_folder_without_the_cache_marker_before_anything_is_destroyed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path, marker=False)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert f"--wipe-cache: {folder} has no .blueprint-image-cache, so it is not an image cache blueprint made" in said
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <the cache folder>`" in said
    assert pulumi.is_up("phase1")
    assert (folder / "docker.io" / "storage" / "blob").exists()


def test_wipe_cache_refuses_while_another_platforms_mirrors_store_into_the_folder(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path, others=("other-mirror-docker-io",))
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert "these containers still store into it: other-mirror-docker-io (blueprint/phase2@elsewhere)" in said
    assert "`docker rm --force other-mirror-docker-io`" in said
    assert pulumi.is_up("phase1")
    assert folder.exists()


def test_wipe_cache_takes_phase1s_mirrors_named_by_rooted_dns_endpoints_for_its_own(tmp_path: Path) -> None:
    from components.image_cache import MIRRORED_REGISTRIES, mirror_container

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    rooted = {registry: f"{mirror_container('blueprint', registry)}.:5000" for registry in MIRRORED_REGISTRIES}
    pulumi.stack_outputs["phase1"] = {**pulumi.stack_outputs["phase1"], outputs.IMAGE_MIRRORS: (rooted, False)}
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not folder.exists()


def test_wipe_cache_is_refused_when_docker_cannot_say_who_uses_the_folder(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    silent = dataclasses.replace(the_world, docker=lambda argv: (1, "Cannot connect to the Docker daemon"))
    code, said = run_destroy(pulumi, True, world=silent, wipe_cache=True)
    assert code == 1
    assert "--wipe-cache: Docker does not answer" in said
    assert pulumi.is_up("phase1")
    assert folder.exists()


def test_wipe_cache_after_phase1_was_destroyed_earlier_asks_then_removes_the_cache(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    phase1 = {key: value for key, (value, _) in pulumi.stack_outputs["phase1"].items()}
    assert run_destroy(pulumi, True, world=the_world)[0] == 0
    questions: list[str] = []
    kept_config = dataclasses.replace(
        the_world, phase1_config=lambda: {**stack_config("phase1")[0], "blueprint:imageCacheDir": phase1[outputs.IMAGE_CACHE_DIR]}
    )

    def confirm(question: str) -> bool:
        questions.append(question)
        return True

    code, said = run_destroy(pulumi, True, world=kept_config, wipe_cache=True, confirm=confirm)
    assert code == 0, said
    assert questions == [f"Remove the image cache {folder} (the images the next `up` would otherwise not download again)?"]
    assert not folder.exists()


def pruned(tmp_path: Path, labelled: str | None = None, failing: str = "", running: str = "true") -> tuple[int, list[str], list[list[str]]]:
    """`prune` against a fake docker; the emptying run is the one given the wipe's time, recorded as `long`."""
    folder = a_cache(tmp_path)
    asked: list[list[str]] = []

    def docker(argv: Sequence[str]) -> tuple[int, str]:
        asked.append(list(argv))
        if argv[1] == "inspect":
            return 0, f"{labelled or folder}\t1000:1000\tregistry:3.1.2\t{running}\n"
        return (1, "") if argv[1] == failing else (0, "")

    def long(argv: Sequence[str]) -> tuple[int, str]:
        return docker(["docker", "long", *argv[1:]])

    phase1 = {outputs.IMAGE_MIRRORS: mirrors("blueprint"), outputs.CLUSTER_NAME: "blueprint", outputs.IMAGE_CACHE_DIR: str(folder)}
    code, lines = image_cache.prune(phase1, lambda: {}, docker, long)
    return code, lines, asked


def test_cache_prune_empties_each_mirrors_storage_with_the_mirror_stopped_and_starts_it_again(tmp_path: Path) -> None:
    code, lines, asked = pruned(tmp_path)
    assert code == 0, lines
    for container in ("blueprint-mirror-docker-io", "blueprint-mirror-quay-io"):
        steps = [argv[1] for argv in asked if container in argv]
        assert steps == ["inspect", "stop", "long", "start"], steps
    run = next(argv for argv in asked if argv[1] == "long")
    # With the mirror's own mounts and user, nothing more: only its storage is emptied.
    assert run[run.index("--volumes-from") + 1] == "blueprint-mirror-docker-io"
    assert run[run.index("--user") + 1] == "1000:1000"
    assert run[run.index("--network") + 1] == "none"
    assert run[-6:] == ["registry:3.1.2", "/var/lib/registry", "-xdev", "-mindepth", "1", "-delete"]


def test_cache_prune_leaves_a_container_that_stores_in_another_folder(tmp_path: Path) -> None:
    code, lines, asked = pruned(tmp_path, labelled="/somewhere/else")
    assert code == 1
    assert not [argv for argv in asked if argv[1] in ("stop", "long")]
    assert "is not a mirror storing in" in lines[1]


def test_cache_prune_says_how_to_start_a_mirror_it_could_not_start_again(tmp_path: Path) -> None:
    code, lines, _ = pruned(tmp_path, failing="start")
    assert code == 1
    assert "`docker start blueprint-mirror-docker-io` starts it" in "\n".join(lines)


def test_cache_prune_with_the_cache_off_prunes_nothing() -> None:
    code, lines = image_cache.prune(None, lambda: {"blueprint:imageCache": "false"}, no_docker)
    assert code == 0
    assert "nothing to prune" in lines[0]


def test_cache_prune_never_starts_a_mirror_over_storage_it_could_not_empty(tmp_path: Path) -> None:
    """An emptying that failed or ran out of its time may still be deleting: the mirror stays stopped,
    and the emptying container is removed first."""
    code, lines, asked = pruned(tmp_path, failing="long")
    assert code == 1
    assert not [argv for argv in asked if argv[1] == "start"]
    assert ["docker", "rm", "-f", "blueprint-mirror-docker-io-prune"] in asked
    assert "left stopped" in "\n".join(lines)


def test_cache_prune_leaves_a_stopped_mirror_stopped(tmp_path: Path) -> None:
    code, lines, asked = pruned(tmp_path, running="false")
    assert code == 0
    assert {argv[1] for argv in asked} == {"inspect"}
    assert "is stopped" in lines[1]
