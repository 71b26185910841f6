{{/* Names as the O-RAN SC onboarder's xapp-std charts make them, so routes and appmgr agree:
     <namespace>-<name>, service-<namespace>-<name>-rmr / -http, configmap-<namespace>-<name>. */}}
{{- define "ricxapp.name" -}}
{{- default .Chart.Name .Values.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ricxapp.namespace" -}}
{{- default .Release.Namespace .Values.nsPrefix -}}
{{- end -}}

{{- define "ricxapp.fullname" -}}
{{- $name := include "ricxapp.name" . -}}
{{- default (printf "%s-%s" (include "ricxapp.namespace" .) $name) .Values.fullname | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ricxapp.servicename.rmr" -}}
{{- printf "service-%s-rmr" (include "ricxapp.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ricxapp.servicename.http" -}}
{{- printf "service-%s-http" (include "ricxapp.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ricxapp.configmapname" -}}
{{- printf "configmap-%s" (include "ricxapp.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ricxapp.apitokensecret" -}}
{{- default (printf "%s-api-token" (include "ricxapp.fullname" .) | trunc 63 | trimSuffix "-") .Values.apiToken.existingSecret -}}
{{- end -}}

{{- define "ricxapp.serviceaccount" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ricxapp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ricxapp.labels" -}}
app: {{ include "ricxapp.namespace" . }}-{{ include "ricxapp.name" . }}
release: {{ .Release.Name }}
app.kubernetes.io/name: {{ include "ricxapp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: octoric
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "ricxapp.selector" -}}
app: {{ include "ricxapp.namespace" . }}-{{ include "ricxapp.name" . }}
release: {{ .Release.Name }}
{{- end -}}

{{/* The xApp's ports: the values where set, else the descriptor's (JSON: http, rmrData,
     rmrRoute). */}}
{{- define "ricxapp.ports" -}}
{{- $d := .Files.Get "config-file.json" | fromJson -}}
{{- if not $d.xapp_name -}}{{- fail "config-file.json is missing or has no xapp_name" -}}{{- end -}}
{{- $own := dict -}}
{{- range $d.messaging.ports -}}{{- $_ := set $own .name .port -}}{{- end -}}
{{- $p := .Values.ports | default dict -}}
{{- toJson (dict "http" ($p.http | default (get $own "http")) "rmrData" ($p.rmrData | default (get $own "rmr-data")) "rmrRoute" ($p.rmrRoute | default (get $own "rmr-route"))) -}}
{{- end -}}

{{/* The image: the values where set, else the descriptor's (JSON: registry, name, tag). */}}
{{- define "ricxapp.image" -}}
{{- $d := .Files.Get "config-file.json" | fromJson -}}
{{- $own := (first $d.containers).image -}}
{{- $i := .Values.image | default dict -}}
{{- toJson (dict "registry" ($i.registry | default $own.registry) "name" ($i.name | default $own.name) "tag" (toString ($i.tag | default $own.tag))) -}}
{{- end -}}

{{/* The descriptor the chart ships (config-file.json, the same file `octoric run` registers),
     with this release's ports, image and controls. */}}
{{- define "ricxapp.descriptor" -}}
{{- $d := .Files.Get "config-file.json" | fromJson -}}
{{- $ports := include "ricxapp.ports" . | fromJson -}}
{{- $byName := dict "http" $ports.http "rmr-data" $ports.rmrData "rmr-route" $ports.rmrRoute -}}
{{- range $d.messaging.ports -}}
{{- if hasKey $byName .name -}}{{- $_ := set . "port" (get $byName .name) -}}{{- end -}}
{{- end -}}
{{- $img := include "ricxapp.image" . | fromJson -}}
{{- range $d.containers -}}{{- $_ := set . "image" $img -}}{{- end -}}
{{- $_ := set $d "controls" (mergeOverwrite (deepCopy $d.controls) (deepCopy (.Values.controls | default dict))) -}}
{{- toPrettyJson $d -}}
{{- end -}}

{{/* A NetworkPolicy peer: the pods of the platform namespace (first argument) whose `app`
     label is one of the list (second argument). */}}
{{- define "ricxapp.netpol.platform" -}}
{{- $ns := index . 0 -}}
{{- $apps := index . 1 | uniq -}}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ $ns | quote }}
  podSelector:
    matchExpressions:
      - key: app
        operator: In
        values: {{ $apps | toJson }}
{{- end -}}
