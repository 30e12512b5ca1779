"""The checks of GitLab, its Runners, the pipelines, the apps and Headlamp, through the providers'
own GitLab client (providers/gitlab_api.py) with root's admin token, which no report shows; root's
password, signed in with over Git HTTP; and with `--deep`, an empty commit timed to deployed.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from cli.verify.checks import UP, Platform
from cli.verify.model import Verdict, failed, passed, skipped, warned
from cli.verify.services import TIMEOUT, TOKEN_WARN_DAYS, _connected, gateway_ca
from stacks import outputs

ROOT_PASSWORD, EDIT_TO_DEPLOYED = "GitLab root password", "edit to deployed"


def _props(platform: Platform) -> dict[str, Any]:
    """The wire properties of phase2's GitLab (providers/gitlab_api.py `GitLab.of`), root's token read
    from its file (and registered as a secret).
    """
    from cli.report import admin_token
    from providers.cluster_access import TARGET_KEY

    phase2 = platform.of("phase2")
    token = platform.secrets.add(admin_token(phase2))
    forward = {TARGET_KEY: phase2[outputs.GITLAB_FORWARD]} if phase2.get(outputs.GITLAB_FORWARD) else {}
    return {"gitlab_url": phase2.get(outputs.GITLAB_URL), "token": token, "ca_file": outputs.gateway_ca_file(phase2), **forward}


def client(platform: Platform) -> Any:
    """The GitLab client of phase2's outputs, root's token read from its file (and registered as a secret)."""
    from providers.gitlab_api import GitLab

    return GitLab.of(_props(platform), timeout=TIMEOUT, pauses=())


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


def _group(platform: Platform, gitlab: Any) -> dict[str, Any]:
    """The platform's group, as GitLab shows it (its `full_path` among the rest)."""
    from providers.gitlab_api import encode

    return dict(gitlab.get(f"/groups/{encode(platform.of('phase2').get(outputs.APPS_GROUP_ID))}"))


def _gateway_ask(platform: Platform, url: str, headers: Mapping[str, str] | None = None) -> Any:
    """`url`'s answer from this laptop through the gateway (GitLab, its registry, the apps, Headlamp),
    trusting the gateway's CA alone, through phase2's port-forward on an existing cluster.
    """
    forward = platform.of("phase2").get(outputs.GITLAB_FORWARD)
    return platform.ask(url, ca_file=gateway_ca(platform), headers=headers or {}, forward=forward)


def _basic(platform: Platform, user: str, secret: str) -> dict[str, str]:
    """The Basic `Authorization` header of `user` and `secret` (registered as a secret of the run)."""
    import base64

    return {"Authorization": f"Basic {platform.secrets.add(base64.b64encode(f'{user}:{secret}'.encode()).decode())}"}


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


def _newest(gitlab: Any, path: str, **query: str) -> dict[str, Any] | None:
    """The newest pipeline of project `path` on the branch the sync commits to (`query`: a `sha` besides), or None."""
    from providers.gitlab_api import encode
    from providers.gitlab_pipeline import BRANCH

    found = gitlab.get(f"/projects/{encode(path)}/pipelines", ref=BRANCH, per_page=1, **query)
    return dict(found[0]) if found else None


def _running(pipeline: dict[str, Any] | None) -> bool:
    """Still on its way: neither ended nor waiting for a person (GitLab's statuses, providers/gitlab_pipeline.py)."""
    from providers.gitlab_pipeline import DONE, WAITS_FOR_A_PERSON

    return pipeline is not None and pipeline.get("status") not in DONE | WAITS_FOR_A_PERSON


def _head_busy(gitlab: Any, path: str) -> str:
    """Why an empty commit to `path`'s main would touch another's pipeline, or "": GitLab's auto-cancel
    (on by default) may cancel a pipeline still pending once a newer commit's starts. That of main's
    head, not main's newest: a push's pipeline is created a moment after the push (CreatePipelineWorker),
    the previous commit's meanwhile the newest.
    """
    from providers.gitlab_api import encode
    from providers.gitlab_pipeline import BRANCH

    head = str(gitlab.get(f"/projects/{encode(path)}/repository/branches/{BRANCH}")["commit"]["id"])
    if (pipeline := _newest(gitlab, path, sha=head)) is None:
        return f"{path}: {BRANCH}'s head {head[:8]} has no pipeline yet"
    if _running(pipeline):
        return f"{path}'s pipeline {pipeline.get('web_url')} on {BRANCH} is still {pipeline.get('status')}"
    return ""


def _pipeline_fix(name: str, pipeline: dict[str, Any] | None) -> str:
    """What runs `name`'s pipeline again, as a user does it in GitLab: Retry on a failed or cancelled one
    (POST /projects/:id/pipelines/:pipeline_id/retry); `up` would not, its commit and pipeline unchanged.
    """
    from providers.gitlab_pipeline import BRANCH, WAITS_FOR_A_PERSON

    if pipeline is None or pipeline.get("status") == "skipped":
        return f"{name}: Build > Pipelines > Run pipeline on {BRANCH} in GitLab"
    url, status = pipeline.get("web_url"), pipeline.get("status")
    if _running(pipeline):
        return f"{name}: {url} is still {status}; `uv run blueprint verify` again once it ends"
    if status in WAITS_FOR_A_PERSON:
        return f"{name}: {url} waits for a person ({status}): start its job in GitLab"
    return f"{name}: press Retry on {url} in GitLab"


def pipelines_check(platform: Platform) -> Verdict:
    """The latest pipeline on `main` (what GitLab's project page shows, and what deployed the app) of each
    project of the manifest succeeded (N/N); one still running is a warning.
    """
    if isinstance(manifest := _manifest(), Verdict):
        return manifest
    projects = [project.name for project in manifest]

    def check(gitlab: Any) -> Verdict:
        path = _group(platform, gitlab).get("full_path")
        newest = {name: _newest(gitlab, f"{path}/{name}") for name in projects}
        wrong = {name: pipeline for name, pipeline in newest.items() if (pipeline or {}).get("status") != "success"}
        tally = f"{len(projects) - len(wrong)}/{len(projects)} latest pipelines succeeded"
        saw = f"{tally}; " + ", ".join(f"{name}: {(pipeline or {}).get('status', 'none')}" for name, pipeline in wrong.items())
        fix = "; ".join(_pipeline_fix(name, pipeline) for name, pipeline in wrong.items())
        if any(not _running(pipeline) for pipeline in wrong.values()):
            return failed(saw, fix)
        if wrong:
            return warned(f"{saw} (still running)", fix)
        return passed(tally)

    return _guarded(platform, check, f"`{UP} --phase 3`")


def apps_check(platform: Platform) -> Verdict:
    """Each app's `/healthz` answers 200 through the gateway from this laptop, trusting the gateway's CA alone."""
    from cli.report import check_apps

    urls = sorted((platform.of("phase3").get(outputs.APP_URLS) or {}).items())
    if not urls:
        return skipped("no app has a host")
    answers = check_apps(platform.outputs, lambda url, _gateway_ca, headers: _gateway_ask(platform, url, headers))
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
    answer = _gateway_ask(platform, url)
    if answer.status != 200:
        return failed(
            f"{url}: {answer.said}", f"{platform.kubectl_said('get', 'pods', namespace='headlamp')}; docs/guide/access.md, 'Headlamp'"
        )
    return passed(f"{url} answers")


TWO_FACTOR_SETTINGS = ("require_two_factor_authentication", "require_admin_two_factor_authentication")
"""The instance settings under which GitLab refuses the password of a user without two-factor
authentication once its grace period is over (lib/gitlab/auth/two_factor_auth_verifier.rb)."""


def root_password_check(platform: Platform) -> Verdict:
    """GitLab takes root's password from `blueprint secrets`, by a sign-in that makes nothing: Git over
    HTTP's first request (`info/refs` of the manifest's first project) with Basic auth, which GitLab
    checks as it checks `git clone`'s (lib/gitlab/auth.rb `find_for_git_client`, a password last:
    `user_with_password_for_git`): 200 for root's password, 401 for another; no token, no session
    (the password grant, /oauth/token, would make a token). Not tried when GitLab takes no password
    there (the setting `password_authentication_enabled_for_git` off, or root with two-factor
    authentication): a warning, as is a refusal while GitLab requires two-factor authentication.
    """
    from components.gitlab import TOOLBOX
    from stacks.outputs import SecretFileUnavailable

    if isinstance(manifest := _manifest(), Verdict):
        return manifest
    phase2 = platform.of("phase2")
    url = str(phase2.get(outputs.GITLAB_URL)).rstrip("/")
    sign_in = f"sign in at {url}/users/sign_in as root, with `uv run blueprint secrets --show gitlab-root-password`"
    try:
        password = outputs.read_required_secret(str(phase2.get(outputs.GITLAB_ROOT_PASSWORD_FILE)), "GitLab root's password")
    except SecretFileUnavailable as error:
        return failed(str(error), f"`{UP} --phase 2` writes it again")
    platform.secrets.add(password)

    def check(gitlab: Any) -> Verdict:
        settings, root = gitlab.get("/application/settings"), gitlab.get("/user")
        if settings.get("password_authentication_enabled_for_git") is False:
            saw = (
                "GitLab takes no password over Git HTTP (its setting password_authentication_enabled_for_git is off): root's was not tried"
            )
            return warned(saw, f"{sign_in}; or allow it again: Admin area > Settings > General > Sign-in restrictions")
        if root.get("two_factor_enabled"):
            return warned(
                "root has two-factor authentication on: GitLab takes no password of root's over Git HTTP, so it was not tried", sign_in
            )
        group = _group(platform, gitlab)
        project = f"{group.get('full_path')}/{manifest[0].name}"
        basic = _basic(platform, root.get("username") or "root", password)
        answer = _gateway_ask(platform, f"{url}/{project}.git/info/refs?service=git-upload-pack", basic)
        where = f"Git over HTTP to {project}: {answer.said or answer.status}"
        if answer.status == 200:
            return passed(f"GitLab takes root's password ({where}; no token or session made)")
        if answer.status != 401:
            return failed(where, "`uv run blueprint status`; docs/guide/troubleshooting.md")
        required = [name for name in TWO_FACTOR_SETTINGS if settings.get(name)]
        required += ["the group's require_two_factor_authentication"] if group.get("require_two_factor_authentication") else []
        if required:
            return warned(
                f"GitLab refused root's password ({where}) and requires two-factor authentication ({', '.join(required)})", sign_in
            )
        reset = ("exec", "-it", f"deploy/{TOOLBOX}", "-c", "toolbox", "--", "gitlab-rake", "gitlab:password:reset[root]")
        return failed(
            f"GitLab refuses root's password from `uv run blueprint secrets` ({where}): changed in GitLab since its first start seeded it",
            f"set it back: {platform.kubectl_said(*reset, namespace='gitlab')}, then enter that password twice",
        )

    return _guarded(platform, check, "`uv run blueprint status`; docs/guide/troubleshooting.md")


DEEP_SECONDS = 600
"""How long `--deep` waits for its commit's pipeline: blueprint:pipelineTimeout's default, what `up` waits."""
HEALTHZ_SECONDS = 60.0
"""How long it then waits for the app to answer from this laptop."""
PROMISED_SECONDS = 120
"""Edit to deployed as the old blueprint promised it, 60 to 120 s: longer is a warning."""
DEEP_TIMEOUT = DEEP_SECONDS + HEALTHZ_SECONDS + 60
"""The check's own timeout (model.Spec), past both its waits."""
DEEP_MESSAGE = "blueprint verify --deep: an empty commit, its pipeline timed from commit to deployed"


def deep_pipeline_check(platform: Platform, stack: str = "phase3") -> Verdict:
    """`--deep`: an empty commit (its tree its parent's: no file changed) to `main` of the first app
    with a host that builds its image, through the Commits API the sync commits with
    (providers/gitlab_sync.py); its pipeline must succeed (providers/gitlab_pipeline.py `wait`, never
    run again) and the app answer /healthz from this laptop; it reports the seconds from the commit
    to that answer. The next `up` finds the branch's files as the sync left them: it commits nothing.
    Only into a project of ours, as the sync (decision 30): one with the mark `stack` (phase3, or
    dev) left on it; another's is skipped, not committed to (its pipeline would run as root).
    """
    from providers import poll
    from providers.gitlab_api import encode
    from providers.gitlab_get_or_create import NotOurs, in_one_of_ours
    from providers.gitlab_pipeline import BRANCH, PipelineFailed, wait
    from stacks.config.schema import project_name

    if isinstance(manifest := _manifest(), Verdict):
        return manifest
    urls = platform.of("phase3").get(outputs.APP_URLS) or {}
    if not (hosted := [project for project in manifest if project.name in urls]):
        return skipped("no app has a host: nothing to time to deployed")
    app = next((project for project in hosted if project.build), hosted[0])
    healthz = f"{urls[app.name]}/healthz"

    def check(gitlab: Any) -> Verdict:
        path = f"{_group(platform, gitlab).get('full_path')}/{app.name}"
        owner = f"{project_name()}/{stack}"
        try:
            ours = in_one_of_ours(gitlab, "projects", path, owner, subject=f"the project of app {app.name}")
        except NotOurs as theirs:
            return skipped(f"{platform.secrets.masked(str(theirs))[:300]}, not {owner!r}: not ours, not committed")
        if not ours:
            return skipped(f"no project {path}: not committed")
        if busy := _head_busy(gitlab, path):
            return skipped(f"not committed: {busy}; `uv run blueprint verify --deep` again once it ends")
        started = poll.CLOCK.now()
        # No action, and allow_empty: a commit of its parent's tree (gitlab-org/gitlab!211520; an
        # empty list alone is refused, 400, since gitlab-org/gitlab#584164).
        body = {"branch": BRANCH, "commit_message": DEEP_MESSAGE, "actions": [], "allow_empty": True}
        sha = str(gitlab.post(f"/projects/{encode(path)}/repository/commits", body)["id"])
        props = {**_props(platform), "project": path, "sha": sha, "timeout_seconds": DEEP_SECONDS}
        try:
            ran = wait(props, rerun=frozenset(), longer="look at it in GitLab, then run `uv run blueprint verify --deep` again")
        except PipelineFailed as error:  # its pipeline is main's newest now: `up` would not run it again, Retry does
            fix = f"{_pipeline_fix(path, _newest(gitlab, path, sha=sha))}, or run `uv run blueprint verify --deep` again"
            return failed(platform.secrets.masked(str(error))[:400], fix)
        answer = _answering(platform, healthz)
        seconds = poll.CLOCK.now() - started
        if answer.status != 200:
            return failed(
                f"{path}: pipeline {ran['web_url']} succeeded, but {healthz} still answers {answer.said} {HEALTHZ_SECONDS:g} s on",
                f"{platform.kubectl_said('get', 'pods', namespace='apps')}; the pipeline's deploy job",
            )
        saw = f"{path}: empty commit {sha[:8]}, pipeline {ran['web_url']} succeeded, {healthz} answers {seconds:.0f} s after the commit"
        if seconds > PROMISED_SECONDS:
            return warned(f"{saw}: over the {PROMISED_SECONDS} s promised", "the pipeline's jobs in GitLab show which one took the time")
        return passed(saw)

    return _guarded(platform, check, f"`{UP} --phase 3`")


def _answering(platform: Platform, url: str) -> Any:
    """The app's answer at `url` from this laptop, asked again until it is 200 or HEALTHZ_SECONDS have passed."""
    from providers import poll

    def asked() -> Any:
        answer = _gateway_ask(platform, url)
        if answer.status != 200:
            raise poll.NotYet(str(answer.said), outcome=answer)
        return answer

    try:
        return poll.retry(asked, poll.within(HEALTHZ_SECONDS, every=2.0))
    except poll.NotYet as never:
        return never.outcome


REGISTRY_LOGIN = "registry login"


def registry_login_check(platform: Platform) -> Verdict:
    """The container registry lets root in as `docker login` does (the registry's token auth): GitLab
    issues a token at `/jwt/auth` (service `container_registry`, no scope: it opens no repository) for
    root's admin token over Basic auth (JwtController, lib/gitlab/auth.rb `find_for_git_client`;
    Auth::ContainerRegistryAuthenticationService), then the registry's `/v2/` takes it: 200. Nothing
    is made: the token is a short-lived signed JWT GitLab keeps no record of.
    """
    from cli.report import admin_token
    from stacks.outputs import SecretFileUnavailable

    phase2 = platform.of("phase2")
    url = urlsplit(str(phase2.get(outputs.GITLAB_URL)))
    registry = f"https://{str(phase2.get(outputs.REGISTRY_HOST)).split(':', 1)[0]}{f':{url.port}' if url.port else ''}/v2/"
    try:
        token = platform.secrets.add(admin_token(phase2))
    except SecretFileUnavailable as error:
        return failed(str(error), f"`{UP} --phase 2` writes it again")
    realm = f"{url.geturl().rstrip('/')}/jwt/auth?service=container_registry"
    issued = _gateway_ask(platform, realm, _basic(platform, "root", token))
    jwt = issued.body.get("token") if issued.status == 200 and isinstance(issued.body, dict) else None
    if not isinstance(jwt, str) or not jwt:
        return failed(
            f"GitLab issued no registry token for root's admin token ({realm}: {issued.said})", f"`{UP} --phase 2`; docs/guide/access.md"
        )
    platform.secrets.add(jwt)
    answer = _gateway_ask(platform, registry, {"Authorization": f"Bearer {jwt}"})
    if answer.status != 200:
        logs = platform.kubectl_said("logs", "deploy/gitlab-registry", "-c", "registry", namespace="gitlab")
        return failed(f"{registry} refuses the token GitLab issued: {answer.said}", f"{logs}; `{UP} --phase 2`")
    return passed(f"{registry} takes the token GitLab issued for root, as `docker login` gets it")
