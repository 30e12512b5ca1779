"""A fake `podman` for the scripts' tests, beside the fake `docker`s of tests/components/test_image_cache.py
and tests/components/test_host_folder.py: it records each call in $CALLS and answers as podman v5.8.2's
CLI does where it differs from Docker's, so a script that asks Podman in Docker's words fails here as
it would on a real machine.

- `-v`: `podman version 5.8.2` (kind's test, pkg/cluster/internal/providers/podman/util.go `IsAvailable`).
- `info --format {{.Host.Security.Rootless}}`: $ROOTLESS (default false); Docker's `{{.SecurityOptions}}`
  and `{{.ServerVersion}}` are template errors (libpod/define/info.go has neither field).
- `network inspect -f` with `.Subnets`: $NETWORK_FOUND, or no such network; Docker's `.IPAM` is a template error
  (podman-network-inspect.1.md lists no IPAM).
- `ps --filter publish=...`: refused (options/filter.container.md has no `publish`).
- `inspect -f`: `{{.State.Status}} {{.RestartCount}}` is "running 0"; labels from $EXISTING_OWNER, $EXISTING_SPEC.
"""

from __future__ import annotations

FAKE_PODMAN = """\
echo "$*" >> "$CALLS"
template_error() { echo "Error: template: $1: can't evaluate field $2" >&2; exit 125; }
case "$1 $2" in
  "-v "*) echo "podman version 5.8.2"; exit 0 ;;
  "info "*)
    case "$*" in
      *SecurityOptions*) template_error info SecurityOptions ;;
      *ServerVersion*) template_error info ServerVersion ;;
      *Rootless*) echo "${ROOTLESS:-false}"; exit 0 ;;
    esac
    [ -n "${PODMAN_DOWN:-}" ] && { echo "Error: unable to connect to Podman socket" >&2; exit 125; }
    exit 0 ;;
  "network inspect")
    case "$*" in *IPAM*) template_error inspect IPAM ;; esac
    [ -n "${NETWORK_FOUND:-}" ] || { echo "Error: network not found" >&2; exit 125; }
    echo "$NETWORK_FOUND"; exit 0 ;;
  "network create") exit 0 ;;
  "ps "*)
    case "$*" in *publish=*) echo "Error: invalid filter \\"publish\\"" >&2; exit 125 ;; esac
    printf '%s\\n' ${NODES:-} ;;
  "inspect -f")
    case "$3" in
      *Status*) echo "running 0"; exit 0 ;;
      *RestartCount*) echo 0; exit 0 ;;
      *Networks*) echo "${NETWORKS:-kind }"; exit 0 ;;
      *Name*) exit 0 ;;
    esac
    [ -n "${EXISTING_OWNER:-}" ] || exit 125
    case "$3" in *owner*) echo "$EXISTING_OWNER" ;; *) echo "${EXISTING_SPEC:-}" ;; esac ;;
esac
exit 0
"""
