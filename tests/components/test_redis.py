"""Redis: one persistent, password-protected Valkey from the official chart."""

from __future__ import annotations

from typing import Any

import pytest

import versions
from components.redis import PASSWORD_KEY, VALKEY_USER, RedisArgs
from components.storage import Provisioned, Volume
from tests.plans import planned

VOLUME = Volume(namespace="redis", claim="valkey-data", size="1Gi", owner=VALKEY_USER)

RELEASE = "kubernetes:helm.sh/v3:Release"


def values() -> dict[str, object]:
    return dict(planned("phase2").one(RELEASE, "redis-chart")["inputs"]["values"])


def test_the_official_valkey_chart_and_image_are_pinned() -> None:
    inputs = planned("phase2").one(RELEASE, "redis-chart")["inputs"]
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"]) == (
        "valkey",
        versions.VALKEY_CHART_VERSION,
        versions.VALKEY_CHART_REPO,
    )
    assert inputs["values"]["image"] == {"tag": versions.VALKEY_IMAGE_TAG}


def test_the_default_user_needs_the_password_from_our_secret() -> None:
    auth = values()["auth"]
    assert auth == {
        "enabled": True,
        "usersExistingSecret": "valkey-auth",
        "aclUsers": {"default": {"passwordKey": PASSWORD_KEY, "permissions": "~* &* +@all"}},
    }
    secret = planned("phase2").one("kubernetes:core/v1:Secret", "redis-auth")["inputs"]
    assert secret["stringData"] == {PASSWORD_KEY: "[secret]"}


def test_data_persists_on_the_static_volume_with_the_append_only_file() -> None:
    result = planned("phase2")
    assert values()["dataStorage"] == {"enabled": True, "persistentVolumeClaimName": "valkey-data"}
    assert "appendonly yes" in str(values()["valkeyConfig"])
    claim = result.one("kubernetes:core/v1:PersistentVolumeClaim", "redis-data")["inputs"]["spec"]
    assert claim["volumeName"] == "blueprint-redis-valkey-data"


def test_valkey_never_goes_below_the_version_that_wrote_a_kept_data_folder() -> None:
    """An earlier blueprint ran Valkey 9.1: an older one refuses its RDB file ("Can't handle RDB format version")."""
    major, minor = (int(part) for part in versions.VALKEY_IMAGE_TAG.split(".")[:2])
    assert (major, minor) >= (9, 1)


@pytest.mark.parametrize("provisioned", [None, Provisioned(storage_class="", keep=False)])
def test_the_data_claim_binds_to_a_pv_or_is_provisioned_never_both_nor_neither(provisioned: Provisioned | None) -> None:
    volume_resource: Any = None if provisioned is None else object()
    with pytest.raises(ValueError, match="exactly one"):
        RedisArgs(volume=VOLUME, volume_resource=volume_resource, provisioned=provisioned)
