{{/*
outrigger.name is the chart's name, or nameOverride.
*/}}
{{- define "outrigger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
outrigger.fullname prefixes every resource's name: fullnameOverride, else
"<release>-<name>", or the release name alone when it already contains the
chart's name. Truncated to 45 characters so that the longest suffix added to
it ("-sidecar-bootstrap") still fits the 63 of a DNS label.
*/}}
{{- define "outrigger.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
outrigger.chart is "<name>-<version>" for the helm.sh/chart label.
*/}}
{{- define "outrigger.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
outrigger.labels go on every object the chart makes.
*/}}
{{- define "outrigger.labels" -}}
helm.sh/chart: {{ include "outrigger.chart" . }}
{{ include "outrigger.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
outrigger.selectorLabels select the controller's pods; they never change
across upgrades (a Deployment's selector is immutable).
*/}}
{{- define "outrigger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "outrigger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
outrigger.serviceAccountName is the controller's ServiceAccount.
*/}}
{{- define "outrigger.serviceAccountName" -}}
{{- include "outrigger.fullname" . }}-controller
{{- end }}

{{/*
outrigger.webhookService is the webhook Service's name (shared contract:
fullname + "-webhook").
*/}}
{{- define "outrigger.webhookService" -}}
{{- include "outrigger.fullname" . }}-webhook
{{- end }}

{{/*
outrigger.webhookSecret holds the webhook's serving certificate (tls.crt,
tls.key, and ca.crt).
*/}}
{{- define "outrigger.webhookSecret" -}}
{{- include "outrigger.fullname" . }}-webhook-tls
{{- end }}

{{/*
outrigger.webhookCertDir is where the controller reads tls.crt and tls.key
(the controller's --webhook-cert-dir default).
*/}}
{{- define "outrigger.webhookCertDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end }}

{{/*
outrigger.sidecarBootstrapDir is where the custom sidecar bootstrap
ConfigMap is mounted in the controller.
*/}}
{{- define "outrigger.sidecarBootstrapDir" -}}
/etc/outrigger/sidecar
{{- end }}

{{/*
outrigger.controlPlaneCADir is where the control plane's CA bundle
ConfigMap (sidecar.controlPlane.tls.caBundle) is mounted in the controller.
*/}}
{{- define "outrigger.controlPlaneCADir" -}}
/etc/outrigger/control-plane
{{- end }}

{{/*
outrigger.image is "<repository>:<tag>", the tag defaulting to appVersion.
Call with (dict "image" .Values.x.image "root" $).
*/}}
{{- define "outrigger.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) }}
{{- end }}

{{/*
outrigger.monitoringFile is a file of charts/outrigger/monitoring (written
with the proxy_ naming) in the naming of sidecar.prometheusNaming: "envoy" turns
every proxy_ metric and label prefix into envoy_, as --prometheus-naming
envoy does.
*/}}
{{- define "outrigger.monitoringFile" -}}
{{- $text := .root.Files.Get .file }}
{{- if eq .root.Values.sidecar.prometheusNaming "envoy" }}
{{- $text = $text | replace "proxy_" "envoy_" }}
{{- end }}
{{- $text }}
{{- end }}
