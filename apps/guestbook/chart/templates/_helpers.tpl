{{- define "guestbook.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object names: the release name, prefixed with the chart name unless it already contains it. */}}
{{- define "guestbook.fullname" -}}
{{- $name := include "guestbook.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Selector labels: stable for the release's life, because a Deployment's selector cannot change. */}}
{{- define "guestbook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "guestbook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "guestbook.labels" -}}
{{ include "guestbook.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The image, refusing to render without the values CI sets: by digest when CI names one (what the
build pushed, which no later push can replace), else by tag (CI's lint, before the build). */}}
{{- define "guestbook.image" -}}
{{- $repository := required "image.repository is required: CI sets it to the project's registry image" .Values.image.repository }}
{{- if .Values.image.digest }}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .Values.image.digest) }}
{{- fail (printf "image.digest must be sha256:<64 hex digits>, as BuildKit reports it; got %q" (.Values.image.digest | trunc 80)) }}
{{- end }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- $tag := required "image.tag is required: CI sets it to the commit it built (or image.digest, to what it pushed)" .Values.image.tag }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}
