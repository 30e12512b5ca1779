"""`blueprint verify`: the promises of a running platform (docs/guide/verify.md lists them, and those
not checked yet), checked read-only from this laptop, one verdict each (pass, warn, fail, skip), the failed ones with their fix; a report a
user can paste into a bug report (`--json`, its shape in cli/verify/report.schema.json).

The checks are in cli/verify/checks.py (machine, stacks, cluster), services.py (TLS, OpenBao), data.py
(PostgreSQL, Valkey, MinIO) and gitlab.py (GitLab, Runners, pipelines, apps, Headlamp); cli/verify/model.py runs them in parallel,
each under its own timeout, skipping those whose need failed.
"""

from __future__ import annotations

import datetime
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from cli.doctor.machine import Machine
from cli.verify import checks, data, gitlab, restart, services
from cli.verify.checks import Platform, stack_check
from cli.verify.model import DEADLINE, FAIL, Result, Spec, Verdict, failed, run_all, tally
from cli.verify.report import NO_ENGINE, Secrets, gathering, report, to_json, to_table
from stacks import PHASE_STACKS

__all__ = ["Platform", "run", "specs", "verify"]


def _stack_verdict(platform: Platform, stack: str, phases: tuple[str, ...]) -> Verdict:
    """The stack's check; a Pulumi failure blueprint knows (a passphrase, a lock) is its message and fix."""
    from cli.stack_runner import pulumi_failure
    from stacks.config import PROJECT_DIR

    try:
        return checks.stack_up_check(platform, stack, phases)
    except Exception as error:
        known = pulumi_failure(error, project_dir=PROJECT_DIR, environ=os.environ)
        if known is None:
            raise
        saw, _, fix = known.partition("\n")
        return failed(saw, fix.strip() or "docs/guide/troubleshooting.md")


def specs(platform: Platform, *, dev: bool = False) -> list[tuple[str, Spec]]:
    """Every check, with the phase whose promise it checks. `dev`: one stack, `dev`, holds every phase."""
    stack = {phase: stack_check("dev" if dev else phase) for phase in PHASE_STACKS["all"]}
    on = functools.partial
    pulumi, seconds = (checks.PULUMI_CLI,), checks.STACK_SECONDS
    stacks = (
        [("phase1", Spec(name=stack["phase1"], run=on(_stack_verdict, platform, "dev", tuple(stack)), needs=pulumi, timeout=seconds))]
        if dev
        else [
            (phase, Spec(name=stack[phase], run=on(_stack_verdict, platform, phase, (phase,)), needs=pulumi, timeout=seconds))
            for phase in PHASE_STACKS["all"]
        ]
    )
    p1, p2, p3 = stack["phase1"], stack["phase2"], stack["phase3"]

    def both(*needs: str) -> tuple[str, ...]:  # one `stack dev` stands for every phase
        return tuple(dict.fromkeys(needs))

    # What reads phase1's outputs (its context, domain, SSH port, Headlamp) needs phase1's stack; apps
    # and the system store's trust each make their own requests, so one host's TLS failure skips neither.
    fast = [
        ("phase1", Spec(name=checks.ENGINE, run=on(checks.engine_check, platform))),
        ("phase1", Spec(name=checks.PULUMI_CLI, run=on(checks.pulumi_cli_check, platform))),
        *stacks,
        ("phase1", Spec(name=checks.NODES, run=on(checks.nodes_check, platform), needs=(p1,))),
        ("phase1", Spec(name=checks.IDENTITY, run=on(checks.identity_check, platform), needs=(p1,))),
        ("phase1", Spec(name=checks.IMAGE_CACHE, run=on(checks.image_cache_check, platform), needs=(p1,))),
        ("phase1", Spec(name=checks.NODES_USE_CACHE, run=on(checks.nodes_use_cache_check, platform), needs=(p1,))),
        ("phase2", Spec(name=checks.NAMES, run=on(checks.names_check, platform), needs=(p1,))),
        ("phase2", Spec(name=services.TLS, run=on(services.tls_check, platform), needs=(p2,))),
        ("phase2", Spec(name=services.CA_TRUST, run=on(services.ca_trust_check, platform), needs=(p2,))),
        ("phase2", Spec(name=services.OPENBAO, run=on(services.openbao_check, platform), needs=(p2,))),
        ("phase2", Spec(name=services.OPENBAO_LOGINS, run=on(services.openbao_logins_check, platform), needs=(services.OPENBAO,))),
        ("phase2", Spec(name=services.OPENBAO_KV, run=on(services.openbao_kv_check, platform), needs=(services.OPENBAO_LOGINS,))),
        ("phase2", Spec(name=services.OPENBAO_ROOT, run=on(services.openbao_root_check, platform), needs=(services.OPENBAO_LOGINS,))),
        ("phase2", Spec(name=data.POSTGRES, run=on(data.postgres_check, platform), needs=both(p1, p2))),
        ("phase2", Spec(name=data.VALKEY, run=on(data.valkey_check, platform), needs=both(p1, services.OPENBAO_LOGINS))),
        ("phase2", Spec(name=data.MINIO_BUCKETS, run=on(data.minio_buckets_check, platform), needs=both(p1, services.OPENBAO_LOGINS))),
        # A refusal means something only from a key that reaches its own buckets: a wrong key is refused everywhere.
        ("phase2", Spec(name=data.MINIO_USERS, run=on(data.minio_users_check, platform), needs=(data.MINIO_BUCKETS,))),
        ("phase2", Spec(name=services.GITLAB_API, run=on(gitlab.gitlab_api_check, platform), needs=(p2,))),
        ("phase2", Spec(name=services.GITLAB_TOKEN, run=on(gitlab.gitlab_token_check, platform), needs=(services.GITLAB_API,))),
        ("phase2", Spec(name=services.SSH, run=on(gitlab.ssh_check, platform), needs=both(p1, p2))),
        ("phase2", Spec(name=services.RUNNERS, run=on(gitlab.runners_check, platform), needs=(services.GITLAB_API,))),
        ("phase2", Spec(name=gitlab.REGISTRY_LOGIN, run=on(gitlab.registry_login_check, platform), needs=(services.GITLAB_API,))),
        ("phase2", Spec(name=services.HEADLAMP, run=on(gitlab.headlamp_check, platform), needs=both(p1, p2))),
        ("phase3", Spec(name=services.GITLAB_PROJECTS, run=on(gitlab.gitlab_projects_check, platform), needs=(services.GITLAB_API, p3))),
        ("phase3", Spec(name=services.CI_VARIABLES, run=on(gitlab.ci_variables_check, platform), needs=both(p1, services.GITLAB_PROJECTS))),
        ("phase3", Spec(name=services.PIPELINES, run=on(gitlab.pipelines_check, platform), needs=(services.GITLAB_PROJECTS,))),
        ("phase3", Spec(name=services.APPS, run=on(gitlab.apps_check, platform), needs=both(p2, p3))),
        ("phase3", Spec(name=gitlab.ROOT_PASSWORD, run=on(gitlab.root_password_check, platform), needs=(services.GITLAB_PROJECTS,))),
    ]
    return [*fast, *_deep_specs(platform, fast, "dev" if dev else "phase3")] if platform.deep else fast


def _deep_specs(platform: Platform, fast: Sequence[tuple[str, Spec]], projects_stack: str) -> list[tuple[str, Spec]]:
    """`--deep`'s checks: they change something (a commit, a pod restart) and take minutes;
    `projects_stack` made the app projects (its mark is on them).
    """
    on = functools.partial
    timed = Spec(
        name=gitlab.EDIT_TO_DEPLOYED,
        run=on(gitlab.deep_pipeline_check, platform, projects_stack),
        needs=(services.PIPELINES, services.APPS),
        timeout=gitlab.DEEP_TIMEOUT,
    )
    # OpenBao answers nothing while it restarts: after every other check, so it spoils none's answer;
    # beside the timed commit, which reads nothing from OpenBao (and would double the run).
    restarted = Spec(
        name=restart.OPENBAO_RESTART,
        run=on(restart.openbao_restart_check, platform),
        needs=(services.OPENBAO,),
        after=tuple(spec.name for _, spec in fast),
        timeout=restart.TIMEOUT,
        fix_on_timeout=f"`uv run blueprint status` says whether OpenBao is back; {restart.TROUBLESHOOTING}",
    )
    return [("phase3", timed), ("phase2", restarted)]


def chosen(all_specs: Sequence[tuple[str, Spec]], phase: str) -> list[Spec]:
    """The checks of `phase` (`--phase`'s 1, 2, 3 or all), and every check they need, in order."""
    by_name = {spec.name: spec for _, spec in all_specs}
    wanted = {spec.name for owner, spec in all_specs if phase in ("all", owner.removeprefix("phase"))}
    while needed := {need for name in wanted for need in by_name[name].needs} - wanted:
        wanted |= needed
    return [spec for _, spec in all_specs if spec.name in wanted]


def _engine(machine: Any) -> str:
    from components.engine import chosen as chosen_engine
    from stacks.config.schema import stack_config

    try:
        configured = stack_config("phase1")[0].get("blueprint:containerEngine", "")
    except Exception:  # a stack file that cannot be read: the engine detected
        configured = ""
    return chosen_engine(configured, lambda argv: machine.run(argv, timeout=10))


def _run(platform_: Platform, chosen_specs: Sequence[Spec], **deadline: float) -> list[Result]:
    """`run_all`, then what its checks kept for the run (OpenBao's tokens) ended: `Platform.close`."""
    try:
        return run_all(chosen_specs, **deadline)
    finally:
        platform_.close()


def verify(
    platform_: Platform,
    *,
    phase: str = "all",
    dev: bool = False,
    when: datetime.datetime | None = None,
    state_dir: Path | None = None,
    began: float | None = None,
) -> tuple[int, dict[str, Any]]:
    """Run the checks; (the exit code: 1 when any failed, the report, with the last bring-up's measured
    durations when an `up` recorded them under `state_dir`: the project's `.pulumi-state` by default).
    The deadline is the command's, from `began` (providers/poll.py's CLOCK; by default now): the
    engine's detection before, the checks, and the machine's facts gathered beside them.
    """
    from cli import timings
    from cli.status import _on_existing
    from providers import poll
    from stacks.config.paths import LOCAL_STATE_DIR

    until = (poll.CLOCK.now() if began is None else began) + deadline(platform_, phase, dev=dev)
    facts = gathering(platform_.machine, platform_.engine)
    results = _run(platform_, chosen(specs(platform_, dev=dev), phase), deadline=until - poll.CLOCK.now())
    now = when or datetime.datetime.now(datetime.UTC)
    machine = facts(until)
    if _on_existing(platform_.outputs.get("phase1")):
        machine.update(container_engine=NO_ENGINE, container_engine_version=None)
    document = report(results, machine, platform_.secrets, when=now)
    stacks = ("dev",) if dev else PHASE_STACKS["all"]
    if (measured := timings.measured(state_dir or LOCAL_STATE_DIR, stacks)) is not None:
        document["bring_up"] = measured
    return (1 if any(result.status == FAIL for result in results) else 0), document


SLOW = frozenset({services.OPENBAO_KV, services.OPENBAO_ROOT, services.PIPELINES})
"""What `blueprint up` leaves to `blueprint verify`: a login per token and a read per path, and the
pipelines, which the up's own summary tallies."""
DEEP = frozenset({restart.OPENBAO_RESTART, gitlab.EDIT_TO_DEPLOYED})
"""`--deep`'s checks: they change something and take minutes; never in `up`'s tally."""


def deadline(platform_: Platform, phase: str = "all", *, dev: bool = False) -> float:
    """Seconds the whole command may take: DEADLINE, and with `--deep` the longest timeout of the deep
    checks `phase` runs besides (none for `--phase 1`, which runs no deep check).
    """
    deep = [spec.timeout for spec in chosen(specs(platform_, dev=dev), phase) if spec.name in DEEP]
    return DEADLINE + max(deep, default=0.0)


def real_platform(runner: Callable[[], Any], machine: Machine | None = None) -> Platform:
    """The Platform of this machine: its tools, its stacks (`runner`, made when first needed), its network."""
    import ssl

    from cli.doctor.machine import RealMachine

    machine = machine or RealMachine()
    return Platform(
        machine=machine,
        runner=runner,
        ask=services.ask,
        secrets=Secrets(),
        engine=_engine(machine),
        dial=services.dial,
        system_trust=ssl.create_default_context,
    )


def fast_tally(platform_: Platform, phase: str) -> str:
    """The line `blueprint up` ends with: the tally of the fast checks of `phase`, and each failure's name."""
    chosen_specs = [spec for spec in chosen(specs(platform_), phase) if spec.name not in SLOW | DEEP]
    results = _run(platform_, chosen_specs)
    failures = [result.name for result in results if result.status == FAIL]
    named = f"; failed: {', '.join(failures)}" if failures else ""
    return f"checks: {platform_.secrets.masked(tally(results))}{named} (`uv run blueprint verify` shows each, with its fix)"


def run(args: Any, out: TextIO | None = None, machine: Machine | None = None) -> int:
    """`blueprint verify [--stack dev | --phase N] [--json] [--output FILE] [--deep]` (`machine`: the real one by default)."""
    from providers import poll

    out = out or sys.stdout

    @functools.cache
    def runner() -> Any:
        from cli.stack_runner import AutomationRunner

        return AutomationRunner(read_seconds=checks.READ_SECONDS)

    if args.output and (problem := unwritable(Path(args.output))):
        print(f"blueprint: --output {str(args.output)[:200]}: {problem}; fix: name a file in a folder you can write", file=sys.stderr)
        return 2
    began = poll.CLOCK.now()  # the engine's detection counts in the command's deadline
    platform_ = real_platform(runner, machine)
    platform_.deep = bool(args.deep)
    code, document = verify(platform_, phase=args.phase, dev=args.stack == "dev", began=began)
    if args.output:
        try:
            Path(args.output).write_text(to_json(document))
        except OSError as error:  # the folder changed while the checks ran
            print(f"blueprint: --output {str(args.output)[:200]}: cannot write it ({error.strerror})", file=sys.stderr)
            code = 2
    out.write(to_json(document) if args.json else to_table(document))
    return code


def unwritable(path: Path) -> str | None:
    """Why the report cannot be written to `path`, or None: checked before any check runs, so that a
    typo in `--output` is said at once, not after the checks (and never as a traceback).
    """
    if path.is_dir():
        return "is a folder"
    folder = path.parent
    if not folder.is_dir():
        return f"its folder {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "you cannot write there"
    return None
