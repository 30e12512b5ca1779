"""`blueprint doctor`: is this machine ready for a real `pulumi up`?

Every prerequisite in docs/guide/bring-up.md "Prerequisites" becomes one pass/fail line with the exact fix, so
a first run fails here, in a second, rather than twenty minutes into phase2. The checks only talk to
the machine through the small `Machine` protocol (cli/doctor/machine.py), so the tests run them
against a fake one. Docker's checks are in cli/doctor/docker.py, the others in cli/doctor/checks.py,
what the platform needs of Docker in cli/doctor/needs.py. With `blueprint:cluster=existing` the
machine runs no cluster: the doctor checks its tools and the existing cluster (cli/doctor/cluster.py).

`--fix` (cli/doctor/fixes.py) installs what needs no root (kind and kubectl, and Pulumi once versions.py
pins its SHA-256, into blueprint's own folders under ~/.local/share/blueprint) without asking, each
download checked against the SHA-256 versions.py pins (cli/doctor/install.py), where blueprint finds it
with no PATH step (cli/tools_path.py); what needs root or the system's package manager (Docker, the
docker group, the inotify limits) it does with the exact commands of the detected OS family
(cli/os_family.py), once the user agrees. Ports, memory and the names are the user's call: it says what
to do.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from cli.doctor import checks, fixes
from cli.doctor.checks import CACHE_SPACE, CONFIG, PULUMI_MIN_VERSION, Check, image_cache_checks
from cli.doctor.cluster import CONTEXT as CLUSTER_CONTEXT
from cli.doctor.cluster import cluster_checks
from cli.doctor.docker import docker_checks
from cli.doctor.machine import Machine, RealMachine, machine_family
from cli.doctor.needs import Needs, default_needs, resources_needed
from cli.doctor.podman import podman_checks, shared_folders_check
from cli.tools_path import tools_on_path
from components.engine import DOCKER, PODMAN, chosen

if TYPE_CHECKING:  # the config imports pulumi, which `--help` should not wait for
    from stacks.config.cluster import ClusterConfig

__all__ = ["existing_cluster_checks", "machine_checks", "run"]

_WSL_NOTE = "; on Windows, run blueprint inside WSL2, the supported way"

NAMES_NEEDED_BY = frozenset({"phase2", "phase3", "dev"})
"""The stacks that call GitLab from this machine through the gateway, and so need the platform's names to
resolve to 127.0.0.1 (the /etc/hosts line); phase1 only makes the cluster."""


def machine_checks(
    machine: Machine,
    *,
    ports: Mapping[str, int],
    needs: Needs,
    pulumi_min_version: str,
    stack: str = "phase1",
    cluster_name: str | None = None,
    names: Sequence[str] = (),
    engine: str = DOCKER,
) -> list[Check]:
    """Every prerequisite of a real run, in the bring-up guide's order. `ports` maps full config keys to host
    ports ("blueprint:httpsPort": 443); `stack` is the stack whose config sets them, for the
    `pulumi config set` fix; a port published by `cluster_name`'s own node counts as free; `needs`
    is what the config needs of Docker (`resources_needed`); `engine` is the container engine kind runs on.
    """
    result = podman_checks(machine) if engine == PODMAN else docker_checks(machine, machine_family(machine))
    result += [
        checks.kind_check(machine, engine),
        checks.pulumi_check(machine, pulumi_min_version),
        checks.kubectl_check(machine),
        checks.uv_check(machine),
    ]
    result += [checks.port_check(machine, key, port, stack, cluster_name, engine) for key, port in ports.items()]
    result += [checks.memory_check(machine, needs, engine), checks.cpu_check(machine, needs, engine)]
    if names:
        result.append(checks.names_check(machine, names))
    if machine.system == "linux":
        result.append(checks.inotify_check(machine))
        result.append(checks.userns_check(machine, engine))
    return _for_this_user(machine, result)


def existing_cluster_checks(
    machine: Machine, cluster: ClusterConfig | None, *, pulumi_min_version: str, stack: str = "phase1", domain: str = ""
) -> list[Check]:
    """The prerequisites of a run onto an existing cluster (`blueprint:cluster=existing`): the tools this
    machine runs, and the cluster's own checks (cli/doctor/cluster.py); `cluster` None: its context is
    a secret, not known here. No engine, kind, port, memory or name of this machine matters then: the
    platform runs on the cluster.
    """
    result = [checks.pulumi_check(machine, pulumi_min_version), checks.uv_check(machine)]
    if cluster is None:
        unknown = "not checked: blueprint:kubeContext is a secret, so not known here"
        return _for_this_user(machine, [*result, Check(name=CLUSTER_CONTEXT, ok=True, found=unknown)])
    return _for_this_user(machine, [*result, *cluster_checks(machine, cluster, stack=stack, domain=domain)])


def _for_this_user(machine: Machine, result: list[Check]) -> list[Check]:
    """`result` as this user reads it: WSL's note on Windows, and root's commands without `sudo`."""
    if machine.system == "windows":
        result = [check if check.ok else replace(check, found=check.found + _WSL_NOTE) for check in result]
    if machine.uid() == 0:
        result = [_as_root(check) for check in result]
    return result


_SUDO = re.compile(r"(`|\| )sudo ")
"""`sudo` where a fix's text starts a command with it: at a backtick, or after a pipe."""


def _as_root(check: Check) -> Check:
    """`check` for a doctor run as root (`sudo blueprint doctor`, a container's root): its commands and
    their text without `sudo`, which root does not need and a container may not have.
    """
    return replace(
        check,
        commands=tuple(command.as_root() for command in check.commands),
        fix=_SUDO.sub(r"\1", check.fix),
        advice=_SUDO.sub(r"\1", check.advice),
    )


def _print_checks(results: list[Check], out: TextIO) -> None:
    width = max(len(check.name) for check in results)
    for check in results:
        out.write(f"{'FAIL' if not check.ok else 'WARN' if check.advice else 'PASS'}  {check.name:<{width}}  {check.found}\n")
        if not check.ok or check.advice:
            fix = (check.fix or check.advice).replace("\n", "\n           ")
            out.write(f"      {'fix' if check.to_fix else 'if it does'}: {fix}\n")
    failed = [check.name for check in results if not check.ok]
    if failed:
        out.write(f"{len(failed)} of {len(results)} checks failed: {', '.join(failed)}\n")
    else:
        out.write(f"all {len(results)} checks passed: ready for `pulumi up`\n")


def platform_names(domain: str) -> tuple[str, ...]:
    """The names the laptop must resolve: GitLab's, the registry's, KAS's, and every app's."""
    from apps_manifest import ManifestError, host_names, load_manifest

    try:
        return host_names(domain, load_manifest(files=False))
    except ManifestError:
        return host_names(domain, [])


def config_check(stacks: Sequence[str]) -> Check:
    """Everything the `stacks` read (each one's config, the apps manifest), checked in one pass."""
    from stacks.validation import check_stack_files

    checked = f"the config of {', '.join(stacks)}{' and the apps manifest' if list(stacks) != ['phase1'] else ''}"
    problem = check_stack_files(stacks)
    if problem is None:
        return Check(name=CONFIG, ok=True, found=f"{checked}: valid")
    return Check(name=CONFIG, ok=False, found=f"{checked}: {problem.splitlines()[0]}", fix="\n".join(problem.splitlines()[1:]))


def _all_checks(machine: Machine, stacks: Sequence[str]) -> list[Check]:
    # The folders `--fix` installs into, first on PATH as the CLI puts them at its start: again after
    # a `--fix`, which may have made them, so its checking again finds what it installed.
    tools_on_path(machine.environ(), machine.home())
    # Imported here: the config code imports pulumi, which `--help` should not wait for.
    from stacks.config import NAMESPACE, ConfigError
    from stacks.config.phases import parse_phase1
    from stacks.config.schema import stack_config

    # The machine's checks read the cluster's settings: phase1's, or dev's own.
    stack = "dev" if "dev" in stacks else "phase1"
    stacks_checked = config_check(stacks)
    prefix = f"{NAMESPACE}:"
    try:
        values, secret = stack_config(stack)
        raw = {key.removeprefix(prefix): value for key, value in values.items() if key.startswith(prefix)}
        hidden = frozenset(key.removeprefix(prefix) for key in secret)
        config = parse_phase1(raw, secret_keys=hidden, stack=stack, stand_ins=hidden)
    except ConfigError:
        # Said by the config check when `stack` is selected; else only a note: phase2 and phase3 do not read it.
        engine = chosen("", lambda argv: machine.run(argv, timeout=20))
        found = machine_checks(machine, ports={}, needs=default_needs(), pulumi_min_version=PULUMI_MIN_VERSION, engine=engine)
        unchecked = f"not checked: Pulumi.{stack}.yaml is invalid (`uv run blueprint doctor --stack {stack}` says why)"
        note = [] if stack in stacks else [Check(name=f"ports, names, sizes of {stack}", ok=True, found=unchecked)]
        return [*found, *note, stacks_checked]
    if config.cluster.existing:
        known = None if f"{prefix}kubeContext" in secret else config.cluster
        return [
            *existing_cluster_checks(machine, known, pulumi_min_version=PULUMI_MIN_VERSION, stack=stack, domain=config.domain),
            stacks_checked,
        ]
    ports = {
        f"{prefix}httpPort": config.ports.http,
        f"{prefix}httpsPort": config.ports.https,
        f"{prefix}sshPort": config.ports.ssh,
        f"{prefix}openbaoPort": config.ports.openbao,
        f"{prefix}apiServerPort": config.ports.api_server,
    }
    # A port set as a secret is not known here (its stand-in is the default): not checked, and said so.
    unknown = sorted(key for key in ports if key in secret)
    ports = {key: port for key, port in ports.items() if key not in secret}
    found = machine_checks(
        machine,
        ports=ports,
        needs=resources_needed(gitlab_nodes=config.gitlab_nodes, runner_nodes=config.runner_nodes, headlamp=config.headlamp),
        pulumi_min_version=PULUMI_MIN_VERSION,
        stack=stack,
        names=platform_names(config.domain) if any(name in NAMES_NEEDED_BY for name in stacks) else (),
        cluster_name=config.cluster_name,
        engine=(engine := chosen(config.cluster.container_engine, lambda argv: machine.run(argv, timeout=20))),
    )
    if engine == PODMAN and machine.system == "darwin":
        mounted = [config.data_dir, *([config.image_cache_dir] if config.image_cache_dir else [])]
        found.append(shared_folders_check(machine, [str(folder) for folder in mounted]))
    if unknown:
        found.append(Check(name="secret ports", ok=True, found=f"{', '.join(unknown)}: not checked (secret, so not known here)"))
    if stack in stacks:  # the stack that runs the image cache's mirrors is selected
        if f"{prefix}imageCacheDir" in secret:
            unknown_folder = "not checked: blueprint:imageCacheDir is a secret, so not known here"
            found.append(Check(name=CACHE_SPACE, ok=True, found=unknown_folder))
        else:
            found += image_cache_checks(machine, config.image_cache_dir, stack)
    return [*found, stacks_checked]


def _fix_command(stacks: Sequence[str]) -> str:
    """`doctor --fix --yes` for the `stacks` this doctor was given: with `--phase N` or `--stack S` as they were."""
    from stacks import PHASE_STACKS

    chosen = next((f" --phase {phase}" for phase, phases in PHASE_STACKS.items() if list(phases) == list(stacks)), None)
    chosen = (chosen or f" --stack {stacks[0]}").removesuffix(" --phase all")
    return f"{fixes.AGAIN.removesuffix(' --fix')}{chosen} --fix --yes"


def run(
    stacks: Sequence[str],
    *,
    fix: bool = False,
    yes: bool = False,
    machine: Machine | None = None,
    out: TextIO | None = None,
    terminal: bool | None = None,
    ask: Callable[[str], str] = fixes.ask,
    run_command: fixes.Execute = fixes.execute,
) -> int:
    """`blueprint doctor`: check what `stacks` need, and with `fix`, fix what it can (`yes`: run the
    OS family's commands without asking), then check again; 1 when any check fails, 0 otherwise.
    `out` defaults to the sys.stdout of the call, not of the import, so captured output (pytest,
    redirects) sees it. `terminal` (default: whether stdin is one) says whether `--fix` may ask.
    """
    if yes and not fix:
        # `--yes` answers the question `--fix` asks before it runs the OS family's commands: alone it would
        # be ignored, and a script that meant `--fix --yes` would pass without anything fixed.
        said = f"--yes is for --fix (it runs the fix's commands without asking), and was given without it: run `{_fix_command(stacks)}`"
        print(f"error: {said}, or leave --yes out to only check", file=sys.stderr)
        return 2
    out = out or sys.stdout
    machine = machine or RealMachine()
    stacks = list(stacks)
    family = machine_family(machine)
    out.write(f"system: {family.label}\n")
    results = _all_checks(machine, stacks)
    _print_checks(results, out)
    failed = [check for check in results if not check.ok]
    to_fix = [check for check in results if check.to_fix]
    if not fix or not to_fix:
        return 1 if failed else 0
    if not fixes.apply(to_fix, machine, family, out, yes=yes, terminal=terminal, ask=ask, run=run_command):
        return 1
    out.write("\nchecking again:\n")
    results = _all_checks(machine, stacks)
    _print_checks(results, out)
    return 1 if any(not check.ok for check in results) else 0
