# Print a kubeconfig of $DEPLOYER in $NAMESPACE with a token of $TOKEN_HOURS hours, and nothing else, from the
# admin credentials of the kind cluster $KIND_CLUSTER_NAME (components/ci_access.py).
set -eu
umask go-w
admin=$(mktemp)
trap 'rm -f "$admin" "$admin.err"' EXIT
kind get kubeconfig --name "$KIND_CLUSTER_NAME" > "$admin"
token=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" create token "$DEPLOYER" --duration="${TOKEN_HOURS}h")
# The cluster's CA, from the ConfigMap kube-controller-manager publishes in every namespace shortly
# after it is made (its root-ca-cert-publisher): asked until it answers, a few times, and never taken
# empty, which would be a kubeconfig that trusts nothing (recorded until the token's renewal).
pem=""
for attempt in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  if pem=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" get configmap kube-root-ca.crt -o jsonpath='{.data.ca\.crt}' 2>"$admin.err") \
    && [ -n "$pem" ]; then
    break
  fi
  pem=""
  [ "$attempt" = 15 ] || sleep 2
done
if [ -z "$pem" ]; then
  echo "blueprint: the ConfigMap kube-root-ca.crt in namespace $NAMESPACE gave no CA certificate after 15 tries" \
    "($(tail -n 1 "$admin.err" 2>/dev/null)); kube-controller-manager publishes it in every namespace: check that it" \
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
