{{/*
Names, labels and checks shared by every template.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "bloomgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* RELEASE-NAME, or RELEASE when it already contains the name, or fullnameOverride; at most 63 characters. */}}
{{- define "bloomgate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "bloomgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select the pods: never change them in an upgrade (a StatefulSet's selector is immutable). */}}
{{- define "bloomgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bloomgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every resource's labels. */}}
{{- define "bloomgate.labels" -}}
helm.sh/chart: {{ include "bloomgate.chart" . }}
{{ include "bloomgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: bloomgate
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The ServiceAccount the pods run as. */}}
{{- define "bloomgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "bloomgate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* registry/repository:tag, or @digest when a digest is set. */}}
{{- define "bloomgate.image" -}}
{{- $repository := .Values.image.repository -}}
{{- if .Values.image.registry -}}
{{- $repository = printf "%s/%s" .Values.image.registry .Values.image.repository -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Refuses values that would render a pod that cannot work: the metrics port must be the one the service
listens on, and the state directory must be the persistent volume.
*/}}
{{- define "bloomgate.validateValues" -}}
{{- $listen := toString (dig "metrics" "listen" "127.0.0.1:9464" .Values.config) -}}
{{- $port := toString .Values.containerPorts.metrics -}}
{{- if not (hasSuffix (printf ":%s" $port) $listen) -}}
{{- fail (printf "config.metrics.listen (%s) must use containerPorts.metrics (%s), on 0.0.0.0 so probes and Prometheus reach it" $listen $port) -}}
{{- end -}}
{{- if hasPrefix "127." $listen -}}
{{- fail (printf "config.metrics.listen (%s) is a loopback address: probes and Prometheus cannot reach it; use 0.0.0.0:%s" $listen $port) -}}
{{- end -}}
{{- $stateDir := toString (dig "state" "dir" "./state" .Values.config) -}}
{{- if ne (trimSuffix "/" $stateDir) (trimSuffix "/" .Values.persistence.mountPath) -}}
{{- fail (printf "config.state.dir (%s) must equal persistence.mountPath (%s): it is the only writable path" $stateDir .Values.persistence.mountPath) -}}
{{- end -}}
{{- end -}}
