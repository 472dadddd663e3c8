{{/* Names and labels. */}}
{{- define "skillrouter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "skillrouter.fullname" -}}
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

{{- define "skillrouter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skillrouter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "skillrouter.labels" -}}
{{ include "skillrouter.commonLabels" . }}
{{ include "skillrouter.selectorLabels" . }}
{{- end -}}

{{- define "skillrouter.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The index build Job's pods. The Deployment, Service and PDB select
name and instance; another name keeps these pods out of all three (no
traffic, not counted as available) without touching the Deployment's
selector, which is immutable: a changed one fails `helm upgrade`. */}}
{{- define "skillrouter.indexJobLabels" -}}
app.kubernetes.io/name: {{ printf "%s-index-build" (include "skillrouter.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: index-build
app.kubernetes.io/part-of: {{ include "skillrouter.name" . }}
{{- end -}}

{{- define "skillrouter.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "skillrouter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "skillrouter.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "skillrouter.secretName" -}}
{{- default (printf "%s-secrets" (include "skillrouter.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* A git-sync container: the init one syncs once before the router
starts, the sidecar every period. With auth, HTTPS takes the username
and token from the Secret as environment variables; SSH mounts the
Secret's key and known_hosts, and runs as git-sync's own user (65533),
which the image's /etc/passwd names: ssh refuses to run as a user it
cannot look up, and the root filesystem is read-only, so --add-user
could not add one. The pod's fsGroup, a supplementary group of every
container, lets it write the shared volume and read the key. */}}
{{- define "skillrouter.gitSyncContainer" -}}
{{- $ := .ctx -}}
{{- $g := $.Values.skills.gitSync -}}
{{- $auth := $g.auth | default dict -}}
{{- $type := $auth.type | default "none" -}}
- name: {{ ternary "git-sync-init" "git-sync" .init }}
  image: {{ $g.image }}
  args:
    - --repo={{ $g.repo }}
    - --ref={{ $g.ref }}
    - --root=/git
    - --link=current
    {{- if .init }}
    - --one-time
    {{- else }}
    - --period={{ $g.period }}
    {{- end }}
    {{- if eq $type "ssh" }}
    - --ssh-key-file=/etc/git-secret/ssh
    - --ssh-known-hosts=true
    - --ssh-known-hosts-file=/etc/git-secret/known_hosts
    {{- end }}
  securityContext:
    {{- $sc := deepCopy ($.Values.securityContext | default dict) }}
    {{- if eq $type "ssh" }}
    {{- $_ := set $sc "runAsUser" 65533 }}
    {{- end }}
    {{- toYaml $sc | nindent 4 }}
  env:
    - name: HOME
      value: /tmp
    {{- if eq $type "https" }}
    - name: GITSYNC_USERNAME
      valueFrom:
        secretKeyRef:
          name: {{ $auth.existingSecret }}
          key: username
    - name: GITSYNC_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ $auth.existingSecret }}
          key: password
    {{- end }}
  volumeMounts:
    - name: git
      mountPath: /git
    - name: git-tmp
      mountPath: /tmp
    {{- if eq $type "ssh" }}
    - name: git-secret
      mountPath: /etc/git-secret
      readOnly: true
    {{- end }}
  {{- with $g.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* The folder the router scans: git-sync swaps a link under /git. */}}
{{- define "skillrouter.skillsRoot" -}}
{{- if eq .Values.skills.source "gitSync" -}}
{{- $sub := trimAll "/" .Values.skills.gitSync.subPath -}}
{{- if $sub -}}/git/current/{{ $sub }}{{- else -}}/git/current{{- end -}}
{{- else -}}
{{- .Values.skills.path -}}
{{- end -}}
{{- end -}}

{{/* The port the pods listen on (service.containerPort, 8080 unset). */}}
{{- define "skillrouter.containerPort" -}}
{{- .Values.service.containerPort | default 8080 -}}
{{- end -}}

{{/* The configuration file: the values' config with what the chart decides. */}}
{{- define "skillrouter.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int (include "skillrouter.containerPort" .))) -}}
{{- $_ := set $cfg "skills" (list (include "skillrouter.skillsRoot" .)) -}}
{{- $_ := set $cfg "watch" .Values.skills.watch -}}
{{- /* The Service's names are Host names the pods serve (docs/security.md). */ -}}
{{- $svc := include "skillrouter.fullname" . -}}
{{- $server := default (dict) $cfg.server -}}
{{- $hosts := concat (default (list) $server.allowed_hosts) (list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace)) -}}
{{- /* So are the Ingress's, which the controller passes on as Host. */ -}}
{{- if .Values.ingress.enabled -}}
{{- range .Values.ingress.hosts -}}
{{- if and (kindIs "map" .) .host (not (has .host $hosts)) -}}
{{- $hosts = append $hosts .host -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $server "allowed_hosts" $hosts -}}
{{- if and .Values.serviceMonitor.enabled (not $server.metrics_listen) -}}
{{- $_ := set $server "metrics_listen" (printf "0.0.0.0:%d" (int .Values.serviceMonitor.port)) -}}
{{- end -}}
{{- $_ := set $cfg "server" $server -}}
{{- /* In a pod a sidecar proxy (Istio, Linkerd) forwards every client from a
loopback address: the admin endpoints need auth.admin_token. */ -}}
{{- $auth := default (dict) $cfg.auth -}}
{{- if not (hasKey $auth "admin_loopback") -}}
{{- $_ := set $auth "admin_loopback" false -}}
{{- end -}}
{{- $_ := set $cfg "auth" $auth -}}
{{- if ne .Values.index.source "none" -}}
{{- $routing := default (dict) $cfg.routing -}}
{{- $_ := set $routing "prebuilt_index" .Values.index.path -}}
{{- $_ := set $cfg "routing" $routing -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{- define "skillrouter.validate" -}}
{{- if not (has .Values.skills.source (list "image" "configMap" "pvc" "gitSync")) -}}
{{- fail (printf "skills.source %q: want image, configMap, pvc or gitSync" .Values.skills.source) -}}
{{- end -}}
{{- if not (has .Values.index.source (list "none" "image" "pvc")) -}}
{{- fail (printf "index.source %q: want none, image or pvc" .Values.index.source) -}}
{{- end -}}
{{- if and (eq .Values.skills.source "gitSync") (not .Values.skills.gitSync.repo) -}}
{{- fail "skills.gitSync.repo is required with skills.source gitSync" -}}
{{- end -}}
{{- $gitAuth := .Values.skills.gitSync.auth | default dict -}}
{{- if not (has ($gitAuth.type | default "none") (list "none" "https" "ssh")) -}}
{{- fail (printf "skills.gitSync.auth.type %q: want none, https or ssh" $gitAuth.type) -}}
{{- end -}}
{{- if and (ne ($gitAuth.type | default "none") "none") (not $gitAuth.existingSecret) -}}
{{- fail (printf "skills.gitSync.auth.type %s needs skills.gitSync.auth.existingSecret: a Secret with the keys %s" $gitAuth.type (ternary "username and password (a token)" "ssh (the private key) and known_hosts" (eq $gitAuth.type "https"))) -}}
{{- end -}}
{{- if and (eq .Values.skills.source "pvc") (not .Values.skills.pvc.existingClaim) -}}
{{- fail (printf "skills.source pvc needs skills.pvc.existingClaim: the pods mount the library read-only, so a claim the chart made would stay empty; fill a claim of yours and name it. A release whose claim an earlier chart made (%s-skills): keep it first, kubectl annotate pvc %s-skills helm.sh/resource-policy=keep, then set skills.pvc.existingClaim=%s-skills" (include "skillrouter.fullname" .) (include "skillrouter.fullname" .) (include "skillrouter.fullname" .)) -}}
{{- end -}}
{{- if .Values.ingress.enabled -}}
{{- if not .Values.ingress.hosts -}}
{{- fail "ingress.enabled needs ingress.hosts: at least one {host, paths} (an Ingress without rules is refused by the API server)" -}}
{{- end -}}
{{- range .Values.ingress.hosts -}}
{{- if not (kindIs "map" .) -}}
{{- fail (printf "ingress.hosts: each entry is {host, paths}, got %v" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (eq .Values.skills.source "configMap") (not .Values.skills.configMap.files) (not .Values.skills.configMap.existing) -}}
{{- fail "skills.source configMap needs skills.configMap.files or skills.configMap.existing" -}}
{{- end -}}
{{- if and .Values.index.buildJob.enabled (ne .Values.index.source "pvc") -}}
{{- fail "index.buildJob needs index.source pvc (it writes the index there)" -}}
{{- end -}}
{{- if and .Values.index.buildJob.enabled (eq .Values.skills.source "gitSync") -}}
{{- fail "index.buildJob cannot read a git-sync library; build the index in CI (router index build) and ship it in an image" -}}
{{- end -}}
{{- include "skillrouter.validateIndexClaim" . -}}
{{- include "skillrouter.validatePreStop" . -}}
{{- end -}}

{{/* The index claim the chart creates is written by the build Job and read
by every replica, on whatever node each runs. A ReadWriteOnce volume
attaches to one node: a pod elsewhere waits in ContainerCreating
(Multi-Attach error), so more than one pod needs ReadWriteMany.
ReadOnlyMany suits a claim filled out of band, never the Job. With one
replica, ReadWriteOnce is left to a warning in NOTES: a rolling update's
new pod on another node waits until the old one is gone. */}}
{{- define "skillrouter.validateIndexClaim" -}}
{{- if and (eq .Values.index.source "pvc") (not .Values.index.pvc.existingClaim) -}}
{{- $modes := .Values.index.pvc.accessModes | default list -}}
{{- if not (kindIs "slice" $modes) -}}
{{- fail (printf "index.pvc.accessModes %v: want a list, such as [ReadWriteMany]" $modes) -}}
{{- end -}}
{{- $job := .Values.index.buildJob.enabled -}}
{{- $who := list -}}
{{- if .Values.autoscaling.enabled -}}
{{- $who = append $who (printf "up to %v replicas (HPA)" .Values.autoscaling.maxReplicas) -}}
{{- else if gt (int .Values.replicaCount) 1 -}}
{{- $who = append $who (printf "%v replicas" .Values.replicaCount) -}}
{{- else -}}
{{- $who = append $who "the replica" -}}
{{- end -}}
{{- if $job -}}
{{- $who = append $who "the index build Job" -}}
{{- end -}}
{{- $many := or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1) $job -}}
{{- $rwo := or (has "ReadWriteOnce" $modes) (has "ReadWriteOncePod" $modes) -}}
{{- if not $modes -}}
{{- fail "index.pvc.accessModes is empty: want [ReadWriteMany]" -}}
{{- else if has "ReadWriteMany" $modes -}}
{{- else if and (has "ReadOnlyMany" $modes) (not $job) -}}
{{- else if has "ReadOnlyMany" $modes -}}
{{- fail (printf "index.pvc.accessModes %v: the index build Job writes the claim; want [ReadWriteMany]" $modes) -}}
{{- else if not $rwo -}}
{{- fail (printf "index.pvc.accessModes %v: no access mode Kubernetes knows (ReadWriteMany, ReadOnlyMany, ReadWriteOnce, ReadWriteOncePod); want [ReadWriteMany]" $modes) -}}
{{- else if not (has "ReadWriteOnce" $modes) -}}
{{- fail (printf "index.pvc.accessModes %v: ReadWriteOncePod lets one pod mount the claim, and %s mount it (a rolling update also starts the new pod before the old one stops); want [ReadWriteMany]" $modes (join " and " $who)) -}}
{{- else if and $many (not .Values.index.pvc.singleNode) -}}
{{- fail (printf "index.pvc.accessModes %v: a ReadWriteOnce volume attaches to one node, and %s mount it (a pod on another node waits with a Multi-Attach error); want [ReadWriteMany], or set index.pvc.singleNode=true if every pod runs on one node" $modes (join " and " $who)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The preStop sleep in whole seconds (0: no hook). */}}
{{- define "skillrouter.preStopSeconds" -}}
{{- $v := (.Values.lifecycle | default dict).preStopSleepSeconds -}}
{{- if or (kindIs "invalid" $v) (eq (toString $v) "") -}}
0
{{- else if regexMatch "^[0-9]+$" (toString $v) -}}
{{- toString $v -}}
{{- else -}}
{{- fail (printf "lifecycle.preStopSleepSeconds %v: want whole seconds, 0 or more" $v) -}}
{{- end -}}
{{- end -}}

{{- define "skillrouter.preStopAction" -}}
{{- (.Values.lifecycle | default dict).preStopAction | default "sleep" -}}
{{- end -}}

{{/* No check of .Capabilities.KubeVersion for the sleep action (1.30+):
helm template and lint assume v1.20 unless told, and an older API server
refuses the Pod loudly anyway ("must specify a handler type"). */}}
{{- define "skillrouter.validatePreStop" -}}
{{- $action := include "skillrouter.preStopAction" . -}}
{{- if not (has $action (list "sleep" "exec")) -}}
{{- fail (printf "lifecycle.preStopAction %q: want sleep or exec" $action) -}}
{{- end -}}
{{- $_ := include "skillrouter.preStopSeconds" . -}}
{{- end -}}

{{/* The router container's preStop handler, empty for none. */}}
{{- define "skillrouter.preStop" -}}
{{- $s := atoi (include "skillrouter.preStopSeconds" .) -}}
{{- if gt $s 0 -}}
{{- if eq (include "skillrouter.preStopAction" .) "exec" -}}
exec:
  command: ["sleep", "{{ $s }}"]
{{- else -}}
sleep:
  seconds: {{ $s }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* server.shutdown_grace in whole seconds, rounded up, read as serve
reads it: an env entry SKILLROUTER_SERVER_SHUTDOWN_GRACE beats the same
variable in secrets.extraEnv (env beats envFrom), which beats
config.server.shutdown_grace, whose default (also for null) is 30s. serve
reads a Go duration (time.ParseDuration); this reads the unsigned forms of
one: 30s, 1m30s, 1.5m, 500ms. Anything else fails here as it would fail
serve. */}}
{{- define "skillrouter.shutdownGraceSeconds" -}}
{{- $key := "config.server.shutdown_grace" -}}
{{- $d := dig "server" "shutdown_grace" "" (.Values.config | default dict) -}}
{{- if or (kindIs "invalid" $d) (eq (toString $d) "") -}}
{{- $d = "30s" -}}
{{- end -}}
{{- $secrets := .Values.secrets | default dict -}}
{{- if and (not $secrets.existingSecret) (hasKey ($secrets.extraEnv | default dict) "SKILLROUTER_SERVER_SHUTDOWN_GRACE") -}}
{{- $d = get $secrets.extraEnv "SKILLROUTER_SERVER_SHUTDOWN_GRACE" -}}
{{- $key = "secrets.extraEnv SKILLROUTER_SERVER_SHUTDOWN_GRACE" -}}
{{- end -}}
{{- range (.Values.env | default list) -}}
{{- if and (kindIs "map" .) (eq (toString .name) "SKILLROUTER_SERVER_SHUTDOWN_GRACE") (hasKey . "value") -}}
{{- $d = .value -}}
{{- $key = "env SKILLROUTER_SERVER_SHUTDOWN_GRACE" -}}
{{- end -}}
{{- end -}}
{{- $num := `([0-9]+(\.[0-9]*)?|\.[0-9]+)` -}}
{{- $unit := `(ns|us|µs|μs|ms|s|m|h)` -}}
{{- if not (and (kindIs "string" $d) (regexMatch (printf "^(%s%s)+$" $num $unit) $d)) -}}
{{- fail (printf "%s %v: want a Go duration such as 30s or 1m30s" $key $d) -}}
{{- end -}}
{{- /* Sub-second units divide, so whole numbers of them stay exact. */ -}}
{{- $mul := dict "ns" 1 "us" 1 "µs" 1 "μs" 1 "ms" 1 "s" 1 "m" 60 "h" 3600 -}}
{{- $div := dict "ns" 1000000000 "us" 1000000 "µs" 1000000 "μs" 1000000 "ms" 1000 "s" 1 "m" 1 "h" 1 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll (printf "%s%s" $num $unit) $d -1 -}}
{{- $n := regexFind `^[0-9.]+` . -}}
{{- $u := trimPrefix $n . -}}
{{- $total = addf $total (divf (mulf (float64 $n) (get $mul $u)) (get $div $u)) -}}
{{- end -}}
{{- if le $total 0.0 -}}
{{- fail (printf "%s %v: want a positive duration such as 30s" $key $d) -}}
{{- end -}}
{{- ceil $total | int -}}
{{- end -}}

{{/* The pod's terminationGracePeriodSeconds. The kubelet counts the
preStop sleep in it; after shutdown_grace the router takes up to 5 s to
end what is left and 5 s to export traces, hence the 10 s margin. An
explicit value may drop the margin, not the sleep or the grace. */}}
{{- define "skillrouter.terminationGracePeriodSeconds" -}}
{{- $pre := atoi (include "skillrouter.preStopSeconds" .) -}}
{{- $grace := atoi (include "skillrouter.shutdownGraceSeconds" .) -}}
{{- $derived := add $pre $grace 10 -}}
{{- $v := .Values.terminationGracePeriodSeconds -}}
{{- $s := toString $v -}}
{{- if and (kindIs "float64" $v) (eq $v (floor $v)) -}}
{{- $s = printf "%d" (int64 $v) -}}
{{- end -}}
{{- if or (kindIs "invalid" $v) (eq $s "") -}}
{{- $derived -}}
{{- else if not (regexMatch "^[0-9]+$" $s) -}}
{{- fail (printf "terminationGracePeriodSeconds %v: want whole seconds, or leave it empty for %d (preStop + shutdown_grace + 10)" $v $derived) -}}
{{- else if lt (atoi $s) (add $pre $grace) -}}
{{- fail (printf "terminationGracePeriodSeconds %s is shorter than lifecycle.preStopSleepSeconds (%d s) + server.shutdown_grace (%d s): the kubelet would kill requests the router still lets finish; raise it, or leave it empty for %d" $s $pre $grace $derived) -}}
{{- else -}}
{{- $s -}}
{{- end -}}
{{- end -}}

{{/* Whether the chart's index claim is ReadWriteOnce only (NOTES warns). */}}
{{- define "skillrouter.indexClaimRWO" -}}
{{- if and (eq .Values.index.source "pvc") (not .Values.index.pvc.existingClaim) (not .Values.index.pvc.singleNode) -}}
{{- $modes := .Values.index.pvc.accessModes | default list -}}
{{- if and (kindIs "slice" $modes) (has "ReadWriteOnce" $modes) (not (has "ReadWriteMany" $modes)) (not (has "ReadOnlyMany" $modes)) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* An emptyDir volume's source, with emptyDirs.<volume>.sizeLimit when
set: past it the kubelet evicts this pod, rather than a runaway folder
filling the node's disk until the node, short of space, evicts others.
null or "": no limit. Quoted: a quantity such as 1e3 would otherwise be
read as a number. A bare number of bytes (1073741824, or --set) reaches
the template as a float: written as a whole number. */}}
{{- define "skillrouter.emptyDir" -}}
{{- $vol := get (.ctx.Values.emptyDirs | default dict) .volume | default dict -}}
{{- $size := $vol.sizeLimit -}}
{{- if or (kindIs "float64" $size) (kindIs "int64" $size) (kindIs "int" $size) -}}
{{- $size = int64 $size | toString -}}
{{- end -}}
{{- if $size -}}
emptyDir:
  sizeLimit: {{ $size | quote }}
{{- else -}}
emptyDir: {}
{{- end -}}
{{- end -}}

{{/* The skills volume (pod spec volumes entry), when one is mounted. */}}
{{- define "skillrouter.skillsVolume" -}}
{{- if eq .Values.skills.source "configMap" }}
- name: skills
  configMap:
    {{- if .Values.skills.configMap.existing }}
    name: {{ .Values.skills.configMap.existing }}
    {{- with .Values.skills.configMap.items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- else }}
    name: {{ include "skillrouter.fullname" . }}-skills
    items:
      {{- range $path, $_ := .Values.skills.configMap.files }}
      - key: {{ $path | replace "/" "__" }}
        path: {{ $path }}
      {{- end }}
    {{- end }}
{{- else if eq .Values.skills.source "pvc" }}
- name: skills
  persistentVolumeClaim:
    claimName: {{ .Values.skills.pvc.existingClaim }}
    readOnly: true
{{- else if eq .Values.skills.source "gitSync" }}
- name: git
  {{- include "skillrouter.emptyDir" (dict "ctx" . "volume" "git") | nindent 2 }}
- name: git-tmp
  {{- include "skillrouter.emptyDir" (dict "ctx" . "volume" "gitTmp") | nindent 2 }}
{{- if eq (.Values.skills.gitSync.auth.type | default "none") "ssh" }}
- name: git-secret
  secret:
    secretName: {{ .Values.skills.gitSync.auth.existingSecret }}
    # Owner and group (the pod's fsGroup) may read; ssh refuses a key
    # others can read.
    defaultMode: 0440
{{- end }}
{{- end }}
{{- end -}}

{{/* The skills mount of a container that reads the library. */}}
{{- define "skillrouter.skillsMount" -}}
{{- if or (eq .Values.skills.source "configMap") (eq .Values.skills.source "pvc") }}
- name: skills
  mountPath: {{ .Values.skills.path }}
  readOnly: true
  {{- if and (eq .Values.skills.source "pvc") .Values.skills.pvc.subPath }}
  subPath: {{ .Values.skills.pvc.subPath }}
  {{- end }}
{{- else if eq .Values.skills.source "gitSync" }}
- name: git
  mountPath: /git
  readOnly: true
{{- end }}
{{- end -}}

{{/* Images built before SKILLROUTER_DEFAULTS set SKILLROUTER_LISTEN,
SKILLROUTER_SKILLS (and the exec image SKILLROUTER_EXEC_ENABLED), which beat
the configuration file; the chart sets them to what it wrote in config.yaml,
so any image runs the chart's configuration. */}}
{{- define "skillrouter.imageEnv" -}}
{{- $cfg := fromYaml (include "skillrouter.config" .) -}}
{{- $exec := $cfg.exec | default dict -}}
- name: SKILLROUTER_LISTEN
  value: {{ $cfg.listen | quote }}
- name: SKILLROUTER_SKILLS
  value: {{ first $cfg.skills | quote }}
- name: SKILLROUTER_EXEC_ENABLED
  value: {{ ternary "true" "false" (eq (toString $exec.enabled) "true") | quote }}
{{- end -}}

{{/* Secret-backed environment. */}}
{{- define "skillrouter.secretEnv" -}}
{{- include "skillrouter.secretEnvOf" (dict "root" . "upstream" true) -}}
{{- end -}}

{{/* The secret variables without the upstream key: the index build Job
embeds the library and calls no model. */}}
{{- define "skillrouter.buildSecretEnv" -}}
{{- include "skillrouter.secretEnvOf" (dict "root" . "upstream" false) -}}
{{- end -}}

{{- define "skillrouter.secretEnvOf" -}}
{{- $v := .root.Values -}}
{{- $name := include "skillrouter.secretName" .root -}}
{{- if and .upstream (or $v.secrets.existingSecret $v.secrets.upstreamApiKey) }}
- name: SKILLROUTER_UPSTREAM_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: upstream-api-key
      optional: {{ not $v.secrets.upstreamApiKey }}
{{- end }}
{{- if or $v.secrets.existingSecret $v.secrets.embedApiKey }}
- name: SKILLROUTER_EMBEDDER_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: embed-api-key
      optional: {{ not $v.secrets.embedApiKey }}
{{- end }}
{{- $serving := .upstream }}
{{- range $k, $_ := $v.secrets.extraEnv }}
{{- /* The build Job serves no client and calls no model: no client keys,
admin token or upstream keys. */}}
{{- if or $serving (not (or (hasPrefix "SKILLROUTER_AUTH_" $k) (hasPrefix "SKILLROUTER_UPSTREAM_" $k))) }}
- name: {{ $k }}
  valueFrom:
    secretKeyRef:
      name: {{ $name }}
      key: {{ $k }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The port /metrics is served on when not with the API
(server.metrics_listen, set for the ServiceMonitor); empty otherwise. */}}
{{- define "skillrouter.metricsPort" -}}
{{- $server := (fromYaml (include "skillrouter.config" .)).server | default dict -}}
{{- with $server.metrics_listen -}}
{{- $port := splitList ":" . | last -}}
{{- $host := trimSuffix (printf ":%s" $port) . | trimPrefix "[" | trimSuffix "]" -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "config.server.metrics_listen %q: want host:port" .) -}}
{{- end -}}
{{- if eq (int $port) (int (include "skillrouter.containerPort" $)) -}}
{{- fail (printf "config.server.metrics_listen %q: the API listens on port %s; /metrics needs a port of its own (serviceMonitor.port)" . $port) -}}
{{- end -}}
{{- if or (eq $host "localhost") (hasPrefix "127." $host) (eq $host "::1") -}}
{{- if $.Values.serviceMonitor.enabled -}}
{{- fail (printf "config.server.metrics_listen %q listens on loopback only: the ServiceMonitor cannot reach it; use 0.0.0.0:PORT" .) -}}
{{- end -}}
{{- else -}}
{{- $port -}}
{{- end -}}
{{- end -}}
{{- end -}}
