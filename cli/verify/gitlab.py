"""The checks of GitLab, its Runners, the pipelines, the apps and Headlamp, through the providers'
own GitLab client (providers/gitlab_api.py) with root's admin token, which no report shows.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from cli.verify.checks import UP, Platform
from cli.verify.model import Verdict, failed, passed, skipped, warned
from cli.verify.services import TIMEOUT, TOKEN_WARN_DAYS, _connected
from stacks import outputs


def client(platform: Platform) -> Any:
    """The GitLab client of phase2's outputs, root's token read from its file (and registered as a secret)."""
    from cli.report import admin_token
    from providers.cluster_access import TARGET_KEY
    from providers.gitlab_api import GitLab

    phase2 = platform.of("phase2")
    token = platform.secrets.add(admin_token(phase2))
    forward = {TARGET_KEY: phase2[outputs.GITLAB_FORWARD]} if phase2.get(outputs.GITLAB_FORWARD) else {}
    props = {"gitlab_url": phase2.get(outputs.GITLAB_URL), "token": token, "ca_file": outputs.gateway_ca_file(phase2), **forward}
    return GitLab.of(props, timeout=TIMEOUT, pauses=())


def _guarded(platform: Platform, check: Callable[[Any], Verdict], fix: str) -> Verdict:
    """`check` with the client; GitLab refusing or not answering is a failure naming its answer (secrets masked)."""
    from providers.gitlab_api import GitLabApiError
    from stacks.outputs import SecretFileUnavailable

    try:
        return check(client(platform))
    except SecretFileUnavailable as error:
        return failed(str(error), f"`{UP} --phase 2` writes it again")
    except GitLabApiError as error:
        return failed(platform.secrets.masked(str(error))[:300], fix)


def _manifest() -> list[Any] | Verdict:
    """The apps manifest's projects, or the failure that says why it cannot be read."""
    from apps_manifest import ManifestError, load_manifest

    try:
        return list(load_manifest(files=False))
    except ManifestError as error:
        return failed(str(error), "apps/apps_manifest.yaml")


def gitlab_api_check(platform: Platform) -> Verdict:
    def check(gitlab: Any) -> Verdict:
        version = gitlab.get("/version")
        return passed(f"GitLab {version.get('version', '?')} answers root's admin token")

    return _guarded(platform, check, "`uv run blueprint status`; docs/guide/troubleshooting.md")


def gitlab_token_check(platform: Platform, today: Callable[[], datetime.date] = datetime.date.today) -> Verdict:
    """Root's admin token has the scopes blueprint gives it, and is not about to expire."""
    from providers.gitlab_token import ADMIN_TOKEN_SCOPES

    def check(gitlab: Any) -> Verdict:
        token = gitlab.get("/personal_access_tokens/self")
        scopes, expires = sorted(token.get("scopes") or []), token.get("expires_at")
        missing = sorted(set(ADMIN_TOKEN_SCOPES) - set(scopes))
        if missing or not token.get("active", True) or token.get("revoked"):
            return failed(f"scopes {', '.join(scopes)}; missing {', '.join(missing) or 'none'}", f"`{UP} --phase 2` makes it anew")
        left = (datetime.date.fromisoformat(str(expires)) - today()).days if expires else None
        saw = f"scopes {', '.join(scopes)}; expires {expires or 'never'}"
        if left is not None and left < TOKEN_WARN_DAYS:
            return warned(f"{saw} (in {left} days)", f"`{UP} --phase 2` renews it")
        return passed(saw)

    return _guarded(platform, check, f"`{UP} --phase 2` makes root's token anew")


def gitlab_projects_check(platform: Platform) -> Verdict:
    """The platform's group, and every project of the apps manifest in it."""
    from providers.gitlab_api import encode

    if isinstance(manifest := _manifest(), Verdict):
        return manifest
    projects = [project.name for project in manifest]

    def check(gitlab: Any) -> Verdict:
        group = gitlab.find(f"/groups/{encode(platform.of('phase2').get(outputs.APPS_GROUP_ID))}")
        if not group:
            return failed("the platform's group is gone", f"`{UP} --phase 2`")
        path = group.get("full_path")
        missing = [name for name in projects if not gitlab.find(f"/projects/{encode(f'{path}/{name}')}")]
        if missing:
            return failed(f"group {path} lacks {', '.join(missing)}", f"`{UP} --phase 3` makes them")
        return passed(f"group {path} holds all {len(projects)} projects of the manifest")

    return _guarded(platform, check, f"`{UP} --phase 3`")


def ci_variables_check(platform: Platform) -> Verdict:
    """The group's variables and each project's, present with the type and protection phase3 gives them
    (components/gitlab_projects.py GROUP_VARIABLES, `variables`); no value is shown.
    """
    from components.gitlab_projects import GROUP_VARIABLES, variables
    from providers.gitlab_api import encode

    if isinstance(projects := _manifest(), Verdict):
        return projects
    domain, registry = str(platform.of("phase1").get(outputs.DOMAIN)), str(platform.of("phase2").get(outputs.REGISTRY_HOST))

    def check(gitlab: Any) -> Verdict:
        group_id = platform.of("phase2").get(outputs.APPS_GROUP_ID)
        path = gitlab.get(f"/groups/{encode(group_id)}").get("full_path")
        wrong, seen = [], 0
        # (holder, its name, key, secret, type, protected): the design's own secret flag decides what is masked.
        wanted = [(f"/groups/{encode(group_id)}", path, *variable) for variable in GROUP_VARIABLES]
        for project in projects:
            where = f"{path}/{project.name}"
            keys = variables(project, registry_host=registry, domain=domain)
            wanted += [(f"/projects/{encode(where)}", where, key, False, "env_var", False) for key in keys]
        for holder, name, key, secret, kind, protected in wanted:
            found = gitlab.find(f"{holder}/variables/{key}")
            if found is None:
                wrong.append(f"{name}: {key} missing")
                continue
            seen += 1
            if secret:  # the domain, a host or "chart" must still show in the report
                platform.secrets.add(str(found.get("value") or ""))
            if (found.get("variable_type"), bool(found.get("protected"))) != (kind, protected):
                wrong.append(f"{name}: {key} is {found.get('variable_type')}, {'' if found.get('protected') else 'not '}protected")
        if wrong:
            return failed("; ".join(wrong), f"`{UP} --phase 3` sets them again")
        return passed(f"all {seen} variables present, DEPLOY_KUBECONFIG a protected file")

    return _guarded(platform, check, f"`{UP} --phase 3`")


def ssh_check(platform: Platform) -> Verdict:
    """GitLab's SSH answers on the port clone URLs show with an SSH banner (RFC 4253 4.2: `SSH-2.0-...`):
    kind's host port, or on an existing cluster the gateway Service's SSH port, through its port-forward.
    """
    from stacks.exposure import ssh_port

    phase1 = platform.of("phase1")
    host = urlsplit(str(platform.of("phase2").get(outputs.GITLAB_URL))).hostname or ""
    port = ssh_port(phase1)
    try:
        with _connected(platform, host, port, service_port=port) as connection:
            connection.settimeout(TIMEOUT)
            banner = connection.recv(256).decode(errors="replace").strip()
    except Exception as error:
        return failed(f"nothing answers at {host}:{port} ({type(error).__name__})", "`uv run blueprint status`; docs/guide/access.md")
    if not banner.startswith("SSH-2.0-"):
        return failed(
            f"{host}:{port} answers, but not as SSH: {banner[:60]!r}",
            f"is another program on port {port}? `lsof -nP -iTCP:{port} -sTCP:LISTEN` names it",
        )
    return passed(f"{host}:{port}: {banner[:60]}")


def _off_design(runner: dict[str, Any]) -> list[str]:
    """How a live runner differs from its design (components/runner.py `registration`): the image-build
    one is the one with IMAGE_BUILD_TAG.
    """
    from components.runner import IMAGE_BUILD_TAG, registration

    tags = runner.get("tag_list") or []
    design = registration(image_builds=IMAGE_BUILD_TAG in tags)
    said = {"tag_list": sorted(tags), "run_untagged": runner.get("run_untagged"), "access_level": runner.get("access_level")}
    wanted = {**design, "tag_list": sorted(design["tag_list"])}
    return [f"{runner.get('description')}: {key} {said[key]}, not {wanted[key]}" for key in wanted if said[key] != wanted[key]]


def runners_check(platform: Platform) -> Verdict:
    """The platform group's Runners are online (GitLab saw them recently), with their tags and access level."""

    def check(gitlab: Any) -> Verdict:
        group = platform.of("phase2").get(outputs.APPS_GROUP_ID)
        runners = list(gitlab.pages(f"/groups/{group}/runners", type="group_type"))
        offline = [f"#{runner.get('id')} {runner.get('status')}" for runner in runners if runner.get("status") != "online"]
        if len(runners) < 2 or offline:
            saw = f"{len(runners) - len(offline)} of {len(runners)} runners online" + (f": {', '.join(offline)}" if offline else "")
            return failed(saw, f"{platform.kubectl_said('get', 'pods', namespace='gitlab-runner')}; `{UP} --phase 2`")
        details = [gitlab.get(f"/runners/{runner.get('id')}") for runner in runners]
        seen = "; ".join(
            f"{d.get('description')}: tags {','.join(d.get('tag_list') or []) or 'none'}, {d.get('access_level')}" for d in details
        )
        if wrong := [line for d in details for line in _off_design(d)]:
            return failed(f"{'; '.join(wrong)} ({seen})", f"`{UP} --phase 2` registers them as designed (components/runner.py)")
        return passed(f"{len(runners)} online, as designed ({seen})")

    return _guarded(platform, check, "`uv run blueprint up --phase 2`")


def pipelines_check(platform: Platform) -> Verdict:
    """The latest pipeline of each project of the manifest succeeded (N/N)."""
    from providers.gitlab_api import encode

    if isinstance(manifest := _manifest(), Verdict):
        return manifest
    projects = [project.name for project in manifest]

    def check(gitlab: Any) -> Verdict:
        path = gitlab.get(f"/groups/{encode(platform.of('phase2').get(outputs.APPS_GROUP_ID))}").get("full_path")
        wrong = []
        for name in projects:
            latest = gitlab.get(f"/projects/{encode(f'{path}/{name}')}/pipelines", per_page=1)
            status = latest[0].get("status") if latest else "none"
            if status != "success":
                wrong.append(f"{name}: {status}")
        tally = f"{len(projects) - len(wrong)}/{len(projects)} latest pipelines succeeded"
        if wrong:
            return failed(f"{tally}; {', '.join(wrong)}", f"open the pipeline in GitLab; `{UP} --phase 3` runs them again")
        return passed(tally)

    return _guarded(platform, check, f"`{UP} --phase 3`")


def apps_check(platform: Platform) -> Verdict:
    """Each app's `/healthz` answers 200 through the gateway from this laptop, trusting the gateway's CA alone."""
    from cli.report import check_apps

    urls = sorted((platform.of("phase3").get(outputs.APP_URLS) or {}).items())
    if not urls:
        return skipped("no app has a host")
    forward = platform.of("phase2").get(outputs.GITLAB_FORWARD)
    answers = check_apps(platform.outputs, lambda url, ca, headers: platform.ask(url, ca_file=ca, headers=headers, forward=forward))
    if not answers:  # check_apps asks nothing without a CA to trust
        return failed("phase2 names no CA file that verifies the gateway", f"`{UP} --phase 2` writes it again")
    wrong = [f"{name}: {answer.said}" for name, answer in answers.items() if answer.status != 200]
    if wrong:
        return failed("; ".join(wrong), f"{platform.kubectl_said('get', 'pods', namespace='apps')}; the project's last pipeline in GitLab")
    return passed(f"{len(urls)} apps answer /healthz")


def headlamp_check(platform: Platform) -> Verdict:
    if not platform.of("phase1").get(outputs.HEADLAMP):
        return skipped("Headlamp is off (blueprint:headlamp)")
    gitlab = urlsplit(str(platform.of("phase2").get(outputs.GITLAB_URL)))
    url = f"https://headlamp.{platform.of('phase1').get(outputs.DOMAIN)}{f':{gitlab.port}' if gitlab.port else ''}/"
    answer = platform.ask(url, ca_file=str(outputs.gateway_ca_file(platform.of("phase2"))))
    if answer.status != 200:
        return failed(
            f"{url}: {answer.said}", f"{platform.kubectl_said('get', 'pods', namespace='headlamp')}; docs/guide/access.md, 'Headlamp'"
        )
    return passed(f"{url} answers")
