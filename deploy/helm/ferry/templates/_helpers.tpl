{{/* Resource names: <release>-<chart> (or fullnameOverride), then -<service>. */}}
{{- define "ferry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ferry.name" -}}
{{- printf "%s-%s" (include "ferry.fullname" .root) .service -}}
{{- end -}}

{{- define "ferry.selectorLabels" -}}
app.kubernetes.io/name: ferry
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end -}}

{{- define "ferry.labels" -}}
{{ include "ferry.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The ports every service listens on (the local stack's, checked by e2e/helm). */}}
{{- define "ferry.grpcPort" -}}
{{- get (dict "catalogsvc" 7101 "transcodesvc" 7102 "appendsvc" 7103 "frontdoor" 7104 "fetchsvc" 7105 "schemasvc" 7106) .service -}}
{{- end -}}
{{- define "ferry.metricsPort" -}}
{{- get (dict "catalogsvc" 7201 "transcodesvc" 7202 "appendsvc" 7203 "frontdoor" 7204 "fetchsvc" 7205 "schemasvc" 7206) .service -}}
{{- end -}}

{{/* Settings every service takes, and its internal gRPC security. */}}
{{- define "ferry.commonEnv" -}}
- name: FERRY_LISTEN
  value: "0.0.0.0:{{ include "ferry.grpcPort" . }}"
- name: FERRY_METRICS_ADDR
  value: "0.0.0.0:{{ include "ferry.metricsPort" . }}"
- name: FERRY_LOG_LEVEL
  value: {{ .root.Values.logLevel | quote }}
- name: FERRY_LOG_FORMAT
  value: json
# Go runs code on as many threads as the pod's CPU request, rounded up,
# rather than the node's cores: the chart sets no CPU limit, from which Go
# would take it (docs/deploy.md, Sizing).
- name: GOMAXPROCS
  valueFrom:
    resourceFieldRef:
      resource: requests.cpu
      divisor: "1"
{{- with .root.Values.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- if .root.Values.grpc.plaintext }}
- name: FERRY_GRPC_PLAINTEXT
  value: "true"
{{- else }}
- name: FERRY_GRPC_TLS_CA
  value: /etc/ferry/grpc-tls/ca.pem
- name: FERRY_GRPC_TLS_CERT
  value: /etc/ferry/grpc-tls/{{ .service }}.pem
- name: FERRY_GRPC_TLS_KEY
  value: /etc/ferry/grpc-tls/{{ .service }}-key.pem
{{- end }}
{{- end -}}

{{- define "ferry.commonMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if not .root.Values.grpc.plaintext }}
- name: grpc-tls
  mountPath: /etc/ferry/grpc-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "ferry.commonVolumes" -}}
- name: tmp
  emptyDir: {}
{{- if not .root.Values.grpc.plaintext }}
- name: grpc-tls
  secret:
    secretName: {{ required "grpc.tlsSecret is required unless grpc.plaintext is true" .root.Values.grpc.tlsSecret }}
{{- end }}
{{- end -}}

{{/* The container of a service: image, ports, probes (the binary's own -health-probe, which
     speaks the same gRPC security as the service), security context. */}}
{{- define "ferry.containerBase" -}}
name: {{ .service }}
image: "{{ .root.Values.image.repository }}/{{ .service }}:{{ .root.Values.image.tag }}"
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
securityContext:
  {{- toYaml .root.Values.securityContext | nindent 2 }}
readinessProbe:
  exec:
    command: ["/usr/local/bin/service", "-health-probe"]
  periodSeconds: 5
  timeoutSeconds: 4
livenessProbe:
  exec:
    command: ["/usr/local/bin/service", "-health-probe"]
  initialDelaySeconds: 10
  periodSeconds: 10
  timeoutSeconds: 4
  failureThreshold: 6
resources:
  {{- toYaml (get .root.Values .service).resources | nindent 2 }}
{{- end -}}

{{- define "ferry.podSpecBase" -}}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
