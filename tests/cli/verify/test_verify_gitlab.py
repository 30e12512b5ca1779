"""`blueprint verify`'s checks of GitLab through the GitLab stub (tests/providers/gitlab_stub.py):
the API with root's token, the token's scopes and expiry, the group and the manifest's projects, the
Runners, the latest pipelines; each seen passing and failing with its fix, never showing the token."""

from __future__ import annotations

import base64
import dataclasses
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps_manifest import load_manifest
from cli.verify import deadline, services, specs
from cli.verify import gitlab as gitlab_checks
from cli.verify.checks import Platform
from cli.verify.model import FAIL, PASS, SKIP, WARN, Spec, failed, passed, run_all
from cli.verify.services import Answer
from components.gitlab_projects import variables
from components.runner import registration
from stacks import outputs
from tests.cli.verify.platforms import Answers, platform_on
from tests.providers.clock import FakeClock, install
from tests.providers.gitlab_stub import ADMIN, ROOT_PASSWORD, TOKEN, GitLabState, GitLabStub, serving

PROJECTS = [project.name for project in load_manifest(files=False)]
PROJECTS_OWNER = "blueprint/phase3"
"""The mark phase3 leaves on each project it makes (providers/gitlab_get_or_create.py `claim`)."""
REGISTRY = "registry.blueprint.test"
GUESTBOOK = "https://guestbook.blueprint.test"
KUBECONFIG = "apiVersion: v1\nusers: [{name: deployer, user: {token: kubeconfig-token-0123456789}}]\n"


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[type[GitLabStub], str]]:
    """One stub server for the module; each test gives it a GitLab of its own (`state`)."""
    handler = type("Stub", (GitLabStub,), {"state": GitLabState()})
    with serving(handler) as url:
        yield handler, url


@pytest.fixture
def state(stub: tuple[type[GitLabStub], str]) -> GitLabState:
    """A healthy platform's GitLab: the group with every project, two online runners, a green pipeline."""
    made = GitLabState()
    group = made.add_group("blueprint-apps")
    made.add_variable(f"groups/{group['id']}", "DEPLOY_KUBECONFIG", KUBECONFIG).update(variable_type="file", protected=True)
    made.add_variable(f"groups/{group['id']}", "BLUEPRINT_DOMAIN", "blueprint.test")
    for project in load_manifest(files=False):
        made_project = made.add_project(group, project.name, owner=PROJECTS_OWNER)
        for key, value in variables(project, registry_host=REGISTRY, domain="blueprint.test").items():
            made.add_variable(f"projects/{made_project['id']}", key, value)
    for description, image_builds in (("default", False), ("builds", True)):
        design = registration(image_builds=image_builds)
        runner = made.add_runner(description, list(design["tag_list"]), group=group)
        runner |= {"status": "online", "run_untagged": design["run_untagged"], "access_level": design["access_level"]}
    made.repository.pipelines.append({"id": 1, "ref": "main", "status": "success"})
    stub[0].state = made
    return made


def _platform(
    stub: tuple[type[GitLabStub], str],
    state: GitLabState,
    folder: Path,
    token: str = TOKEN,
    *,
    ask: Any = None,
    password: str = ROOT_PASSWORD,
) -> Platform:
    (folder / "admin-token").write_text(token.removeprefix(outputs.ADMIN_TOKEN_PREFIX) + "\n")
    (folder / "gitlab-root-password").write_text(password + "\n")
    group = next(iter(state.groups))
    phase2 = {
        outputs.GITLAB_URL: stub[1], outputs.CA_CERT_FILE: str(folder / "ca.crt"),
        outputs.ADMIN_TOKEN_FILE: str(folder / "admin-token"), outputs.APPS_GROUP_ID: str(group),
        outputs.GITLAB_ROOT_PASSWORD_FILE: str(folder / "gitlab-root-password"), outputs.REGISTRY_HOST: REGISTRY,
    }  # fmt: skip
    phase3 = {outputs.APP_URLS: {"guestbook": GUESTBOOK}}
    return platform_on(stacks={"phase1": {outputs.DOMAIN: "blueprint.test"}, "phase2": phase2, "phase3": phase3}, ask=ask)


def test_the_api_passes_with_roots_token(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.gitlab_api_check(_platform(stub, state, tmp_path))
    assert verdict.status == PASS
    assert "GitLab 19.1.0" in verdict.saw


def test_the_api_fails_on_a_token_it_refuses_without_showing_it(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.gitlab_api_check(_platform(stub, state, tmp_path, token="glpat-not-the-token-4567"))
    assert verdict.status == FAIL
    assert "HTTP 401" in verdict.saw
    assert "not-the-token" not in verdict.saw
    assert verdict.fix


def test_the_api_fails_with_the_up_that_writes_a_missing_token_file(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path)
    (tmp_path / "admin-token").unlink()
    verdict = gitlab_checks.gitlab_api_check(platform)
    assert verdict.status == FAIL
    assert "--phase 2" in verdict.fix


def _today() -> datetime.date:
    return datetime.date(2027, 1, 1)


def test_the_token_passes_with_its_scopes_and_far_expiry(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.gitlab_token_check(_platform(stub, state, tmp_path), today=_today)
    assert verdict.status == PASS
    assert "expires 2027-06-30" in verdict.saw


def test_the_token_about_to_expire_is_a_warning(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.token_expires = "2027-01-05"
    verdict = gitlab_checks.gitlab_token_check(_platform(stub, state, tmp_path), today=_today)
    assert verdict.status == WARN
    assert "in 4 days" in verdict.saw
    assert "renews" in verdict.fix


def test_the_token_without_a_scope_fails_naming_it(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.token_scopes.discard("api")
    verdict = gitlab_checks.gitlab_token_check(_platform(stub, state, tmp_path), today=_today)
    assert verdict.status == FAIL
    assert "missing api" in verdict.saw
    assert verdict.fix


def test_the_projects_pass_when_the_group_holds_every_one(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.gitlab_projects_check(_platform(stub, state, tmp_path))
    assert verdict.status == PASS
    assert f"all {len(PROJECTS)} projects" in verdict.saw


def test_the_projects_fail_naming_one_missing(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    gone = next(id_ for id_, project in state.projects.items() if project["path"] == PROJECTS[0])
    del state.projects[gone]
    verdict = gitlab_checks.gitlab_projects_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert PROJECTS[0] in verdict.saw
    assert "--phase 3" in verdict.fix


def test_the_runners_pass_online_with_their_tags(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.runners_check(_platform(stub, state, tmp_path))
    assert verdict.status == PASS
    assert "tags blueprint-image-build" in verdict.saw
    assert "not_protected" in verdict.saw


def test_the_runners_fail_when_the_image_build_runner_takes_any_branchs_jobs(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    builds = next(runner for runner in state.runners.values() if runner["description"] == "builds")
    builds["access_level"] = "not_protected"
    verdict = gitlab_checks.runners_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert "builds: access_level not_protected, not ref_protected" in verdict.saw


def test_the_runners_fail_when_one_of_the_two_is_gone(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    del state.runners[next(iter(state.runners))]
    verdict = gitlab_checks.runners_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert "1 of 1 runners online" in verdict.saw


def test_the_runners_fail_naming_one_offline(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    next(iter(state.runners.values()))["status"] = "offline"
    verdict = gitlab_checks.runners_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert "1 of 2 runners online" in verdict.saw
    assert "offline" in verdict.saw
    assert verdict.fix


def test_the_pipelines_pass_when_each_latest_succeeded(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.pipelines_check(_platform(stub, state, tmp_path))
    assert verdict.status == PASS
    assert verdict.saw == f"{len(PROJECTS)}/{len(PROJECTS)} latest pipelines succeeded"


def test_the_pipelines_fail_with_the_tally_and_each_status(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.repository.pipelines.append({"id": 2, "ref": "main", "status": "failed"})
    verdict = gitlab_checks.pipelines_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"0/{len(PROJECTS)} latest")
    assert f"{PROJECTS[0]}: failed" in verdict.saw


def test_the_ci_variables_pass_as_designed_and_their_values_are_masked(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path)
    verdict = gitlab_checks.ci_variables_check(platform)
    assert verdict.status == PASS
    assert "kubeconfig-token" not in platform.secrets.masked(f"saw {KUBECONFIG}")


def test_the_ci_variables_check_masks_no_value_that_is_not_secret(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path)
    gitlab_checks.ci_variables_check(platform)
    line = "gitlab.blueprint.test: certificate refused; see the chart"
    assert platform.secrets.masked(line) == line


def test_the_ci_variables_fail_on_the_deploy_kubeconfig_unprotected(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.variable(f"groups/{next(iter(state.groups))}", "DEPLOY_KUBECONFIG")["protected"] = False
    verdict = gitlab_checks.ci_variables_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert "blueprint-apps: DEPLOY_KUBECONFIG is file, not protected" in verdict.saw
    assert "--phase 3" in verdict.fix


def test_the_ci_variables_fail_naming_one_missing(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    holder = f"groups/{next(iter(state.groups))}"
    state.variables[holder] = [variable for variable in state.variables[holder] if variable["key"] != "BLUEPRINT_DOMAIN"]
    verdict = gitlab_checks.ci_variables_check(_platform(stub, state, tmp_path))
    assert verdict.status == FAIL
    assert "blueprint-apps: BLUEPRINT_DOMAIN missing" in verdict.saw


def test_roots_password_passes_as_gitlab_takes_it_over_git_http_making_nothing(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.root_password_check(_platform(stub, state, tmp_path, ask=services.ask))
    assert verdict.status == PASS
    assert f"GET /blueprint-apps/{PROJECTS[0]}.git/info/refs" in state.calls
    assert all(call.startswith("GET ") for call in state.calls)


def test_roots_password_gitlab_refuses_fails_with_the_reset_and_never_shows_it(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path, ask=services.ask, password="not-roots-password-4567")
    verdict = gitlab_checks.root_password_check(platform)
    assert verdict.status == FAIL
    assert "HTTP 401" in verdict.saw
    assert "gitlab:password:reset[root]" in verdict.fix
    assert "not-roots-password" not in verdict.saw + verdict.fix
    assert "not-roots-password" not in platform.secrets.masked("Basic root:not-roots-password-4567")


def test_roots_password_sign_in_shows_neither_the_password_nor_its_header(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    def echoing(url: str, **asked: Any) -> Answer:  # a gateway that answers with what it was sent
        return Answer(502, said=f"HTTP 502 for {asked.get('headers')}")

    platform = _platform(stub, state, tmp_path, ask=echoing)
    verdict = gitlab_checks.root_password_check(platform)
    shown = platform.secrets.masked(f"{verdict.saw} {verdict.fix}")
    assert verdict.status == FAIL
    assert "Authorization" in shown
    assert ROOT_PASSWORD not in shown
    assert base64.b64encode(f"root:{ROOT_PASSWORD}".encode()).decode() not in shown


def test_roots_password_is_not_sent_when_gitlab_takes_no_password_over_git(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.settings["password_authentication_enabled_for_git"] = False
    verdict = gitlab_checks.root_password_check(_platform(stub, state, tmp_path, ask=services.ask))
    assert verdict.status == WARN
    assert "password_authentication_enabled_for_git" in verdict.saw
    assert "/users/sign_in" in verdict.fix
    assert not [call for call in state.calls if ".git/" in call]


def test_roots_password_is_not_sent_when_root_has_two_factor_authentication(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.two_factor.add(ADMIN)
    verdict = gitlab_checks.root_password_check(_platform(stub, state, tmp_path, ask=services.ask))
    assert verdict.status == WARN
    assert "two-factor" in verdict.saw
    assert not [call for call in state.calls if ".git/" in call]


def test_roots_password_refused_while_gitlab_requires_two_factor_is_a_warning(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.settings["require_admin_two_factor_authentication"] = True
    verdict = gitlab_checks.root_password_check(_platform(stub, state, tmp_path, ask=services.ask, password="refused-under-2fa-890"))
    assert verdict.status == WARN
    assert "require_admin_two_factor_authentication" in verdict.saw


HEALTHZ = {f"{GUESTBOOK}/healthz": Answer(200, said="HTTP 200")}
PIPELINE_URL = "https://gitlab.blueprint.test/blueprint-apps/guestbook/-/pipelines/900"


def _pipeline_of_the_next_commit(
    clock: FakeClock, state: GitLabState, *, starts: float, ends: float | None, status: str = "success"
) -> None:
    """The pipeline GitLab runs for the commit the check makes: it appears `starts` seconds on, and ends `status` at `ends`."""
    run: dict[str, Any] = {"id": 900, "ref": "main", "status": "pending", "web_url": PIPELINE_URL}
    clock.at(starts, lambda: state.repository.pipelines.append({**run, "sha": state.repository.head()}))
    if ends is not None:
        clock.at(ends, lambda: state.repository.pipelines[-1].update(status=status))


@pytest.fixture
def deep(state: GitLabState, monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A repository with the sync's files, its commit's pipeline done, and a clock the test drives."""
    state.repository.files = {"app.py": "print('hi')\n"}
    state.repository.commits.append({"id": "a" * 40, "message": "blueprint: sync from apps/", "actions": []})
    state.repository.pipelines.append(
        {"id": 800, "ref": "main", "sha": "a" * 40, "status": "success", "web_url": f"{PIPELINE_URL[:-3]}800"}
    )
    return install(monkeypatch)


def test_deep_commits_no_change_and_reports_the_seconds_to_deployed(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=85)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == PASS
    assert "85 s" in verdict.saw
    assert "guestbook" in verdict.saw
    assert state.repository.commits[-1]["actions"] == []
    assert state.repository.files == {"app.py": "print('hi')\n"}


def test_deep_over_the_promised_120_s_is_a_warning(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=150)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == WARN
    assert "150 s" in verdict.saw
    assert "120 s" in verdict.saw


def test_deep_pipeline_that_fails_fails_naming_its_job_and_url(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=60, status="failed")
    state.repository.jobs[900] = [{"name": "deploy", "stage": "deploy", "web_url": "https://gitlab.blueprint.test/jobs/9"}]
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == FAIL
    assert PIPELINE_URL in verdict.saw
    assert "job 'deploy' (stage deploy) failed" in verdict.saw
    assert verdict.fix


def test_deep_pipeline_that_never_ends_fails_at_the_limit(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=None)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == FAIL
    assert f"did not finish within {gitlab_checks.DEEP_SECONDS}s" in verdict.saw
    assert PIPELINE_URL in verdict.saw
    assert "pipelineTimeout" not in verdict.saw + verdict.fix
    assert deep.waited <= gitlab_checks.DEEP_SECONDS


def test_deep_app_that_does_not_answer_after_its_pipeline_fails(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=85)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers({})))
    assert verdict.status == FAIL
    assert f"{GUESTBOOK}/healthz" in verdict.saw
    assert verdict.fix


def test_deep_commits_nothing_into_a_project_blueprint_did_not_make(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    """As the sync (decision 30): a project at the app's path without phase3's mark (made again by hand,
    or by someone else) gets no commit, and so no pipeline run as root."""
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=85)
    guestbook = next(project for project in state.projects.values() if project["path"] == "guestbook")
    state.attributes[f"projects/{guestbook['id']}"] = {"blueprint_owner": "someone-else/phase3"}
    commits = list(state.repository.commits)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == SKIP
    assert verdict.saw == (
        "the project of app guestbook is blueprint-apps/guestbook, and its blueprint_owner is 'someone-else/phase3', "
        "not 'blueprint/phase3': not ours, not committed"
    )
    assert state.repository.commits == commits
    assert not [call for call in state.calls if call.startswith("POST")]


def test_deep_in_the_dev_stack_commits_into_the_project_the_dev_stack_made(
    stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock
) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=85)
    for key in list(state.attributes):
        if key.startswith("projects/"):
            state.attributes[key] = {"blueprint_owner": "blueprint/dev"}
    platform = _platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ)))
    assert gitlab_checks.deep_pipeline_check(platform).status == SKIP
    assert gitlab_checks.deep_pipeline_check(platform, stack="dev").status == PASS


def test_deep_check_runs_only_with_deep(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    assert gitlab_checks.EDIT_TO_DEPLOYED not in [spec.name for _, spec in specs(_platform(stub, state, tmp_path))]


@pytest.mark.parametrize("failing", ["", services.PIPELINES, services.APPS])
def test_deep_commits_only_once_the_pipelines_pass_and_the_apps_answer(
    stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock, failing: str
) -> None:
    """A `--deep` run whose every other check passes but `failing` (one that fails) makes its commit
    only when none fails; else the timed commit is skipped, naming it, and the project is left as it was."""
    platform = _platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ)))
    platform.deep = True
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=85)
    commits = len(state.repository.commits)

    def stand_in(spec: Spec) -> Spec:
        verdict = failed("broken", "fix it") if spec.name == failing else passed("fine")
        return spec if spec.name == gitlab_checks.EDIT_TO_DEPLOYED else dataclasses.replace(spec, run=lambda: verdict)

    results = run_all([stand_in(spec) for _, spec in specs(platform)], tick=0.01, deadline=deadline(platform))
    [timed] = [result for result in results if result.name == gitlab_checks.EDIT_TO_DEPLOYED]
    assert (timed.status, timed.skipped_because, len(state.repository.commits) - commits) == (
        (PASS, "", 1) if not failing else (SKIP, failing, 0)
    )


def test_deep_checks_the_mark_of_the_stack_that_made_the_projects(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path)
    platform.deep = True
    for dev, stack in ((False, "phase3"), (True, "dev")):
        run = {spec.name: spec for _, spec in specs(platform, dev=dev)}[gitlab_checks.EDIT_TO_DEPLOYED].run
        assert run.args == (platform, stack)  # type: ignore[attr-defined]


REGISTRY_JWT = "eyJhbGciOiJSUzI1NiJ9.registry-jwt-payload-0123.signature"


def _registry(*, issues: bool = True, takes: bool = True) -> Any:
    """GitLab's `/jwt/auth` and the registry's `/v2/`, as `docker login` meets them: a token for root's
    admin token (Basic auth), and the registry taking that token (Bearer)."""
    basic = "Basic " + base64.b64encode(f"root:{TOKEN}".encode()).decode()

    def ask(url: str, *, headers: dict[str, str] | None = None, **_: Any) -> Answer:
        said = (headers or {}).get("Authorization", "")
        if url.endswith("/jwt/auth?service=container_registry"):
            return Answer(200, body={"token": REGISTRY_JWT}, said="HTTP 200") if issues and said == basic else Answer(401, said="HTTP 401")
        if url.startswith(f"https://{REGISTRY}:") and url.endswith("/v2/"):  # GitLab's port: the gateway serves both
            return Answer(200, body={}, said="HTTP 200") if takes and said == f"Bearer {REGISTRY_JWT}" else Answer(401, said="HTTP 401")
        return Answer(None, said=f"nothing answers at {url}")

    return ask


def test_the_registry_login_passes_with_the_token_gitlab_issues(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    verdict = gitlab_checks.registry_login_check(_platform(stub, state, tmp_path, ask=_registry()))
    assert verdict.status == PASS
    assert f"https://{REGISTRY}:{stub[1].rsplit(':', 1)[1]}/v2/ takes" in verdict.saw


def test_the_registry_login_fails_when_gitlab_issues_no_token(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    platform = _platform(stub, state, tmp_path, ask=_registry(issues=False))
    verdict = gitlab_checks.registry_login_check(platform)
    assert verdict.status == FAIL
    assert "/jwt/auth" in verdict.saw
    assert "--phase 2" in verdict.fix


def test_the_registry_login_fails_when_the_registry_refuses_the_token_and_never_shows_it(
    stub: Any, state: GitLabState, tmp_path: Path
) -> None:
    platform = _platform(stub, state, tmp_path, ask=_registry(takes=False))
    verdict = gitlab_checks.registry_login_check(platform)
    assert verdict.status == FAIL
    assert "refuses the token" in verdict.saw
    assert "gitlab-registry" in verdict.fix
    assert REGISTRY_JWT not in platform.secrets.masked(f"Bearer {REGISTRY_JWT}")
