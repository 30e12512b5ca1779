# Print a kubeconfig of $DEPLOYER in $NAMESPACE with a token of $TOKEN_HOURS hours, and nothing else, with
# the cluster's admin kubeconfig at $ADMIN_KUBECONFIG, which the provider holds in memory (providers/kind_access.py).
# The token is bound to a Secret of its own, $ANCHOR: deleting it voids the token. Every earlier anchor but
# $KEEP_ANCHOR (the token CI holds now) is deleted first, so a token whose kubeconfig never reached the state
# (a run killed after this script) is void by the next run (providers/deploy_kubeconfig.py).
set -eu
umask go-w
admin=$ADMIN_KUBECONFIG
err=$(mktemp)
trap 'rm -f "$err"' EXIT
# Anchors go by their name, which no one can change: the deployer may edit Secrets here, labels included.
anchors=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" get secrets -o name)
for found in $anchors; do
  case "$found" in
    "secret/$KEEP_ANCHOR") ;;
    "secret/$DEPLOYER-token-"*) kubectl --kubeconfig "$admin" -n "$NAMESPACE" delete "$found" --ignore-not-found >&2 ;;
  esac
done
uid=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" create -f - -o 'jsonpath={.metadata.uid}' <<ANCHOR
apiVersion: v1
kind: Secret
type: Opaque
metadata:
  name: $ANCHOR
  labels:
    $ANCHOR_LABEL: $DEPLOYER
ANCHOR
)
token=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" create token "$DEPLOYER" --duration="${TOKEN_HOURS}h" \
  --bound-object-kind=Secret --bound-object-name="$ANCHOR" --bound-object-uid="$uid")
# The cluster's CA, from the ConfigMap kube-controller-manager publishes in every namespace shortly
# after it is made (its root-ca-cert-publisher): asked until it answers, a few times, and never taken
# empty, which would be a kubeconfig that trusts nothing (recorded until the token's renewal).
pem=""
for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  if pem=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" get configmap kube-root-ca.crt -o jsonpath='{.data.ca\.crt}' 2>"$err") \
    && [ -n "$pem" ]; then
    break
  fi
  pem=""
  [ "$attempt" = 15 ] || sleep 2
done
if [ -z "$pem" ]; then
  echo "blueprint: the ConfigMap kube-root-ca.crt in namespace $NAMESPACE gave no CA certificate after 15 tries" \
    "($(tail -n 1 "$err" 2>/dev/null)); kube-controller-manager publishes it in every namespace: check that it" \
    "runs (kubectl -n kube-system get pods), then run the up again" >&2
  exit 1
fi
ca=$(printf '%s\n' "$pem" | base64 | tr -d '\n')
cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: platform
  cluster:
    server: https://kubernetes.default.svc
    certificate-authority-data: $ca
users:
- name: $DEPLOYER
  user:
    token: $token
contexts:
- name: $DEPLOYER
  context:
    cluster: platform
    user: $DEPLOYER
    namespace: $NAMESPACE
current-context: $DEPLOYER
KUBECONFIG
