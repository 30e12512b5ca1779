"""Every dynamic resource type of providers/, registered as the plan registers it and taken once
through each call of the real provider host (tests/providers/provider_host.py `journey`), against
the stand-ins the providers' own tests use: the GitLab stub (one per type, so none sees another's
objects), the token APIs of tests/providers/test_gitlab_token*.py, a real `bao server` over TLS,
fake `kind` and `kubectl` first on the hosts' PATH, files in a temporary folder.

Each case gives the registration (what the plan redacts or points at the real platform replaced),
the same resource with one setting changed (an update in place), and what to look at in the world
after the create, the update and the delete.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from components.openbao import ADMIN_USER
from providers.ca_certificate import CaCertificateProvider
from providers.deploy_kubeconfig import DeployKubeconfigProvider
from providers.gitlab_deploy_token import DeployTokenProvider
from providers.gitlab_group import GroupProvider
from providers.gitlab_pipeline import SmokePipelineProvider
from providers.gitlab_project import ProjectProvider
from providers.gitlab_runner import RunnerProvider
from providers.gitlab_sync import GitLabSyncProvider
from providers.gitlab_token import ADMIN_TOKEN_SCOPES, GitLabTokenProvider, GlabTokenProvider
from providers.gitlab_variable import VariableProvider
from providers.host_secret import HostSecretProvider
from providers.openbao_init import OpenBaoInitProvider
from providers.openbao_kv import OpenBaoKvProvider
from tests.plans import fake_command
from tests.providers.bao_tls import SERVER_NAME
from tests.providers.engine import BaoServer, call, fake_cluster, init_inputs, login
from tests.providers.gitlab_stub import ADMIN, TOKEN, GitLabState, gitlab_stub, serving
from tests.providers.provider_host import Host, Journey, Registered, journey, registered
from tests.providers.test_gitlab_token import TokenApi
from tests.providers.test_gitlab_token_glab import ADMIN as GLAB_ADMIN
from tests.providers.test_gitlab_token_glab import Api as GlabApi

DYNAMIC = "pulumi-python:dynamic"
PHASE2, PHASE3 = "blueprint/phase2", "blueprint/phase3"
NO_CA_FILE = "/nonexistent/ca.crt"
"""The GitLab stub speaks plain HTTP: no CA file is read."""
DAY = 86400


@dataclass
class World:
    """What every case runs in: the two hosts, a folder, the stand-ins' folder first on the hosts'
    PATH, the OpenBao server, and the stubs the cases start (stopped with `servers`)."""

    up: Host
    later: Host
    folder: Path
    bin: Path
    bao: BaoServer
    servers: ExitStack

    def gitlab(self) -> tuple[str, GitLabState]:
        """A GitLab stub of the case's own."""
        state = GitLabState()
        return self.servers.enter_context(gitlab_stub(state)), state

    def trip(self, resource: Registered, changed: Registered, look: Callable[[], Any] = lambda: None) -> Journey:
        return journey(self.up, self.later, resource, changed, look)


def _connection(url: str) -> dict[str, Any]:
    return {"gitlab_url": url, "token": TOKEN, "ca_file": NO_CA_FILE}


def _ours(state: GitLabState) -> tuple[dict[str, Any], dict[str, Any]]:
    """phase2's group and a phase3 project in it, as the earlier `up`s left them."""
    group = state.add_group("blueprint-apps", owner=PHASE2, creator=ADMIN)
    return group, state.add_project(group, "guestbook", owner=PHASE3, creator=ADMIN)


def host_secret(world: World) -> Journey:
    path = world.folder / "secrets" / "gitlab-root-password"
    secret = registered("phase2", f"{DYNAMIC}/blueprint:HostSecret", "gitlab-root-password", HostSecretProvider(), path=str(path))
    return world.trip(secret, secret.but(length=48.0), lambda: path.read_text().strip() if path.exists() else None)


def ca_certificate(world: World) -> Journey:
    key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    ca = registered("phase2", f"{DYNAMIC}/blueprint:CaCertificate", "tls-ca", CaCertificateProvider(), private_key_pem=key.decode())
    return world.trip(ca, ca.but(validity_hours=48.0))


def jwt(expires: int) -> str:
    """A token shaped as the TokenRequest API's: base64url header, claims and signature."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'exp': expires, 'sub': 'system:serviceaccount:apps:ci-deployer'})}.c2ln"


def deploy_kubeconfig(world: World) -> Journey:
    """The component's own script, against a `kubectl` that prints a token a year long and logs its calls."""
    log, token = world.folder / "kubeconfig-kubectl.log", world.folder / "deploy-token"
    token.write_text(jwt(int(time.time()) + 365 * DAY))
    fake_command(world.bin, "kind", 'echo "apiVersion: v1"\n')
    fake_command(
        world.bin,
        "kubectl",
        f'echo "$*" >> {log}\ncase "$*" in *"create token"*) cat {token} ;; *"get secrets"*) ;;\n'
        f'  *"create -f -"*) cat > /dev/null; printf "uid-of-new-anchor" ;; *delete*) ;; *) printf "CA PEM" ;; esac\n',
    )
    kubeconfig = registered("phase2", f"{DYNAMIC}/blueprint:DeployKubeconfig", "ci-access-kubeconfig", DeployKubeconfigProvider())
    return world.trip(kubeconfig, kubeconfig.but(namespace_uid="uid-of-a-new-namespace"), lambda: log.read_text().splitlines())


def openbao_init(world: World) -> Journey:
    """The real server's configuration converged, behind a StatefulSet that has rolled out."""
    fake_cluster(world.bin)
    inputs = init_inputs(world.bao, world.folder / "init")
    init = registered("phase2", f"{DYNAMIC}/openbao:Init", "openbao-init", OpenBaoInitProvider(), **inputs)

    def writer_logs_in() -> bool:
        return bool(login(world.bao, str(inputs["username"]), world.bao.writer_password))

    return world.trip(init, init.but(release_digest="1" * 64), writer_logs_in)


KV_PATH = "gitlab/deploy-tokens/guestbook"


def openbao_kv(world: World) -> Journey:
    """phase3's deploy token entry (deleted on destroy), in the real server."""
    bao, pki = world.bao, world.bao.pki
    assert pki is not None
    server = {"address": bao.address, "password": bao.writer_password, "ca_file": str(pki.ca_file), "server_name": SERVER_NAME}
    data = {"token": "gldt-host-kv-token-0123456789", "username": "gitlab+deploy-token-7"}
    kv = registered(
        "phase3", f"{DYNAMIC}/openbao:KvSecret", "openbao-kv-gitlab-deploy-tokens-guestbook", OpenBaoKvProvider(), **server, data=data
    )

    def stored() -> dict[str, Any] | None:
        answer = call(bao, "GET", f"secret/data/{KV_PATH}", login(bao, ADMIN_USER, bao.admin_password))
        return None if answer.status_code == 404 else dict(answer.json()["data"]["data"])

    return world.trip(kv, kv.but(data={**data, "token": "gldt-host-kv-token-rotated-987"}), stored)


def group(world: World) -> Journey:
    url, state = world.gitlab()
    made = registered("phase2", f"{DYNAMIC}/gitlab:Group", "apps-group", GroupProvider(), **_connection(url))
    return world.trip(made, made.but(description="Changed."), lambda: [dict(group) for group in state.groups.values()])


def runner(world: World) -> Journey:
    url, state = world.gitlab()
    ours, _ = _ours(state)
    provider = RunnerProvider()
    made = registered("phase2", f"{DYNAMIC}/gitlab:Runner", "runner-registration", provider, **_connection(url), group_id=str(ours["id"]))
    flipped = not made.inputs["run_untagged"]
    return world.trip(made, made.but(run_untagged=flipped), lambda: {key: dict(value) for key, value in state.runners.items()})


def _variables(state: GitLabState, holder: str) -> Callable[[], list[dict[str, Any]]]:
    return lambda: [dict(variable) for variable in state.variables.get(holder, [])]


def group_variable(world: World) -> Journey:
    """phase3's deploy kubeconfig: a secret, protected file variable of phase2's group."""
    url, state = world.gitlab()
    ours, _ = _ours(state)
    value = "apiVersion: v1\nusers: [{name: ci-deployer, user: {token: host-variable-secret-0123}}]\n"
    variable = registered(
        "phase3", f"{DYNAMIC}/gitlab:GroupVariable", "apps-deploy-kubeconfig", VariableProvider(),
        **_connection(url), parent=str(ours["id"]), value=value,
    )  # fmt: skip
    changed = variable.but(value=value.replace("0123", "4567"))
    return world.trip(variable, changed, _variables(state, f"groups/{ours['id']}"))


def project_variable(world: World) -> Journey:
    url, state = world.gitlab()
    _, project = _ours(state)
    provider = VariableProvider()
    variable = registered(
        "phase3", f"{DYNAMIC}/gitlab:ProjectVariable", "apps-guestbook-app-host", provider, **_connection(url), parent=str(project["id"])
    )
    return world.trip(variable, variable.but(value="guestbook.example.org"), _variables(state, f"projects/{project['id']}"))


def project(world: World) -> Journey:
    url, state = world.gitlab()
    ours = state.add_group("blueprint-apps", owner=PHASE2, creator=ADMIN)
    made = registered(
        "phase3", f"{DYNAMIC}/gitlab:Project", "apps-guestbook", ProjectProvider(), **_connection(url), namespace_id=str(ours["id"])
    )

    def look() -> dict[str, Any]:
        return {"projects": [dict(held) for held in state.projects.values()], "protected": dict(state.protected_branches)}

    return world.trip(made, made.but(name="Guestbook"), look)


def deploy_token(world: World) -> Journey:
    url, state = world.gitlab()
    _, held = _ours(state)
    provider = DeployTokenProvider()
    token = registered(
        "phase3", f"{DYNAMIC}/gitlab:DeployToken", "apps-guestbook-deploy-token", provider, **_connection(url), project=str(held["id"])
    )
    return world.trip(
        token, token.but(ca_file="/nonexistent/other-ca.crt"), lambda: [dict(made) for made in state.deploy_tokens[held["id"]]]
    )


def project_sync(world: World) -> Journey:
    url, state = world.gitlab()
    _, held = _ours(state)
    sync = registered(
        "phase3", f"{DYNAMIC}/gitlab:ProjectSync", "apps-guestbook-sync", GitLabSyncProvider(), **_connection(url), project=str(held["id"])
    )
    changed = sync.but(files={**sync.inputs["files"], "NOTES.md": "Changed by hand.\n"})
    repository = state.repository
    return world.trip(sync, changed, lambda: {"files": sorted(repository.files), "commits": len(repository.commits)})


def smoke_pipeline(world: World) -> Journey:
    """The commit's pipeline ran green before (a failed `up`, say): the create runs it again."""
    url, state = world.gitlab()
    _, held = _ours(state)
    provider = SmokePipelineProvider()
    pipeline = registered(
        "phase3", f"{DYNAMIC}/gitlab:SmokePipeline", "apps-guestbook-pipeline", provider, **_connection(url), project=str(held["id"])
    )
    sha = pipeline.inputs["sha"]
    state.repository.pipelines.append(
        {"id": 1, "sha": sha, "ref": "main", "status": "success", "web_url": "https://gitlab/p/-/pipelines/1"}
    )
    return world.trip(pipeline, pipeline.but(target="a-new-cluster"), lambda: list(state.repository.posts))


class Seeded(set[str]):
    """The tokens GitLab accepts: those the test adds, and any the seed script gave the toolbox's
    `gitlab-rails runner` (what the fake `kubectl exec` kept of its stdin)."""

    def __init__(self, script: Path) -> None:
        super().__init__()
        self.script = script

    def __contains__(self, token: object) -> bool:
        seeded = self.script.exists() and json.dumps(token) in self.script.read_text()
        return super().__contains__(token) or seeded


def admin_token(world: World) -> Journey:
    """Seeded through a fake toolbox: `kubectl exec` keeps its argv and the script on its stdin."""
    argv, script = world.folder / "toolbox-argv", world.folder / "toolbox-stdin"
    fake_command(world.bin, "kind", 'echo "apiVersion: v1"\n')
    fake_command(world.bin, "kubectl", f'echo "$*" >> {argv}\ncat > {script}\necho created\n')
    api: type[TokenApi] = type("Api", (TokenApi,), {"accepted": Seeded(script), "scopes": list(ADMIN_TOKEN_SCOPES)})
    url = world.servers.enter_context(serving(api))
    ca_file = world.folder / "admin-token-ca.crt"
    ca_file.write_text("-----BEGIN CERTIFICATE-----\n")  # plain HTTP: only its presence is checked
    value = "glpat-host-admin-token-0123456789abcdef"
    provider = GitLabTokenProvider()
    token = registered(
        "phase2", f"{DYNAMIC}/gitlab:AdminToken", "gitlab-admin-token", provider, gitlab_url=url, ca_file=str(ca_file), token=value
    )
    return world.trip(token, token.but(wait_seconds=120.0), lambda: argv.read_text().splitlines() if argv.exists() else [])


def glab_token(world: World) -> Journey:
    api: type[GlabApi] = type("Api", (GlabApi,), {"tokens": {}, "posted": [], "settings": {}})
    url = world.servers.enter_context(serving(api))
    ca_file, other_ca = world.folder / "glab-ca.crt", world.folder / "glab-other-ca.crt"
    for file in (ca_file, other_ca):
        file.write_text("-----BEGIN CERTIFICATE-----\n")
    path = world.folder / "secrets" / "gitlab-glab-token"
    token = registered(
        "phase2", f"{DYNAMIC}/gitlab:GlabToken", "gitlab-glab-token", GlabTokenProvider(),
        gitlab_url=url, ca_file=str(ca_file), token=GLAB_ADMIN, path=str(path),
    )  # fmt: skip

    def look() -> dict[str, Any]:
        live = sorted(value for value, row in api.tokens.items() if row["active"])
        return {"file": path.read_text().strip() if path.exists() else None, "live": live}

    return world.trip(token, token.but(ca_file=str(other_ca)), look)


CASES: dict[str, Callable[[World], Journey]] = {
    "HostSecret": host_secret,
    "CaCertificate": ca_certificate,
    "DeployKubeconfig": deploy_kubeconfig,
    "Init": openbao_init,
    "KvSecret": openbao_kv,
    "Group": group,
    "Runner": runner,
    "GroupVariable": group_variable,
    "ProjectVariable": project_variable,
    "Project": project,
    "DeployToken": deploy_token,
    "ProjectSync": project_sync,
    "SmokePipeline": smoke_pipeline,
    "AdminToken": admin_token,
    "GlabToken": glab_token,
}
"""Every dynamic resource type, by its type name (`pulumi-python:dynamic/<module>:<name>`)."""
