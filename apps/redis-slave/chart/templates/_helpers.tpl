{{/* Selector labels: stable for the release's life, because a Deployment's selector cannot change.
The component keeps the master's Service off these pods, which share the name "redis". */}}
{{- define "redis-slave.selectorLabels" -}}
app.kubernetes.io/name: redis
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: replica
{{- end }}

{{- define "redis-slave.labels" -}}
{{ include "redis-slave.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
