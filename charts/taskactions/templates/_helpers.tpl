{{- define "taskactions.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "taskactions.labels" -}}
app.kubernetes.io/name: taskactions
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "taskactions.selector" -}}
app.kubernetes.io/name: taskactions
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The Host names the server answers to: its Service's, and those given. */}}
{{- define "taskactions.hosts" -}}
{{- $n := include "taskactions.name" . -}}
{{- $hosts := list $n (printf "%s.%s" $n .Release.Namespace) (printf "%s.%s.svc" $n .Release.Namespace) -}}
{{- join "," (concat $hosts .Values.allowedHosts) -}}
{{- end -}}
