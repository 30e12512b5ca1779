"""`blueprint up | preview | destroy | status`: the stacks driven through Pulumi's Automation API.

The phases run in order (destroy in reverse), each a stack of this project on the local `file://`
backend (`.pulumi-state/`), with the passphrase from PULUMI_CONFIG_PASSPHRASE or the documented
local default. Pulumi's own progress is streamed as it comes. A failure names the phase and the
resource, explains Kubernetes timeouts with the pods that are not Ready, and gives the command that
resumes; every step is re-runnable.

Everything that talks to Pulumi goes through a `StackRunner`, so the command logic (phase order,
the preserveData recording, the summary) is tested without a Pulumi CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from stacks import outputs
from stacks.config import PROJECT_DIR

PHASES = {"1": ("phase1",), "2": ("phase2",), "3": ("phase3",), "all": ("phase1", "phase2", "phase3")}
DEFAULT_PASSPHRASE = "blueprint"
"""The documented local default (README): state stays on this laptop; set your own if you like,
the same for every stack."""


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


def pulumi_environment() -> dict[str, str]:
    """What every Pulumi command of blueprint runs with: the project's own backend and passphrase."""
    return {
        "PULUMI_BACKEND_URL": f"file://{PROJECT_DIR / '.pulumi-state'}",
        "PULUMI_CONFIG_PASSPHRASE": os.environ.get("PULUMI_CONFIG_PASSPHRASE", DEFAULT_PASSPHRASE),
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
        from pulumi import automation as auto

        self._stack(stack).set_config(key, auto.ConfigValue(value=value))

    def outputs(self, stack: str) -> dict[str, Any] | None:
        from pulumi import automation as auto

        try:
            selected = auto.select_stack(
                stack_name=stack,
                work_dir=str(PROJECT_DIR),
                opts=auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment()),
            )
        except auto.CommandError:
            return None
        return {key: value.value for key, value in selected.outputs().items()}


@dataclass(frozen=True, kw_only=True)
class Context:
    runner: StackRunner
    out: TextIO = sys.stdout
    doctor: Callable[[], int] | None = None
    """Run before `up`; a non-zero result stops it."""
    explain: Callable[[str, str, str], str] | None = None
    """(phase, stack, Pulumi's output) -> what to tell the user."""

    def say(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()


def _phase_number(stack: str) -> str:
    return stack.removeprefix("phase")


def _failed(context: Context, failure: StackFailed, verb: str) -> int:
    if context.explain is not None:
        context.say(context.explain(_phase_number(failure.stack), failure.stack, failure.output))
    else:
        context.say(f"{verb} of {failure.stack} failed; resume with `uv run blueprint {verb} --phase {_phase_number(failure.stack)}`.")
    return 1


def _in_order(context: Context, phase: str, verb: str, action: Callable[[str, Callable[[str], None]], None]) -> int:
    """Run `action` on the phase's stacks in order; stop at the first failure, explained."""
    for stack in PHASES[phase]:
        context.say(f"== {stack}: pulumi {verb}")
        try:
            action(stack, context.say)
        except StackFailed as failure:
            return _failed(context, failure, verb)
    return 0


def up(context: Context, phase: str) -> int:
    if context.doctor is not None and context.doctor() != 0:
        context.say("blueprint doctor found what a real run needs and this machine lacks (above); fix it and run `blueprint up` again.")
        return 1
    code = _in_order(context, phase, "up", context.runner.up)
    if code == 0:
        context.say(summary({stack: context.runner.outputs(stack) or {} for stack in PHASES["all"]}))
    return code


def preview(context: Context, phase: str) -> int:
    return _in_order(context, phase, "preview", context.runner.preview)


def destroy(context: Context, phase: str, preserve: bool | None) -> int:
    """Destroy in reverse order. A preserveData choice is recorded first, by an `up` of phase1 and
    of phase2 (which takes the flag from phase1), since Pulumi destroys what the state records; if
    recording fails half-way, phase1 is put back, so the stacks never disagree.
    """
    stacks = tuple(reversed(PHASES[phase]))
    existing = {stack: values for stack in PHASES["all"] if (values := context.runner.outputs(stack)) is not None}
    if preserve is not None and "phase1" in existing:
        before = str(bool(existing["phase1"].get(outputs.PRESERVE_DATA))).lower()
        context.say(f"== recording preserveData={str(preserve).lower()} before the destroy")
        context.runner.set_config("phase1", "blueprint:preserveData", str(preserve).lower())
        for stack in ("phase1", "phase2"):
            if stack not in existing:
                continue
            try:
                context.runner.up(stack, context.say)
            except StackFailed as failure:
                context.say(f"== putting preserveData={before} back on phase1, so the stacks agree")
                context.runner.set_config("phase1", "blueprint:preserveData", before)
                if stack != "phase1":
                    context.runner.up("phase1", context.say)
                return _failed(context, failure, "up")
    keep = preserve if preserve is not None else bool((existing.get("phase1") or {}).get(outputs.PRESERVE_DATA))
    env: dict[str, str] = {}
    if not _cluster_runs(existing.get("phase1")):
        # Nothing in the cluster can be deleted any more: let Pulumi forget it instead of failing.
        env["PULUMI_K8S_DELETE_UNREACHABLE"] = "true"
    for stack in stacks:
        if stack not in existing:
            context.say(f"== {stack}: not up, nothing to destroy")
            continue
        if stack == "phase3" and keep:
            # Its group and projects live in GitLab's preserved database: keeping the stack's state
            # lets the next `up` find them as they are (and run the apps again on the new cluster).
            context.say("== phase3: kept (preserveData=true): its projects stay in GitLab's data")
            continue
        context.say(f"== {stack}: pulumi destroy")
        try:
            context.runner.destroy(stack, context.say, env)
        except StackFailed as failure:
            return _failed(context, failure, "destroy")
    return 0


def _cluster_runs(phase1: Mapping[str, Any] | None) -> bool:
    if not phase1 or shutil.which("kind") is None:
        return True  # cannot tell: keep Pulumi's default, which refuses to forget anything
    listed = subprocess.run(["kind", "get", "clusters"], capture_output=True, text=True, check=False, timeout=30)
    return str(phase1.get(outputs.CLUSTER_NAME)) in listed.stdout.split()


def summary(outputs_by_stack: Mapping[str, Mapping[str, Any]]) -> str:
    """What the user needs after an `up`: where things are, where the credentials are (never the
    credentials themselves), and the laptop-side steps left.
    """
    phase1, phase2, phase3 = (outputs_by_stack.get(stack) or {} for stack in ("phase1", "phase2", "phase3"))
    lines = ["", "blueprint is up."]
    if phase2:
        gitlab_url = str(phase2.get(outputs.GITLAB_URL, ""))
        domain = gitlab_url.split("://", 1)[-1].split(".", 1)[-1]
        hosts = [f"gitlab.{domain}", f"registry.{domain}", f"kas.{domain}"]
        hosts += [str(url).split("://", 1)[-1] for url in (phase3.get(outputs.APP_URLS) or {}).values()]
        lines += [
            f"  GitLab:    {gitlab_url}  (user root)",
            f"  Registry:  {phase2.get(outputs.REGISTRY_HOST)}",
            f"  OpenBao:   {phase2.get(outputs.OPENBAO_ADDR)}",
            "",
            "Credentials (kept in OpenBao under secret/, and as stack outputs):",
            "  root password:  pulumi stack output -s phase2 gitlabRootPassword --show-secrets   (or secret/gitlab/root)",
            "  admin token:    pulumi stack output -s phase2 adminToken --show-secrets           (or secret/gitlab/bootstrap/admin_token)",
            "  OpenBao token:  pulumi stack output -s phase2 openbaoRootToken --show-secrets",
            "  data services:  bao kv get secret/postgres/gitlab | secret/postgres/openbao | secret/redis | secret/minio",
            "",
            "On this laptop, once:",
            f"  /etc/hosts:     127.0.0.1 {' '.join(hosts)}",
            f"  trust the CA:   {phase2.get(outputs.CA_CERT_FILE)}   (README: 'Trust the platform CA')",
        ]
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        lines.append(f"  app {name}: {url}")
    if phase1 and not phase2:
        cluster = phase1.get(outputs.CLUSTER_NAME)
        lines.append(f"  kind cluster: {cluster} (for kubectl: kind export kubeconfig --name {cluster})")
    return "\n".join(lines)


def glab_login(phase2: Mapping[str, Any], run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> str:
    """Log glab in to the platform with the admin token (on stdin), trusting our CA."""
    if not phase2:
        return "phase2 is not up: nothing to log glab in to"
    if shutil.which("glab") is None:
        return "glab is not installed; skipping --glab-login (https://gitlab.com/gitlab-org/cli)"
    host = str(phase2[outputs.GITLAB_URL]).split("://", 1)[-1]
    run(["glab", "config", "set", "ca_cert", str(phase2[outputs.CA_CERT_FILE]), "--host", host], check=True, capture_output=True, text=True)
    run(
        ["glab", "auth", "login", "--hostname", host, "--stdin"],
        input=str(phase2[outputs.ADMIN_TOKEN]),
        check=True,
        capture_output=True,
        text=True,
    )
    return f"glab is logged in to {host} as root"


def status(runner: StackRunner, probe: Callable[[str, str, Mapping[str, str]], str] | None = None) -> str:
    """Per phase whether it is up, and the health of GitLab, OpenBao, the runner and the apps."""
    probe = probe or _probe
    lines = []
    stack_outputs = {stack: runner.outputs(stack) for stack in PHASES["all"]}
    for stack, values in stack_outputs.items():
        lines.append(f"{stack}: {'not up' if values is None else 'up'}")
    phase2, phase3 = stack_outputs["phase2"] or {}, stack_outputs["phase3"] or {}
    if phase2:
        ca = str(phase2.get(outputs.CA_CERT_FILE))
        token = {"PRIVATE-TOKEN": str(phase2.get(outputs.ADMIN_TOKEN))}
        gitlab_url = str(phase2.get(outputs.GITLAB_URL))
        lines.append(f"  GitLab:  {probe(f'{gitlab_url}/api/v4/version', ca, token)}")
        lines.append(f"  OpenBao: {probe(f'{phase2.get(outputs.OPENBAO_ADDR)}/v1/sys/seal-status', ca, {})}")
        lines.append(f"  Runner:  {probe(f'{gitlab_url}/api/v4/runners/all?type=instance_type&status=online', ca, token)}")
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        lines.append(f"  app {name}: {probe(f'{url}/healthz', str(phase2.get(outputs.CA_CERT_FILE)), {})}")
    return "\n".join(lines)


def _probe(url: str, ca_file: str, headers: Mapping[str, str]) -> str:
    import requests

    try:
        response = requests.get(url, headers=dict(headers), verify=ca_file if os.path.exists(ca_file) else True, timeout=10)
    except requests.RequestException as error:
        return f"unreachable ({type(error).__name__})"
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    body = response.json() if "json" in response.headers.get("Content-Type", "") else None
    if isinstance(body, dict) and "sealed" in body:
        return "sealed" if body["sealed"] else "unsealed"
    if isinstance(body, dict) and "version" in body:
        return f"ok (GitLab {body['version']})"
    if isinstance(body, list):
        return f"{len(body)} online"
    return "ok"


def main_for(args: Any, runner: StackRunner | None = None, out: TextIO = sys.stdout) -> int:
    """Dispatch a parsed `up`, `preview`, `destroy` or `status` command."""
    runner = runner or AutomationRunner()
    if args.command == "status":
        out.write(status(runner) + "\n")
        return 0
    import cli.doctor as doctor
    import cli.explain as explain

    def explained(phase: str, stack: str, output: str) -> str:
        phase1 = runner.outputs("phase1") or {}
        cluster = str(phase1.get(outputs.CLUSTER_NAME, "")) if phase1 else ""
        gathered = explain.gather(cluster) if cluster and explain.is_timeout(output) else None
        pods, events = gathered if gathered else (None, None)
        return explain.explain(phase, stack, output, pods, events)

    context = Context(runner=runner, out=out, doctor=(lambda: doctor.run([])) if args.command == "up" else None, explain=explained)
    if args.command == "up":
        code = up(context, args.phase)
        if code == 0 and args.glab_login:
            context.say(glab_login(runner.outputs("phase2") or {}))
        return code
    if args.command == "preview":
        return preview(context, args.phase)
    preserve = True if args.preserve_data else False if args.wipe_data else None
    return destroy(context, args.phase, preserve)
