package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

func find[T any](objs []object, name string) T {
	var zero T
	for _, o := range objs {
		if x, ok := o.obj.(T); ok && o.name == name {
			return x
		}
	}
	return zero
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// TestChartValueSets checks what each value set must change: per-pod advertised addresses,
// external access, SASL and ACL files, autoscaling, the ServiceMonitor, and the dashboard.
func TestChartValueSets(t *testing.T) {
	sets := valueSets(t)

	def := render(t, sets["defaults"])
	fd := find[*appsv1.StatefulSet](def, "ferry-frontdoor")
	if fd == nil {
		t.Fatal("no frontdoor StatefulSet")
	}
	c := fd.Spec.Template.Spec.Containers[0]
	if a, _ := env(c, "FERRY_ADVERTISED_ADDR"); a.Value != "$(POD_NAME).ferry-frontdoor-headless.$(POD_NAMESPACE).svc.cluster.local:9092" {
		t.Errorf("default advertised address %q, want the pod's DNS name in the headless Service", a.Value)
	}
	if n, _ := env(c, "FERRY_NODE_ID"); n.ValueFrom == nil || n.ValueFrom.FieldRef == nil || !strings.Contains(n.ValueFrom.FieldRef.FieldPath, "apps.kubernetes.io/pod-index") {
		t.Errorf("FERRY_NODE_ID must come from the pod's ordinal, got %+v", n)
	}
	if s, _ := env(c, "FERRY_STATE_DIR"); s.Value == "" || len(fd.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("frontdoor needs a state dir on a per-pod volume claim")
	}
	if h := find[*corev1.Service](def, "ferry-frontdoor-headless"); h == nil || h.Spec.ClusterIP != "None" || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("frontdoor needs a headless Service publishing not-ready pods: %+v", h)
	}
	if tc := find[*corev1.Service](def, "ferry-transcodesvc"); tc == nil || tc.Spec.ClusterIP != "None" {
		t.Errorf("transcodesvc's Service must be headless so frontdoor resolves every instance")
	}
	if find[*autoscalingv2.HorizontalPodAutoscaler](def, "ferry-transcodesvc") != nil {
		t.Errorf("an HPA without autoscaling.enabled")
	}
	if _, ok := env(c, "FERRY_SASL_USERS_FILE"); ok {
		t.Errorf("SASL without a users secret")
	}
	cm := find[*corev1.ConfigMap](def, "ferry-dashboard")
	want, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "ferry.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cm == nil || strings.TrimSpace(cm.Data["ferry.json"]) != strings.TrimSpace(string(want)) || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap must carry dashboards/ferry.json unchanged, labelled for the Grafana sidecar")
	}

	full := render(t, sets["external-sasl-autoscaling"])
	fd = find[*appsv1.StatefulSet](full, "ferry-frontdoor")
	c = fd.Spec.Template.Spec.Containers[0]
	if a, _ := env(c, "FERRY_ADVERTISED_ADDR"); a.Value != "$(HOST_IP):31092" {
		t.Errorf("hostPort advertised address %q, want $(HOST_IP):31092", a.Value)
	}
	hostPort := false
	for _, p := range c.Ports {
		hostPort = hostPort || (p.Name == "kafka" && p.HostPort == 31092)
	}
	if !hostPort || fd.Spec.Template.Spec.Affinity == nil || fd.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("hostPort access needs the host port and one frontdoor per node")
	}
	if u, _ := env(c, "FERRY_SASL_USERS_FILE"); u.Value != "/etc/ferry/sasl/users.txt" {
		t.Errorf("SASL users file %q", u.Value)
	}
	if a, _ := env(c, "FERRY_ACL_FILE"); a.Value != "/etc/ferry/acl/acls.txt" {
		t.Errorf("ACL file %q", a.Value)
	}
	secrets := map[string]bool{}
	for _, v := range fd.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Secret.SecretName] = true
		}
	}
	for _, s := range []string{"ferry-sasl-users", "ferry-acls", "ferry-grpc-tls"} {
		if !secrets[s] {
			t.Errorf("frontdoor does not mount secret %s (has %v)", s, secrets)
		}
	}
	hpa := find[*autoscalingv2.HorizontalPodAutoscaler](full, "ferry-transcodesvc")
	if hpa == nil || hpa.Spec.MaxReplicas != 8 || len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("autoscaling: HPA on CPU up to 8 replicas, got %+v", hpa)
	}
	if d := find[*appsv1.Deployment](full, "ferry-transcodesvc"); d == nil || d.Spec.Replicas != nil {
		t.Errorf("with an HPA the Deployment must leave replicas to it")
	}
	monitors := 0
	for _, o := range full {
		if sm, ok := o.obj.(*serviceMonitor); ok {
			monitors++
			if sm.Spec.JobLabel != "app.kubernetes.io/component" {
				t.Errorf("ServiceMonitor %s: job label %q; the dashboard selects jobs by service name", sm.Metadata.Name, sm.Spec.JobLabel)
			}
		}
	}
	if monitors != 6 {
		t.Errorf("%d ServiceMonitors, want one per service", monitors)
	}
	// The registry's users and HTTPS files are mounted where its settings point.
	if d := find[*appsv1.Deployment](full, "ferry-schemasvc"); d == nil {
		t.Error("no schemasvc Deployment")
	} else {
		c := d.Spec.Template.Spec.Containers[0]
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		for setting, volume := range map[string]string{"FERRY_REGISTRY_USERS_FILE": "registry-users", "FERRY_REGISTRY_TLS_CERT": "registry-tls", "FERRY_REGISTRY_TLS_KEY": "registry-tls"} {
			e, ok := env(c, setting)
			if !ok || mounts[volume] == "" || !strings.HasPrefix(e.Value, mounts[volume]+"/") {
				t.Errorf("schemasvc %s=%q is not in volume %s (mounts %v)", setting, e.Value, volume, mounts)
			}
		}
		if s := find[*corev1.Service](full, "ferry-schemasvc"); s == nil || s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			t.Errorf("schemasvc Service type from the values: %+v", s)
		}
	}
	if d := find[*appsv1.Deployment](def, "ferry-schemasvc"); d == nil || len(d.Spec.Template.Spec.Volumes) != 2 {
		t.Errorf("default schemasvc: want only the tmp and gRPC TLS volumes")
	}
	// Avro and JSON Schema topics need the registry on both record paths.
	for _, name := range []string{"ferry-transcodesvc", "ferry-fetchsvc"} {
		d := find[*appsv1.Deployment](def, name)
		if d == nil {
			t.Errorf("no %s Deployment", name)
			continue
		}
		if e, ok := env(d.Spec.Template.Spec.Containers[0], "FERRY_SCHEMA_ADDR"); !ok || e.Value != "ferry-schemasvc:7106" {
			t.Errorf("%s: FERRY_SCHEMA_ADDR=%q, want ferry-schemasvc:7106", name, e.Value)
		}
	}
	if d := find[*appsv1.Deployment](full, "ferry-appendsvc"); d == nil || d.Spec.Template.Spec.Containers[0].Image != "registry.example.com/ferry/appendsvc:1.2.3" {
		t.Errorf("image from the values: %+v", d)
	}

	lb := render(t, sets["plaintext-loadbalancer"])
	external := 0
	for _, o := range lb {
		if s, ok := o.obj.(*corev1.Service); ok && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			external++
		}
	}
	if external != 3 {
		t.Errorf("%d LoadBalancer Services, want one per frontdoor pod (3)", external)
	}
	c = find[*appsv1.StatefulSet](lb, "ferry-frontdoor").Spec.Template.Spec.Containers[0]
	if a, _ := env(c, "FERRY_ADVERTISED_ADDR"); a.Value != "$(POD_NAME).kafka.example.com:9094" {
		t.Errorf("loadBalancer advertised address %q", a.Value)
	}
	if p, _ := env(c, "FERRY_GRPC_PLAINTEXT"); p.Value != "true" {
		t.Errorf("grpc.plaintext must set FERRY_GRPC_PLAINTEXT")
	}
}
