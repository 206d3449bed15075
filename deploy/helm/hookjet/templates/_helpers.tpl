{{/* The release's name for hookjet's objects, at most 63 characters. */}}
{{- define "hookjet.fullname" -}}
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

{{- define "hookjet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hookjet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hookjet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hookjet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hookjet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "hookjet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hookjet.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The mode, checked: "embedded" or "cluster". */}}
{{- define "hookjet.mode" -}}
{{- if not (has .Values.mode (list "embedded" "cluster")) -}}
{{- fail (printf "mode: %q; want embedded or cluster" .Values.mode) -}}
{{- end -}}
{{- if and (eq .Values.mode "cluster") (not .Values.nats.url) -}}
{{- fail "cluster mode needs nats.url: the NATS cluster's client URLs" -}}
{{- end -}}
{{- if and (eq .Values.mode "embedded") .Values.nats.url -}}
{{- fail "nats.url is set: that is cluster mode (mode: cluster); embedded mode runs its own NATS server" -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{- define "hookjet.replicas" -}}
{{- if eq (include "hookjet.mode" .) "cluster" -}}{{ .Values.cluster.replicas | int }}{{- else -}}1{{- end -}}
{{- end -}}

{{/* Secrets: the one the chart generates or the one named. */}}
{{- define "hookjet.adminSecret" -}}
{{- default (printf "%s-admin" (include "hookjet.fullname" .)) .Values.admin.existingSecret -}}
{{- end -}}

{{- define "hookjet.secretKeySecret" -}}
{{- default (printf "%s-secret-key" (include "hookjet.fullname" .)) .Values.secretKey.existingSecret -}}
{{- end -}}

{{/* Whether the pod reads security.secret_key from a Secret. */}}
{{- define "hookjet.secretKeyFromSecret" -}}
{{- if or .Values.secretKey.existingSecret (eq (include "hookjet.mode" .) "cluster") -}}true{{- end -}}
{{- end -}}

{{/* Whether the embedded server's port is a Service (and so requires credentials). */}}
{{- define "hookjet.natsExposed" -}}
{{- if and (eq (include "hookjet.mode" .) "embedded") .Values.nats.service.enabled -}}true{{- end -}}
{{- end -}}

{{- define "hookjet.natsSecret" -}}
{{- default (printf "%s-nats" (include "hookjet.fullname" .)) .Values.nats.auth.existingSecret -}}
{{- end -}}

{{/* A value kept from the Secret already installed, or a new one: generated
secrets survive upgrades. (helm template has no cluster: it generates anew.) */}}
{{- define "hookjet.keep" -}}
{{- $s := lookup "v1" "Secret" .ctx.Release.Namespace .name -}}
{{- if and $s $s.data (index $s.data .key) -}}
{{- index $s.data .key -}}
{{- else -}}
{{- .new | b64enc -}}
{{- end -}}
{{- end -}}

{{/* hookjet.yaml: values' config with the keys the chart owns. */}}
{{- define "hookjet.config" -}}
{{- $mode := include "hookjet.mode" . -}}
{{- $cfg := deepCopy (default dict .Values.config) -}}
{{- $nats := dict -}}
{{- if eq $mode "cluster" -}}
{{- $_ := set $nats "url" .Values.nats.url -}}
{{- if .Values.nats.credsSecret -}}
{{- $_ := set $nats "creds" (printf "/etc/hookjet/nats-creds/%s" .Values.nats.credsKey) -}}
{{- end -}}
{{- if .Values.nats.tlsCASecret -}}
{{- $_ := set $nats "tls_ca" (printf "/etc/hookjet/nats-ca/%s" .Values.nats.tlsCAKey) -}}
{{- end -}}
{{- else if include "hookjet.natsExposed" . -}}
{{- $_ := set $nats "listen" (printf "0.0.0.0:%d" (.Values.nats.service.port | int)) -}}
{{- else -}}
{{- $_ := set $nats "listen" "127.0.0.1:4222" -}}
{{- end -}}
{{- $owned := dict "data_dir" "/data" "admin" (dict "listen" "0.0.0.0:8089") "nats" $nats -}}
{{- if .Values.portal.enabled -}}
{{- $_ := set $owned "portal" (dict "listen" "0.0.0.0:8090") -}}
{{- end -}}
{{- $cfg = mergeOverwrite $cfg $owned -}}
{{- toYaml $cfg -}}
{{- end -}}
