"""The offline plan: the real program under Pulumi mocks, recording what `pulumi up` would register.

No Pulumi CLI, cluster or network is involved. A recording resource monitor keeps every
registration as the engine would receive it (parent, dependencies, provider, options, inputs);
secret values are replaced by "[secret]" on the way in; outputs only a real provider could know
are filled with deterministic stand-ins (cli/stand_ins.py), and the program runs with the plan's
runtime (stacks/runtime.py); a StackReference resolves to the upstream stack's own planned
outputs, and the stack's reference to itself to what its last `up` recorded (by default nothing:
a new stack). The test suite plans through this same module.

The JSON contract is in docs/reference/plan.md.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import runpy
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import empty_pb2, json_format
from pulumi import RunError
from pulumi.runtime import rpc, settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockCallArgs, MockEngine, MockMonitor, MockResourceArgs, Mocks, MockSettings
from pulumi.runtime.stack import run_in_stack

from apps_manifest import listed_once
from cli import stand_ins
from cli.quick_plan import quick_registrations
from stacks import STACK_PHASES
from stacks.config import NAMESPACE, PROJECT_DIR, ConfigError
from stacks.config.schema import project_name, stack_config, stack_reads, stacks_reading
from stacks.layout_record import LayoutRecords
from stacks.outputs import UPSTREAM_STACK
from stacks.runtime import installed

SECRET = "[secret]"
UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"
STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"
RUN_TOKEN = "command:local:run"
"""pulumi-command's invoke that runs a command on every preview and up (`local.run_output`)."""
ORGANIZATION = "organization"
"""The organization of Pulumi's local (DIY) backend."""


class ProgramFailed(Exception):
    """The program raised while being planned; `registered` is what it had registered by then."""

    def __init__(self, cause: BaseException, registered: list[dict[str, Any]]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.registered = registered

    def say(self, stopped: str = "") -> int:
        """Say on stderr that a phase failed to plan, and return the exit code, 1. A RunError (a config or
        manifest problem, a refusal of the program) is its message alone, after `stopped` (what it
        stops); anything else is a bug of the program, which keeps its traceback.
        """
        if isinstance(self.cause, RunError):
            print(f"error: {stopped}{self.cause}", file=sys.stderr)
        else:
            traceback.print_exception(self.cause)
        return 1


@dataclass(frozen=True)
class Plan:
    """What one stack would register: the plan object (project, stack, resources, outputs), plus
    the raw stack outputs that a downstream stack's StackReference resolves to (never printed).

    `preview` says the plan was made as the engine previews (outputs only a provider computes are
    unknown); `folders` is set on a destroy view (`cli.lifecycle.destroy_view`), whose resources
    also carry their `destroy` fate.
    """

    project: str
    stack: str
    resources: list[dict[str, Any]]
    outputs: dict[str, dict[str, Any]]
    raw_outputs: dict[str, tuple[Any, bool]] = field(repr=False, default_factory=dict)
    preview: bool = False
    folders: list[dict[str, str]] | None = None
    destroy_reasons: dict[str, str] = field(repr=False, default_factory=dict)
    """Why each resource meets its destroy fate (a destroy view's text shows it; JSON does not)."""
    invokes: list[dict[str, Any]] = field(repr=False, default_factory=list)
    """Every invoke the program made (`local.run` and the like): its token and arguments (never printed)."""

    def to_json(self) -> str:
        document: dict[str, Any] = {"project": self.project, "stack": self.stack}
        if self.preview:
            document["preview"] = True
        document |= {"resources": self.resources, "outputs": self.outputs}
        if self.folders is not None:
            document["folders"] = self.folders
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    def find(self, type_: str, name: str | None = None) -> list[dict[str, Any]]:
        """Resources of `type_` (and `name`, when given), in plan order."""
        return [r for r in self.resources if r["type"] == type_ and (name is None or r["name"] == name)]

    def one(self, type_: str, name: str) -> dict[str, Any]:
        """The single resource of `type_` named `name`."""
        found = self.find(type_, name)
        if len(found) != 1:
            raise LookupError(f"expected one {type_} named {name!r}, found {len(found)}")
        return found[0]

    def to_tree(self) -> str:
        """A readable tree of the resources by parent, with the options that change behaviour."""
        children: dict[str | None, list[dict[str, Any]]] = {}
        for resource in self.resources:
            children.setdefault(resource["parent"], []).append(resource)
        names = {r["urn"]: r["name"] for r in self.resources}
        mode = " (as a preview: [unknown] is what only a provider can know)" if self.preview else ""
        mode = " (what a destroy does to each)" if self.folders is not None else mode
        lines = [f"{self.project}/{self.stack}: {len(self.resources)} resources{mode}"]

        def walk(parent: str | None, indent: str) -> None:
            kids = children.get(parent, [])
            for i, resource in enumerate(kids):
                last = i == len(kids) - 1
                notes = _notes(resource, names, self.destroy_reasons.get(resource["urn"], ""))
                lines.append(f"{indent}{'└─ ' if last else '├─ '}{resource['type']}  {resource['name']}{notes}")
                walk(resource["urn"], indent + ("   " if last else "│  "))

        walk(None, "")
        if self.folders is not None:
            lines.append("host folders:" if self.folders else "host folders: none of this stack's own")
            lines += [f"  {folder['destroy']}  {folder['path']}" for folder in self.folders]
            return "\n".join(lines) + "\n"
        lines.append("outputs:")
        for key, output in self.outputs.items():
            shown = SECRET if output["secret"] else json.dumps(output.get("value"))
            lines.append(f"  {key}: {shown}")
        return "\n".join(lines) + "\n"


def _notes(resource: dict[str, Any], names: Mapping[str, str], reason: str) -> str:
    if "destroy" in resource:
        return f"  [{resource['destroy']}{': ' + reason if reason else ''}]"
    notes = []
    parent = resource["parent"]
    deps = [names.get(urn, urn) for urn in resource["dependsOn"] if urn != parent]
    if deps:
        notes.append("after " + ", ".join(deps))
    for flag in ("protect", "retainOnDelete", "deleteBeforeReplace"):
        if resource[flag]:
            notes.append(flag)
    for option in ("replaceOnChanges", "ignoreChanges", "additionalSecretOutputs"):
        if resource[option]:
            notes.append(f"{option}={','.join(resource[option])}")
    if resource["deletedWith"]:
        notes.append(f"deletedWith={names.get(resource['deletedWith'], resource['deletedWith'])}")
    return f"  [{'; '.join(notes)}]" if notes else ""


def _hidden(value: Any) -> Any:
    """A secret value with every leaf replaced by "[secret]": a known secret map or list keeps its
    shape (its keys are not secret), so the plan stays checkable against schemas. An unknown one
    (in a preview) has no shape yet, and is "[secret]" whole.
    """
    if isinstance(value, dict) and value.get(rpc._special_sig_key) is None:
        return {key: _hidden(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_hidden(item) for item in value]
    return SECRET


def _redact(value: Any) -> Any:
    """A wire value as plan JSON: secrets as "[secret]", resource references as their URN."""
    if isinstance(value, dict):
        sig = value.get(rpc._special_sig_key)
        if sig == rpc._special_secret_sig:
            return _hidden(value.get("value"))
        if sig == rpc._special_resource_sig:
            return value.get("urn")
        return {key: _redact(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_redact(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf carries every number as a double
    if value == rpc.UNKNOWN:
        return UNKNOWN
    return value


def _plain(value: Any) -> tuple[Any, bool]:
    """A deserialized wire value without its secret wrapper, and whether it had one."""
    if isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        return value.get("value"), True
    return value, False


def _has_unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_unknown(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_unknown(item) for item in value)
    return bool(value == rpc.UNKNOWN)


class _StandInMocks(Mocks):
    def __init__(self, upstream: Mapping[str, Plan], preview: bool) -> None:
        self.upstream = upstream
        self.preview = preview
        self.unconfigured: set[str] = set()
        """Providers whose config a preview does not know (the recorder fills it)."""
        self.invokes: list[dict[str, Any]] = []
        """Every invoke the program made: its token and arguments."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == STACK_REFERENCE_TYPE:
            return args.resource_id, self._reference(str(args.inputs.get("name")))
        if self.preview:
            # As the engine previews a create: the provider echoes the inputs; its id and every
            # output it computes (a command's stdout, a password, a certificate) are unknown. A
            # provider whose own config is unknown (a kubeconfig the cluster will print) cannot
            # even echo them: everything it would return is unknown (pulumi provider_plugin.go, Create).
            if (args.provider or "").rsplit("::", 1)[0] in self.unconfigured:
                return None, {}
            return None, dict(args.inputs)
        return stand_ins.resource_id(args.typ, args.name), {**args.inputs, **stand_ins.provider_outputs(args.typ, args.name, args.inputs)}

    def _reference(self, name: str) -> dict[str, Any]:
        stack = name.rsplit("/", 1)[-1]
        if stack not in self.upstream:
            raise LookupError(
                f"StackReference {name!r}: the plan resolves references to the stack itself and its upstream stacks only "
                f"({', '.join(self.upstream) or 'none for this stack'}); see stacks.outputs.UPSTREAM_STACK"
            )
        raw = self.upstream[stack].raw_outputs
        return {
            "name": name,
            "outputs": {key: value for key, (value, _) in raw.items()},
            "secretOutputNames": sorted(key for key, (_, secret) in raw.items() if secret),
        }

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.invokes.append({"token": args.token, **args.args})
        if args.token == RUN_TOKEN:
            return self._run_command(args.args), []
        raise NotImplementedError(f"the offline plan has no stand-in for the invoke {args.token}")

    def _run_command(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """What pulumi-command's `local.run` returns: for a read of an existing cluster, the stand-in
        cluster's answer (cli/stand_ins.py); for `kind get kubeconfig` of the cluster its
        environment names (stacks/phase1.py `kind_kubeconfig`, phase2's kubeconfig), the stand-in
        kubeconfig of the cluster an upstream plan creates, the same as its cluster command's; for a
        cluster no upstream creates, kind's error.
        """
        from stacks.phase1 import KIND_KUBECONFIG

        if (answer := stand_ins.existing_cluster_answer(str(args.get("command")), args.get("environment") or {})) is not None:
            return answer
        if args.get("command") != KIND_KUBECONFIG:
            raise NotImplementedError(f"the offline plan has no stand-in for the command {args.get('command')!r}")
        name = (args.get("environment") or {}).get("KIND_CLUSTER_NAME")
        for upstream in self.upstream.values():
            for cluster in upstream.find(*stand_ins.KIND_CLUSTER):
                if (cluster["inputs"].get("environment") or {}).get("KIND_CLUSTER_NAME") == name:
                    return {"stdout": stand_ins.kubeconfig(cluster["inputs"]), "stderr": ""}
        return {"stdout": "", "stderr": "ERROR: could not locate any control plane nodes"}


class _Recorder(MockMonitor):
    """A mock monitor that keeps every registration as plan JSON. The SDK calls it on the plan's own
    thread, one call at a time, each with an event loop of its own to serialise its answer on
    (cli/quick_plan.py `_Inline`).
    """

    def __init__(self, mocks: _StandInMocks) -> None:
        super().__init__(mocks)
        self.stand_ins = mocks
        self.records: dict[str, dict[str, Any]] = {}
        self.stack_outputs: dict[str, tuple[Any, bool]] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the engine gives: the parent's whole type chain, except the root stack's
        (MockMonitor keeps only the parent's last type, and the stack's too).
        """
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != STACK_TYPE:
                type_ = f"{parent_type}${type_}"
        return f"urn:pulumi:{settings.get_stack()}::{settings.get_project()}::{type_}::{name}"

    def _record(self, urn: str, request: Any, *, custom: bool, inputs: Any, read: bool = False) -> None:
        property_deps = {u for deps in getattr(request, "propertyDependencies", {}).values() for u in deps.urns}
        record = {
            "urn": urn,
            "type": request.type,
            "name": request.name,
            "custom": custom,
            "parent": request.parent or None,
            "dependsOn": sorted(set(request.dependencies) | property_deps),
            # A preview does not know a provider's id yet: the reference ends in the unknown sentinel.
            "provider": (request.provider or "").replace(rpc.UNKNOWN, UNKNOWN) or None,
            "inputs": _redact(json_format.MessageToDict(inputs)),
            "protect": bool(getattr(request, "protect", False)),
            "retainOnDelete": bool(getattr(request, "retainOnDelete", False)),
            "deletedWith": getattr(request, "deletedWith", "") or None,
            "deleteBeforeReplace": bool(getattr(request, "deleteBeforeReplace", False)),
            "ignoreChanges": sorted(getattr(request, "ignoreChanges", [])),
            "replaceOnChanges": sorted(getattr(request, "replaceOnChanges", [])),
            "additionalSecretOutputs": sorted(getattr(request, "additionalSecretOutputs", [])),
            # A read (`Resource.get`): external in the state, never deleted. StackReferences, reads
            # too, keep their own rule (cli/lifecycle.py `fate`), and their records as they were.
            **({"read": True} if read and request.type != STACK_REFERENCE_TYPE else {}),
        }
        if urn in self.records:
            # The engine refuses a second registration of one URN; so does the plan.
            raise ValueError(f"duplicate resource URN {urn}: give the resource a unique name")
        self.records[urn] = record

    def RegisterResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        self._record(urn, request, custom=bool(request.custom), inputs=request.object)
        if request.type.startswith("pulumi:providers:") and _has_unknown(json_format.MessageToDict(request.object)):
            self.stand_ins.unconfigured.add(urn)
        response = super().RegisterResource(request)
        if request.additionalSecretOutputs:
            # The engine marks these outputs secret, known or not; MockMonitor ignores the option.
            state = json_format.MessageToDict(response.object)
            for key in request.additionalSecretOutputs:
                if key in state or self.stand_ins.preview:
                    state[key] = {rpc._special_sig_key: rpc._special_secret_sig, "value": state.get(key, rpc.UNKNOWN)}
            response.object.Clear()
            response.object.update(state)
        return response

    def ReadResource(self, request: Any) -> Any:
        urn = self.make_urn(request.parent, request.type, request.name)
        self._record(urn, request, custom=True, inputs=request.properties, read=True)
        return super().ReadResource(request)

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if self.records.get(request.urn, {}).get("type") == STACK_TYPE:
            outputs = json_format.MessageToDict(request.outputs)
            self.stack_outputs = {key: _plain(value) for key, value in outputs.items()}
        return empty_pb2.Empty()


def _plan_order(records: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Parents, dependencies and providers before the resources that use them; ties by URN."""
    before: dict[str, set[str]] = {urn: set() for urn in records}
    for urn, record in records.items():
        provider = record["provider"].rsplit("::", 1)[0] if record["provider"] else None
        for earlier in [record["parent"], provider, *record["dependsOn"]]:
            if earlier in records and earlier != urn:
                before[urn].add(earlier)
    after: dict[str, list[str]] = {urn: [] for urn in records}
    for urn, earlier in before.items():
        for other in earlier:
            after[other].append(urn)
    ready = [urn for urn, earlier in before.items() if not earlier]
    heapq.heapify(ready)
    ordered = []
    while ready:
        urn = heapq.heappop(ready)
        ordered.append(records[urn])
        for later in after[urn]:
            before[later].discard(urn)
            if not before[later]:
                heapq.heappush(ready, later)
    return ordered


def plan(
    stack: str,
    overrides: Mapping[str, str] = {},
    *,
    program: Path = PROJECT_DIR / "__main__.py",
    preview: bool = False,
    recorded: Mapping[str, Any] = {},
    layout_records: LayoutRecords | None = None,
    planned_upstream: dict[str, Plan] | None = None,
    destroying: bool = False,
) -> Plan:
    """Plan `stack` offline. Upstream stacks are planned first, as they stand after their own `up`,
    so that StackReferences resolve to their planned outputs; `stack`'s reference to itself resolves
    to `recorded`, the (plain) outputs of its last `up` (none: a new stack, as upstream stacks are),
    and the layout record beside its data to what `layout_records` holds (none: a new platform;
    `cli.stand_ins.RecordedLayout`, which keeps what the program records there).
    Each override (a full key) goes to the stacks of the chain that read it (phase3 takes
    preserveData from phase1, through phase2); one that none of them reads is refused. With
    `preview`, plan as `pulumi preview` of a first `up` does: every output that only a provider can
    compute is unknown, and `apply` callbacks on it do not run.
    Raises ProgramFailed when the program raises; before anything, when anything `stack` or a stack
    it reads from reads is wrong (each program's own first check, run here first over the whole
    chain, so every problem is said at once, each under its stack).
    `planned_upstream` holds upstream stacks' plans already made with the same overrides (none: each
    is planned here, once, and kept there). `destroying`: run the programs as `blueprint destroy` runs
    phase2's (`stacks.runtime.Runtime.destroying`), with no check of the stack files first.
    """
    with listed_once(), stand_ins.destroying_runs(destroying):  # the apps folders, as git lists them, for the whole plan
        if stack in STACK_PHASES:
            from stacks.validation import check_stack_files

            chain = list(reversed(_chain(stack)))
            routed = {name: routed_overrides(name, overrides, planned=stack) for name in chain}
            if problem := override_problems(stack, overrides) or (None if destroying else check_stack_files(chain, routed)):
                raise ProgramFailed(ConfigError(problem), [])
        known = {} if planned_upstream is None else planned_upstream
        return _plan(stack, overrides, program=program, preview=preview, recorded=recorded, layout_records=layout_records, known=known)


def default_phase_plans() -> tuple[Plan, ...]:
    """The offline plans of the phase stacks, in order, with Pulumi.yaml's defaults alone (no stack file
    is read): the project's own platform, which the generated pages draw and list.
    """
    from stacks.config.schema import defaults_only

    with defaults_only():
        plans: dict[str, Plan] = {}
        for stack in STACK_PHASES["dev"]:
            # Each phase's plan is its successor's upstream as it stands: planned once, not again.
            plans[stack] = plan(stack, planned_upstream=plans)
        return tuple(plans.values())


def _plan(
    stack: str,
    overrides: Mapping[str, str],
    *,
    program: Path,
    preview: bool,
    planned: str | None = None,
    recorded: Mapping[str, Any] = {},
    layout_records: LayoutRecords | None = None,
    known: dict[str, Plan],
) -> Plan:
    """Plan `stack` after its upstream stacks, each planned once (`known` keeps them: phase3's
    upstream phase2 plans phase1, which phase3 reads too).
    """
    upstream: dict[str, Plan] = {}
    name = stack
    while name in UPSTREAM_STACK:
        name = UPSTREAM_STACK[name]
        if name in known:
            upstream[name] = known[name]
            continue
        try:
            upstream[name] = known[name] = _plan(
                name, overrides, program=PROJECT_DIR / "__main__.py", preview=False, planned=planned or stack, known=known
            )
        except ProgramFailed as failed:
            if not isinstance(failed.cause, RunError):
                raise
            # Say which stack failed: the upstream's own message names only itself.
            cause = RunError(f"{stack} reads the outputs of {name}, which does not plan: {failed.cause}")
            raise ProgramFailed(cause, []) from failed
    config, secret_keys = stack_config(stack, routed_overrides(stack, overrides, planned=planned or stack))
    return _run(stack, config, secret_keys, program, upstream, preview=preview, recorded=recorded, layout_records=layout_records)


def override_summary(stack: str, overrides: Mapping[str, str], before: Plan | BaseException, after: Plan) -> str:
    """What `--config` changed: each override with the value it replaced, and the resources it
    adds, removes and changes (inputs, options or fate) against the plan without it.
    """
    lines = [f"config overrides (on top of Pulumi.yaml and the stack files), planning {stack}:"]
    chain = _chain(stack)
    for key, value in overrides.items():
        reader = next((name for name in chain if name in STACK_PHASES and stack_reads(name, key)), stack)
        values, secret = stack_config(reader)
        was = SECRET if key in secret else json.dumps(values[key]) if key in values else "unset"
        lines.append(f"  {key}={json.dumps(value)}  (on {reader}; was {was})")
    if isinstance(before, BaseException):
        lines.append(f"without them, {stack} does not plan: {before}")
        return "\n".join(lines) + "\n\n"
    old = {resource["urn"]: resource for resource in before.resources}
    new = {resource["urn"]: resource for resource in after.resources}
    added = [new[urn]["name"] for urn in new if urn not in old]
    removed = [old[urn]["name"] for urn in old if urn not in new]
    changed = [new[urn]["name"] for urn in new if urn in old and new[urn] != old[urn]]
    if not (added or removed or changed) and before.outputs == after.outputs:
        lines.append("they change nothing in this plan")
    for verb, names in (("add", added), ("remove", removed), ("change", changed)):
        if names:
            lines.append(f"they {verb} {len(names)} resource{'s' if len(names) != 1 else ''}: {', '.join(names)}")
    changed_outputs = sorted(key for key in set(before.outputs) | set(after.outputs) if before.outputs.get(key) != after.outputs.get(key))
    if changed_outputs:
        lines.append(f"they change the outputs {', '.join(changed_outputs)}")
    return "\n".join(lines) + "\n\n"


def override_problems(stack: str, overrides: Mapping[str, str]) -> str | None:
    """A `--config` override of a key of ours that neither `stack` nor its upstream stacks read, or None."""
    chain = _chain(stack)
    wrong = []
    for key in overrides:
        readers = stacks_reading(key.removeprefix(f"{NAMESPACE}:")) if key.startswith(f"{NAMESPACE}:") else []
        if readers and not any(stack_reads(name, key) for name in chain):
            also = f"{' and '.join(readers)} (and dev) do: plan one of them"
            wrong.append(f"--config {key}: {stack} does not read it, nor do the stacks it reads from; {also}")
    return "\n".join(wrong) or None


def routed_overrides(stack: str, overrides: Mapping[str, str], *, planned: str) -> dict[str, str]:
    """The overrides that `stack` takes when `planned` (`stack`, or a stack that reads from it) is
    planned: those `stack` reads, and those no stack of `planned`'s chain reads if `stack` is `planned`
    itself, which then refuses them by name.
    """
    chain = _chain(planned)
    routed = {}
    for key, value in overrides.items():
        readers = [name for name in chain if name in STACK_PHASES and stack_reads(name, key)]
        if stack in readers or (not readers and stack == planned):
            routed[key] = value
    return routed


def _chain(stack: str) -> list[str]:
    """`stack` and the stacks it reads from, nearest first."""
    chain = [stack]
    while chain[-1] in UPSTREAM_STACK:
        chain.append(UPSTREAM_STACK[chain[-1]])
    return chain


def _run(
    stack: str,
    config: dict[str, str],
    secret_keys: list[str],
    program: Path,
    upstream: Mapping[str, Plan],
    *,
    preview: bool = False,
    recorded: Mapping[str, Any] = {},
    layout_records: LayoutRecords | None = None,
) -> Plan:
    project = project_name()
    # The stack as its last `up` left it, for its reference to itself (stacks/migrations.py).
    last_up = Plan(project, stack, [], {}, {key: (value, False) for key, value in recorded.items()})
    mocks = _StandInMocks({**upstream, stack: last_up}, preview)
    recorder = _Recorder(mocks)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        settings.reset_options(project=project, stack=stack, preview=preview, organization=ORGANIZATION)
        settings.configure(
            MockSettings(
                monitor=recorder,
                monitor_features=set(recorder.GetDeploymentInfo(empty_pb2.Empty()).supportedFeatures),
                engine=MockEngine(logging.getLogger("blueprint.plan")),
                project=project,
                stack=stack,
                dry_run=preview,
                organization=ORGANIZATION,
                callbacks=None,
            )
        )
        set_all_config(config, secret_keys)

        def run_program() -> None:
            runpy.run_path(str(program), run_name="__main__")

        with installed(stand_ins.runtime(secret_keys, layout_records)), quick_registrations(loop):
            loop.run_until_complete(run_in_stack(run_program))
    except Exception as error:
        raise ProgramFailed(error, _plan_order(recorder.records)) from error
    finally:
        settings.reset_options()
        asyncio.set_event_loop(None)
        loop.close()
    outputs = {
        key: {"secret": True} if secret else {"secret": False, "value": _redact(value)}
        for key, (value, secret) in sorted(recorder.stack_outputs.items())
    }
    records = _plan_order(recorder.records)
    return Plan(project, stack, records, outputs, dict(recorder.stack_outputs), preview=preview, invokes=mocks.invokes)
