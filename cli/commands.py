"""`blueprint up | preview | destroy | status | kubeconfig`: the stacks driven through Pulumi's Automation API.

The phases run in order (destroy in reverse), each a stack of this project on the local `file://`
backend (`.pulumi-state/`), with the user's private passphrase (cli/passphrase.py). Pulumi's own
progress is streamed as it comes. A failure names the phase and the resource, explains Kubernetes
timeouts with the pods that are not Ready, and gives the command that resumes; every step is
re-runnable.

Everything that talks to Pulumi goes through a `StackRunner`, so the command logic (phase order,
the preserveData recording, the summary) is tested without a Pulumi CLI.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from apps_manifest import HEADLAMP_HOST, PLATFORM_HOSTS
from cli import os_family
from cli.doctor import PHASE_STACKS
from cli.os_family import OsFamily
from stacks import outputs
from stacks.config import PROJECT_DIR

PHASES = PHASE_STACKS


class StackFailed(Exception):
    """A stack's `up`, `preview` or `destroy` failed; `output` is what Pulumi printed."""

    def __init__(self, stack: str, output: str) -> None:
        super().__init__(f"stack {stack} failed")
        self.stack = stack
        self.output = output


class StackRunner(Protocol):
    def up(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def preview(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None: ...
    def set_config(self, stack: str, key: str, value: str) -> None: ...
    def outputs(self, stack: str) -> dict[str, Any] | None:
        """The stack's outputs, secrets included, or None when the stack does not exist."""
        ...

    def export_state(self, stack: str) -> dict[str, Any]:
        """The stack's state, as `pulumi stack export` writes it (secrets stay encrypted)."""
        ...

    def import_state(self, stack: str, state: dict[str, Any]) -> None: ...


def pulumi_environment() -> dict[str, str]:
    """What every Pulumi command of blueprint runs with: the project's own backend, and the user's
    passphrase for every stack (a stack reads its upstream's secret outputs with it). Only ever the
    passphrase's file: LocalWorkspace shows its env_vars in its repr.
    """
    from cli import passphrase

    return {
        "PULUMI_BACKEND_URL": f"file://{PROJECT_DIR / '.pulumi-state'}",
        # Every command would otherwise ask the network for a newer CLI first.
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        **passphrase.environment(os.environ),
    }


class AutomationRunner:
    """The real thing: Pulumi's Automation API over this project's folder (a local program, as
    dynamic providers need).
    """

    def _stack(self, name: str) -> Any:
        from pulumi import automation as auto

        options = auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment(), secrets_provider="passphrase")
        return auto.create_or_select_stack(stack_name=name, work_dir=str(PROJECT_DIR), opts=options)

    def _run(self, stack: str, action: Callable[[], Any]) -> None:
        from pulumi import automation as auto

        try:
            action()
        except auto.CommandError as error:
            raise StackFailed(stack, str(error)) from error

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._run(stack, lambda: self._stack(stack).up(on_output=on_output, color="auto"))

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._run(stack, lambda: self._stack(stack).preview(on_output=on_output, color="auto"))

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
        previous = {key: os.environ.get(key) for key in env}
        os.environ.update(env)  # the Automation API passes the process environment to the CLI
        try:
            self._run(stack, lambda: self._stack(stack).destroy(on_output=on_output, color="auto"))
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def set_config(self, stack: str, key: str, value: str) -> None:
        """Set `key` on `stack` if the stack exists; never create a stack just for that."""
        from pulumi import automation as auto

        try:
            selected = auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR), opts=self._options())
        except auto.StackNotFoundError:
            return
        selected.set_config(key, auto.ConfigValue(value=value))

    # Not the Automation API's export_stack/import_stack: they always export with --show-secrets and
    # leave that plaintext in a temporary file when an import fails. Without it, secrets stay the
    # stack's own ciphertext, which `pulumi stack import` takes back as it is.
    def export_state(self, stack: str) -> dict[str, Any]:
        exported: dict[str, Any] = json.loads(self._pulumi(stack, "stack", "export", "--stack", stack))
        return exported

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="blueprint-state-") as file:
            json.dump(state, file)
            file.flush()
            self._pulumi(stack, "stack", "import", "--file", file.name, "--stack", stack)

    def _pulumi(self, stack: str, *argv: str) -> str:
        done = subprocess.run(
            ["pulumi", *argv, "--non-interactive"],
            cwd=PROJECT_DIR,
            env={**os.environ, **pulumi_environment()},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            raise StackFailed(stack, f"`pulumi {shlex.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def outputs(self, stack: str) -> dict[str, Any] | None:
        """None when the stack does not exist or holds no resource: a `pulumi destroy` leaves the
        stack in place, empty, and an empty stack is not up.
        """
        from pulumi import automation as auto

        workspace = auto.LocalWorkspace(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment())
        # Named `<stack>`, or `organization/blueprint/<stack>` with PULUMI_FULLY_QUALIFY_STACK_NAMES.
        summary = next((found for found in workspace.list_stacks() if found.name.rsplit("/", 1)[-1] == stack), None)
        if summary is None or not summary.resource_count:
            return None  # not there, destroyed (0), or never updated (no count at all)
        selected = auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR), opts=self._options())
        return {key: value.value for key, value in selected.outputs().items()}

    def _options(self) -> Any:
        from pulumi import automation as auto

        return auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment())


@dataclass(frozen=True, kw_only=True)
class Context:
    runner: StackRunner
    out: TextIO = sys.stdout
    doctor: Callable[[], int] | None = None
    """Run before `up`; a non-zero result stops it."""
    explain: Callable[[str, str, str, str], str] | None = None
    """(phase, stack, Pulumi's output, the command that resumes) -> what to tell the user."""
    world: Any = None
    """What `cli/teardown.py` asks of the machine (a `teardown.World`; None: the real one)."""
    confirm: Callable[[str], bool] = lambda question: False
    """Ask the user a yes/no question (no: when nobody can answer)."""
    probe: Callable[[str, str, Mapping[str, str]], str] | None = None
    """(url, CA file, headers) -> what the URL says, as `probe` (None: `probe` itself)."""

    def say(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()


def _phase_number(stack: str) -> str:
    return stack.removeprefix("phase")


def _failed(context: Context, failure: StackFailed, verb: str, resume: str | None = None) -> int:
    # A failed destroy resumes with the same destroy, never with an `up` that would rebuild it.
    if resume is None:
        resume = (
            f"uv run blueprint up --phase {_phase_number(failure.stack)}" if verb == "up" else f"the same `uv run blueprint {verb}` again"
        )
    if context.explain is not None:
        context.say(context.explain(_phase_number(failure.stack), failure.stack, failure.output, resume))
    else:
        context.say(f"{verb} of {failure.stack} failed; to resume: {resume}")
    return 1


def _in_order(context: Context, phase: str, verb: str, action: Callable[[str, Callable[[str], None]], None]) -> int:
    """Run `action` on the phase's stacks in order; stop at the first failure, explained."""
    for stack in PHASES[phase]:
        context.say(f"== {stack}: pulumi {verb}")
        try:
            action(stack, context.say)
        except StackFailed as failure:
            # After a whole `up` stopped, the whole `up` again: every phase after the failed one is still to do.
            return _failed(context, failure, verb, resume="uv run blueprint up" if verb == "up" and phase == "all" else None)
    return 0


def up(context: Context, phase: str) -> int:
    if context.doctor is not None and context.doctor() != 0:
        context.say("blueprint doctor found what stops a real run (above); fix it and run `uv run blueprint up` again.")
        return 1
    from cli import teardown

    if phase in ("all", "1"):
        try:
            code = teardown.make_way_for_a_new_cluster(context.runner, context.say, phase, world=context.world, confirm=context.confirm)
        except StackFailed as failure:
            # Half-way through a cluster change: the whole `up` takes it up again, never a destroy.
            return _failed(context, failure, "up", resume="uv run blueprint up")
        if code != 0:
            return code
    code = _in_order(context, phase, "up", context.runner.up)
    if code == 0:
        values = {stack: context.runner.outputs(stack) or {} for stack in PHASES["all"]}
        from cli.doctor import RealMachine, machine_family

        tally, checked = pipeline_tally(values.get("phase3") or {}), check_apps(values, context.probe or probe)
        context.say(summary(values, tally=tally, checked=checked, family=machine_family(RealMachine())))
    return code


def pipeline_tally(phase3: Mapping[str, Any]) -> str | None:
    """`smoke_tally` of phase3's outputs against apps/apps_manifest.yaml, or why the manifest cannot
    be read; None when phase3 is not up.
    """
    from apps_manifest import ManifestError, load_manifest

    if not phase3:
        return None
    try:
        projects = [project.name for project in load_manifest()]
    except ManifestError as error:
        return f"smoke pipelines not tallied: {error}"
    return smoke_tally(projects, phase3.get(outputs.PIPELINES) or {})


def check_apps(outputs_by_stack: Mapping[str, Mapping[str, Any]], ask: Callable[[str, str, Mapping[str, str]], str]) -> dict[str, str]:
    """What each app's `/healthz` says from this laptop, through the gateway, trusting our CA alone:
    the route a user takes, which the pipeline's own check (from inside the cluster) does not.
    """
    phase2, phase3 = (outputs_by_stack.get(stack) or {} for stack in ("phase2", "phase3"))
    if not phase2.get(outputs.CA_CERT_FILE):
        return {}
    ca = str(phase2[outputs.CA_CERT_FILE])
    return {name: ask(f"{url}/healthz", ca, {}) for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items())}


def smoke_tally(projects: Sequence[str], pipelines: Mapping[str, Any]) -> str:
    """The line "N/N smoke pipelines green": of the manifest's `projects`, those with a pipeline in
    phase3's `pipelines` output, which holds only green ones (one that is not green fails the `up`);
    the others named, with what runs them.
    """
    missing = [name for name in projects if not pipelines.get(name)]
    line = f"{len(projects) - len(missing)}/{len(projects)} smoke pipelines green"
    if missing:
        line += f" (none recorded for {', '.join(missing)}: `uv run blueprint up --phase 3` runs them)"
    return line


def preview(context: Context, phase: str) -> int:
    return _in_order(context, phase, "preview", context.runner.preview)


def destroy(context: Context, phase: str, preserve: bool | None, *, cluster_gone: bool = False, wipe_cache: bool = False) -> int:
    """Destroy in reverse order, on every route: see `cli/teardown.py`."""
    from cli import teardown

    try:
        return teardown.destroy(
            context.runner,
            context.say,
            PHASES[phase],
            preserve,
            cluster_gone=cluster_gone,
            wipe_cache=wipe_cache,
            world=context.world,
            confirm=context.confirm,
        )
    except StackFailed as failure:
        return _failed(context, failure, "destroy")


def summary(
    outputs_by_stack: Mapping[str, Mapping[str, Any]],
    *,
    tally: str | None = None,
    checked: Mapping[str, str] | None = None,
    family: OsFamily | None = None,
) -> str:
    """What the user needs after an `up`: where things are, where the credentials are (never the
    credentials themselves), and the laptop-side steps left; once phase3 is up, each app with what its
    `/healthz` said from this laptop (`checked`, from `check_apps`), and last the smoke pipelines'
    `tally` (`pipeline_tally`).
    """
    phase1, phase2, phase3 = (outputs_by_stack.get(stack) or {} for stack in ("phase1", "phase2", "phase3"))
    lines = ["", "blueprint is up."]
    if phase2:
        gitlab_url = str(phase2.get(outputs.GITLAB_URL, ""))
        domain = gitlab_url.split("://", 1)[-1].split(".", 1)[-1]
        # Headlamp's name only when phase1 installed it (phase2 then routes it through the gateway).
        headlamp = [f"{HEADLAMP_HOST}.{domain}"] if phase1.get(outputs.HEADLAMP) else []
        hosts = [f"{host}.{domain}" for host in PLATFORM_HOSTS] + headlamp
        hosts += [str(url).split("://", 1)[-1] for url in (phase3.get(outputs.APP_URLS) or {}).values()]
        lines += [
            f"  GitLab:    {gitlab_url}  (user root)",
            f"  Registry:  {phase2.get(outputs.REGISTRY_HOST)}",
            f"  OpenBao:   {phase2.get(outputs.OPENBAO_ADDR)}",
            *(f"  Headlamp:  https://{name}  (its login token: kubectl -n headlamp create token headlamp)" for name in headlamp),
            "",
            "Credentials (in files only you can read, and in OpenBao under secret/, after the OpenBao login below):",
            f"  root password:  {root_password_command(phase2)}   (or uv run bao kv get secret/gitlab/root)",
            f"  admin token:    {admin_token_command(phase2)}   (or uv run bao kv get secret/gitlab/bootstrap/admin_token)",
            f"  OpenBao login:  {openbao_login(phase2)}",
            "  every one:      uv run blueprint secrets   (what each is, and its OpenBao path; --show NAME prints its value)",
            "",
            "On this laptop, once:",
            f"  /etc/hosts:     127.0.0.1 {' '.join(hosts)}",
            *trust_ca_lines(phase2.get(outputs.CA_CERT_FILE), family),
        ]
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        said = (checked or {}).get(name)
        lines.append(f"  app {name}: {url}" + (f"  (/healthz from this laptop: {said})" if said is not None else ""))
    if any(said.startswith("unreachable") for said in (checked or {}).values()):
        lines.append("  an app unreachable from here: its name must resolve to 127.0.0.1 (the /etc/hosts line above)")
    if tally is not None:
        lines.append(tally)
    if phase1 and not phase2:
        cluster = phase1.get(outputs.CLUSTER_NAME)
        # A file of its own: `blueprint kubeconfig --output` refuses a kubeconfig that holds other clusters.
        lines.append(f"  kind cluster: {cluster} (for kubectl: uv run blueprint kubeconfig --output ~/.kube/blueprint)")
    return "\n".join(lines)


def trust_ca_lines(ca_file: object, family: OsFamily | None) -> list[str]:
    """The summary's "trust the CA" lines: the exact command for this machine's OS `family` with the
    CA's real path (two in WSL2: the distro's, and Windows' for its browsers); without a known
    family, the path and where the README lists the commands.
    """
    commands = os_family.ca_trust(family, str(ca_file)) if family is not None and ca_file else []
    if not commands:
        where = ca_file or "<dataDir>/platform/ca.crt"
        return [f"  trust the CA:   {where}   (README: 'Trust the platform CA' has the command for each system)"]
    return [f"  trust the CA:   {commands[0]}", *(f"                  {command}" for command in commands[1:])]


def root_password_command(phase2: Mapping[str, Any]) -> str:
    """The shell command that prints GitLab root's password from its file."""
    return f"cat {shlex.quote(str(phase2[outputs.GITLAB_ROOT_PASSWORD_FILE]))}"


def admin_token_command(phase2: Mapping[str, Any]) -> str:
    """The shell command that prints root's admin token: its file keeps it without GitLab's prefix."""
    return f'echo "{outputs.ADMIN_TOKEN_PREFIX}$(cat {shlex.quote(str(phase2[outputs.ADMIN_TOKEN_FILE]))})"'


def admin_token(phase2: Mapping[str, Any]) -> str:
    """Root's GitLab token, read from the file phase2's outputs name (no output holds it); an
    `outputs.SecretFileUnavailable` says which file is missing and what to run.
    """
    return outputs.read_admin_token(str(phase2[outputs.ADMIN_TOKEN_FILE]))


def openbao_login(phase2: Mapping[str, Any]) -> str:
    """The shell command that logs the OpenBao CLI in as `admin`, its password read from its file
    (stdin, so it never shows in a process list; the file ends with a newline, which is no part of it).
    """
    password_file = phase2[outputs.OPENBAO_ADMIN_PASSWORD_FILE]
    address = shlex.quote(str(phase2.get(outputs.OPENBAO_ADDR)))
    login = "uv run bao login -method=userpass username=admin password=-"
    return f"export BAO_ADDR={address}; tr -d '\\n' < {shlex.quote(str(password_file))} | {login}"


def glab_login(phase2: Mapping[str, Any], run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> str:
    """Log glab in to the platform with the admin token (on stdin), trusting our CA."""
    if not phase2:
        return "phase2 is not up: nothing to log glab in to"
    if shutil.which("glab") is None:
        return "glab is not installed: nothing to log in (get it: https://gitlab.com/gitlab-org/cli, then `uv run blueprint up` again)"
    host = str(phase2[outputs.GITLAB_URL]).split("://", 1)[-1]
    try:
        token = admin_token(phase2)
    except outputs.SecretFileUnavailable as error:
        return f"glab could not be logged in to {host}: {error}; the platform is up regardless"
    try:
        run(
            ["glab", "config", "set", "ca_cert", str(phase2[outputs.CA_CERT_FILE]), "--host", host],
            check=True,
            capture_output=True,
            text=True,
        )
        run(
            ["glab", "auth", "login", "--hostname", host, "--stdin"],
            input=token,
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as error:
        said = (error.stderr or error.stdout or "").strip().splitlines()
        return f"glab could not be logged in to {host} ({said[-1] if said else f'exit {error.returncode}'}); the platform is up regardless"
    return f"glab is logged in to {host} as root"


def status(
    runner: StackRunner,
    ask: Callable[[str, str, Mapping[str, str]], str] | None = None,
    image_cache: Callable[[Mapping[str, Any] | None], list[str]] | None = None,
) -> str:
    """Per phase whether it is up, the health of GitLab, OpenBao, the runners and the apps, and the
    image cache (`image_cache`: phase1's outputs, None when it is not up -> its lines; None: the real one).
    """
    ask = ask or probe
    image_cache = image_cache or _image_cache_status
    lines = []
    stack_outputs = {stack: runner.outputs(stack) for stack in PHASES["all"]}
    for stack, values in stack_outputs.items():
        recorded = (values or {}).get(outputs.BLUEPRINT_VERSION)
        lines.append(f"{stack}: {'not up' if values is None else 'up'}{f', by blueprint {recorded}' if recorded else ''}")
    phase2, phase3 = stack_outputs["phase2"] or {}, stack_outputs["phase3"] or {}
    if phase2:
        ca = str(phase2.get(outputs.CA_CERT_FILE))
        gitlab_url = str(phase2.get(outputs.GITLAB_URL))
        runners = f"groups/{phase2.get(outputs.APPS_GROUP_ID)}/runners?type=group_type"
        try:
            token: dict[str, str] | None = {"PRIVATE-TOKEN": admin_token(phase2)}
        except outputs.SecretFileUnavailable as error:
            token, missing = None, str(error)
        lines.append(f"  GitLab:  {ask(f'{gitlab_url}/api/v4/version', ca, token) if token else f'unknown: {missing}'}")
        lines.append(f"  OpenBao: {ask(f'{phase2.get(outputs.OPENBAO_ADDR)}/v1/sys/seal-status', ca, {})}")
        online = ask(f"{gitlab_url}/api/v4/{runners}&status=online", ca, token) if token else "unknown: no admin token (above)"
        lines.append(f"  Runners: {online}")
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        lines.append(f"  app {name}: {ask(f'{url}/healthz', str(phase2.get(outputs.CA_CERT_FILE)), {})}")
    lines += image_cache(stack_outputs["phase1"])
    return "\n".join(lines)


def _image_cache_status(phase1: Mapping[str, Any] | None) -> list[str]:
    from cli.image_cache import docker_run, size_on_disk, status_lines
    from stacks.config import stack_config

    return status_lines(phase1, lambda: stack_config("phase1")[0], docker_run, size_on_disk)


def probe(url: str, ca_file: str, headers: Mapping[str, str], *, timeout: float = 10) -> str:
    """What `url` says, in a few words: "ok ...", "sealed"/"unsealed", "N online", "HTTP <status>",
    "unreachable (...)", or "unknown: ..." when our CA file, the only trust it uses, is missing.
    """
    import requests

    from providers.http import session

    if url.startswith("https://") and not os.path.isfile(ca_file):
        return f"unknown: the CA file {ca_file} is missing"  # no token goes where our CA cannot vouch
    try:
        response = session(ca_file=ca_file, headers=headers).get(url, timeout=timeout)
        body = response.json() if "json" in response.headers.get("Content-Type", "") else None
    except (requests.RequestException, ValueError) as error:
        return f"unreachable ({type(error).__name__})"
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    if isinstance(body, dict) and "sealed" in body:
        return "sealed" if body["sealed"] else "unsealed"
    if isinstance(body, dict) and "version" in body:
        return f"ok (GitLab {body['version']})"
    if isinstance(body, list):
        return f"{len(body)} online"
    return "ok"


KIND_TIMEOUT = 60
"""Seconds `kind get kubeconfig` may take (it lists the nodes and reads one file from one of them)."""


class KubeconfigError(Exception):
    """An expected condition that stops `blueprint kubeconfig`; the message names it and its fix."""


def _bring_up(stack: str) -> str:
    return "uv run blueprint up --phase 1" if stack == "phase1" else f"pulumi up -s {shlex.quote(stack)}"


def kubeconfig_cluster(runner: StackRunner, stack: str) -> tuple[str, str]:
    """The name of the kind cluster `stack` made, and where that name comes from: the stack's output
    `clusterName` when the stack is up, else what its config would name it.
    """
    values = runner.outputs(stack)
    if values and values.get(outputs.CLUSTER_NAME):
        return str(values[outputs.CLUSTER_NAME]), f"stack {stack}'s output {outputs.CLUSTER_NAME}"
    from stacks.config import NAMESPACE, stack_config

    config, secret = stack_config(stack)
    key = f"{NAMESPACE}:clusterName"
    if key in secret:
        # Its stand-in would be Pulumi.yaml's default: another stack's cluster, maybe.
        raise KubeconfigError(
            f"stack {stack} is not up, and its {key} is a secret in Pulumi.{stack}.yaml, which blueprint reads only through a "
            f"stack that is up: bring it up first (`{_bring_up(stack)}`), or run `kind get clusters` and "
            f"`kind get kubeconfig --name <cluster>` yourself"
        )
    return config[key], f"stack {stack} is not up: the name its config gives ({key}, Pulumi.{stack}.yaml or Pulumi.yaml's default)"


def kind_kubeconfig(cluster: str, stack: str) -> str:
    """The admin kubeconfig of the kind cluster `cluster`, as `kind get kubeconfig` prints it (its
    server is the host's end of the pinned apiServerPort), or a KubeconfigError with the fix.
    """
    argv = ["kind", "get", "kubeconfig", "--name", cluster]
    command = shlex.join(argv)
    kind = shutil.which("kind")
    if kind is None:
        raise KubeconfigError(
            "blueprint kubeconfig asks kind for the cluster's kubeconfig, and there is no `kind` on PATH; "
            "fix: `uv run blueprint doctor --fix` installs it as ~/.local/bin/kind (put ~/.local/bin on PATH)"
        )
    try:
        done = subprocess.run([kind, *argv[1:]], capture_output=True, text=True, timeout=KIND_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise KubeconfigError(f"`{command}` did not answer within {KIND_TIMEOUT}s: check Docker (`docker info`), then run again") from None
    except OSError as error:
        raise KubeconfigError(f"`{command}` could not run: {error}; fix: `uv run blueprint doctor --fix` installs kind") from None
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout
    said = " ".join((done.stderr or done.stdout or "").split())[-500:] or f"exit {done.returncode}, nothing printed"
    # kind found no node labelled for the cluster: Docker answered, the cluster is not there
    # (kubernetes-sigs/kind pkg/cluster/internal/kubeconfig/kubeconfig.go, `get`).
    if "could not locate any control plane nodes" in said:
        raise KubeconfigError(
            f"kind has no cluster named {cluster} (`kind get clusters` lists the ones there are): stack {stack} is not up; "
            f"fix: bring it up with `{_bring_up(stack)}`, then run this again"
        )
    # Else ask Docker itself, as `blueprint doctor` does, for its fix on this OS.
    from cli.doctor import DOCKER_ENGINE, RealMachine, _docker_checks

    docker = next((check for check in _docker_checks(RealMachine()) if not check.ok), None)
    if docker is not None:
        where = "Docker" if docker.name == DOCKER_ENGINE else "the Docker CLI"
        raise KubeconfigError(f"`{command}` failed, and {where} does not answer ({docker.found}); fix: {docker.fix}, then run this again")
    raise KubeconfigError(f"`{command}` failed: {said}")


def _others_in_kubeconfig(path: Path, cluster: str) -> list[str] | None:
    """What writing over the regular file `path` would lose: the names of the clusters, contexts and
    users it holds besides kind's `kind-<cluster>` ([] for an empty file or a kubeconfig of that
    cluster alone), or None when it is not a kubeconfig (`kind: Config`) at all.
    """
    import yaml

    try:
        text = path.read_text()
        document = yaml.safe_load(text) if text.strip() else {"kind": "Config"}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(document, dict) or document.get("kind") != "Config":
        return None
    lists = [document.get(key) or [] for key in ("clusters", "contexts", "users")]
    entries = [entry for listed in lists if isinstance(listed, list) for entry in listed]
    if not all(isinstance(listed, list) for listed in lists) or not all(
        isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in entries
    ):
        return None  # not what kubectl reads as a kubeconfig: nothing here can tell what writing over it loses
    return sorted({entry["name"] for entry in entries} - {f"kind-{cluster}"})


def write_kubeconfig(path: Path, text: str, cluster: str) -> None:
    """Write `text` to `path`, mode 0600 from its first byte: a new file beside it, renamed over it.
    Refuses a folder, a link, a file that is not a kubeconfig, and a kubeconfig that holds any other
    cluster than kind's `kind-<cluster>` (writing over it would lose their credentials).
    """
    if path.is_symlink():
        raise KubeconfigError(f"--output {path} is a symbolic link; give the path of a file (blueprint does not write through links)")
    if path.is_dir():
        raise KubeconfigError(f"--output {path} is a folder; give the path of a file in it, such as {path / 'kubeconfig'}")
    if path.exists():
        others = _others_in_kubeconfig(path, cluster) if path.is_file() else None
        if others is None:
            raise KubeconfigError(
                f"--output {path} exists and is not a kubeconfig; blueprint writes over a kubeconfig only: give another path"
            )
        if others:
            raise KubeconfigError(
                f"--output {path} holds other clusters, contexts or users ({', '.join(others)}), which writing over it would "
                f"lose; give another path (kubectl reads several: KUBECONFIG=<that path>:{shlex.quote(str(path))})"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600 whatever the umask; the rename then replaces any older one at once.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def kubeconfig(runner: StackRunner, stack: str, output: str | None, out: TextIO, note: TextIO) -> int:
    """`blueprint kubeconfig`: the admin (cluster-admin) kubeconfig of `stack`'s kind cluster, printed
    on `out`, or written to the file `output`; what it is and where its name came from goes to `note`.
    """
    try:
        cluster, source = kubeconfig_cluster(runner, stack)
        text = kind_kubeconfig(cluster, stack)
        if output is None:
            out.write(text)
            note.write(f"the admin kubeconfig of kind cluster {cluster} ({source}); it is cluster-admin: keep it private\n")
            return 0
        path = Path(output).expanduser().absolute()
        try:
            write_kubeconfig(path, text, cluster)
        except OSError as error:
            raise KubeconfigError(f"cannot write --output {output}: {error.strerror or error}; give a path you can write to") from None
    except KubeconfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out.write(
        f"wrote the admin kubeconfig of kind cluster {cluster} ({source}) to {path}, mode 0600: it is cluster-admin, keep it private.\n"
        f"Use it: KUBECONFIG={shlex.quote(str(path))} kubectl get nodes\n"
    )
    return 0


def _confirmer(yes: bool) -> Callable[[str], bool]:
    """`--yes` answers yes; a terminal asks; with neither, the answer is no."""

    def confirm(question: str) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            return False
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    return confirm


def main_for(args: Any, runner: StackRunner | None = None, out: TextIO | None = None) -> int:
    """Dispatch a parsed `up`, `preview`, `destroy`, `status` or `kubeconfig` command. Without a `runner`, the real
    one, after a pre-flight of what Pulumi needs here. A Pulumi failure for an expected condition (no
    CLI, a state it cannot decrypt, a locked stack) ends in one message with its fix, not a traceback.
    """
    import cli.doctor as doctor
    import cli.explain as explain

    stream = out or sys.stdout  # the stdout of the call, not of the import, so captured output sees it
    if args.command == "preview":
        from stacks.validation import check_stack_files

        # What every selected phase reads, first (`up` has its doctor check it, with the machine):
        # a bad phase3 value stops the preview of phase1 too, and no tool is needed to say so.
        if (problem := check_stack_files(PHASES[args.phase])) is not None:
            print(problem, file=sys.stderr)
            return 1
    if runner is None:
        from cli import passphrase

        if weak := passphrase.weak_choice(os.environ):
            print(weak, file=sys.stderr)
        try:
            problem = doctor.preflight(args.command)
            pulumi_environment()  # makes, or checks, blueprint's passphrase file
        except passphrase.PassphraseFileError as error:
            problem = str(error)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
    chosen: StackRunner = runner or AutomationRunner()

    def explained(phase: str, stack: str, output: str, resume: str) -> str:
        known = doctor.pulumi_failure(output, project_dir=PROJECT_DIR, environ=os.environ)
        if known is not None:
            return known
        phase1 = chosen.outputs("phase1") or {}
        cluster = str(phase1.get(outputs.CLUSTER_NAME, "")) if phase1 else ""
        gathered = explain.gather(cluster) if cluster and explain.is_timeout(output) else None
        pods, events = gathered if gathered else (None, None)
        return explain.explain(phase, stack, output, pods, events, resume=resume, kind_cluster_name=cluster or None)

    def dispatch() -> int:
        if args.command == "status":
            stream.write(status(chosen) + "\n")
            return 0
        if args.command == "kubeconfig":
            return kubeconfig(chosen, args.stack, args.output, stream, sys.stderr)
        if args.command == "secrets":
            from cli import secrets

            return secrets.show(args.show, args.stack, chosen.outputs(args.stack), stream, sys.stderr)
        doctor_run = (lambda: doctor.run(["--phase", args.phase])) if args.command == "up" else None
        context = Context(runner=chosen, out=stream, doctor=doctor_run, explain=explained, confirm=_confirmer(getattr(args, "yes", False)))
        if args.command == "up":
            code = up(context, args.phase)
            if code == 0 and args.glab_login:
                context.say(glab_login(chosen.outputs("phase2") or {}))
            return code
        if args.command == "preview":
            return preview(context, args.phase)
        preserve = True if args.preserve_data else False if args.wipe_data else None
        return destroy(
            context, args.phase, preserve, cluster_gone=getattr(args, "cluster_gone", False), wipe_cache=getattr(args, "wipe_cache", False)
        )

    try:
        return dispatch()
    except Exception as error:
        from pulumi import automation as auto

        known = doctor.pulumi_failure(error, project_dir=PROJECT_DIR, environ=os.environ)
        if known is None and isinstance(error, auto.CommandError):
            known = f"Pulumi failed, and blueprint does not know this failure; what Pulumi said:\n{error}"
        if known is None:
            raise
        print(known, file=sys.stderr)
        return 1
