{{/* The controller's config.yaml: the user's controller.config, with the sections that must
agree with the Deployment's ports, the TLS mount and the RBAC Role set by the chart. */}}
{{- define "carbonshift.controllerConfig" -}}
{{- $tls := dict "cert_file" "/etc/carbonshift/tls/tls.crt" "key_file" "/etc/carbonshift/tls/tls.key" -}}
{{- $fixed := dict
  "webhook" (merge (dict "enabled" .Values.webhook.enabled "host" "0.0.0.0" "port" .Values.webhook.port) $tls)
  "extender" (merge (dict "enabled" .Values.extender.enabled "host" "0.0.0.0" "port" .Values.extender.port) $tls)
  "metrics" (dict "host" "0.0.0.0" "port" .Values.metrics.port)
  "leader_election" (dict "namespace" .Release.Namespace "lease_name" (printf "%s-controller" (include "carbonshift.fullname" .)))
-}}
{{- toYaml (mustMergeOverwrite (deepCopy .Values.controller.config) $fixed) -}}
{{- end -}}

{{- define "carbonshift.hubConfig" -}}
{{- $fixed := dict
  "namespace" .Release.Namespace
  "metrics" (dict "enabled" true "host" "0.0.0.0" "port" .Values.metrics.port)
  "leader_election" (dict "enabled" true "namespace" .Release.Namespace "lease_name" (printf "%s-hub" (include "carbonshift.fullname" .)))
-}}
{{- toYaml (mustMergeOverwrite (deepCopy .Values.hub.config) $fixed) -}}
{{- end -}}
