{{/* Names, labels and the image reference shared by every template. */}}

{{- define "carbonshift.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name: "carbonshift" for a release named carbonshift, as in
deploy/ (carbonshift-controller, carbonshift-webhook, ...). */}}
{{- define "carbonshift.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "carbonshift.labels" -}}
app.kubernetes.io/name: {{ include "carbonshift.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: carbonshift
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component (controller or hub): stable across upgrades. */}}
{{- define "carbonshift.selectorLabels" -}}
app.kubernetes.io/name: {{ include "carbonshift.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "carbonshift.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "carbonshift.providersSecret" -}}
{{- default (printf "%s-providers" (include "carbonshift.fullname" .)) .Values.providers.existingSecret -}}
{{- end -}}

{{/* Provider keys and settings as CARBONSHIFT_* variables (carbon/providers/config.py). */}}
{{- define "carbonshift.providerEnv" -}}
{{- $secret := include "carbonshift.providersSecret" . -}}
{{- $optional := not (empty .Values.providers.existingSecret) -}}
{{- $v := .Values.providers -}}
{{- range $key, $env := dict "electricitymaps-token" "CARBONSHIFT_ELECTRICITYMAPS_TOKEN" "watttime-username" "CARBONSHIFT_WATTTIME_USERNAME" "watttime-password" "CARBONSHIFT_WATTTIME_PASSWORD" }}
{{- $given := index (dict "electricitymaps-token" $v.electricityMapsToken "watttime-username" $v.wattTimeUsername "watttime-password" $v.wattTimePassword) $key }}
{{- if or $optional $given }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef: {name: {{ $secret }}, key: {{ $key }}, optional: true}
{{- end }}
{{- end }}
{{- range $name, $value := $v.env }}
- name: {{ printf "CARBONSHIFT_%s" (trimPrefix "CARBONSHIFT_" $name) }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{- define "carbonshift.tlsSecret" -}}
{{- printf "%s-tls" (include "carbonshift.fullname" .) -}}
{{- end -}}
