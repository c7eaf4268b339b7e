package cluster_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChartTracingValues: by default the chart's server has no OTEL_*
// variable and no --trace-link-template (tracing off), nor with tracing
// values but no endpoint; with the endpoint, the tracing values become
// the standard variables beside the history store's, the headers from
// their Secret (never a value in the pod spec), and the link template the
// flag; helm lint passes with them.
func TestChartTracingValues(t *testing.T) {
	const link = "https://grafana.example/explore?left={\"queries\":[{\"query\":\"{traceId}\"}]}&orgId=1"
	for _, set := range [][]string{nil, {"--set", "tracing.serviceName=eu,tracing.sampler=always_off,tracing.headersSecret.name=otel"}} {
		c := chartServer(t, set...)
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "OTEL_") {
				t.Errorf("with %v the server has %s", set, e.Name)
			}
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--trace-link-template") {
				t.Errorf("with %v the server has %s", set, a)
			}
		}
	}

	on := []string{"--set", "history.dsnSecret.name=pg,tracing.endpoint=http://otel-collector.monitoring:4318," +
		"tracing.headersSecret.name=otel,tracing.headersSecret.key=auth,tracing.serviceName=taskactions-eu," +
		"tracing.sampler=parentbased_traceidratio,tracing.samplerArg=0.1",
		"--set-string", "tracing.linkTemplate=" + link}
	c := chartServer(t, on...)
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for name, want := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.monitoring:4318",
		"OTEL_SERVICE_NAME":           "taskactions-eu",
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":     "0.1",
	} {
		if got := env[name]; got.Value != want || got.ValueFrom != nil {
			t.Errorf("%s is %+v, want the value %q", name, got, want)
		}
	}
	if h := env["OTEL_EXPORTER_OTLP_HEADERS"]; h.Value != "" || h.ValueFrom == nil || h.ValueFrom.SecretKeyRef == nil ||
		h.ValueFrom.SecretKeyRef.Name != "otel" || h.ValueFrom.SecretKeyRef.Key != "auth" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS is %+v, want the Secret otel's key auth", h)
	}
	if d := env["TASKACTIONS_HISTORY_DSN"]; d.ValueFrom == nil || d.ValueFrom.SecretKeyRef == nil || d.ValueFrom.SecretKeyRef.Name != "pg" {
		t.Errorf("TASKACTIONS_HISTORY_DSN is %+v beside the tracing variables", d)
	}
	// The DSN holds a password: not on the command line, which
	// /proc/<pid>/cmdline shows to every process of the user.
	for _, a := range c.Args {
		if strings.Contains(a, "history-dsn") || strings.Contains(a, "HISTORY_DSN") {
			t.Errorf("the server's command line has %q", a)
		}
	}
	n := 0
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--trace-link-template") {
			n++
			if a != "--trace-link-template="+link {
				t.Errorf("the server has %s, want the template as given", a)
			}
		}
	}
	if n != 1 {
		t.Errorf("the server has %d --trace-link-template, want 1: %v", n, c.Args)
	}
	if out, err := command(t.Context(), nil, helmBin, append([]string{"lint", "--strict", chartDir}, on...)...); err != nil {
		t.Errorf("helm lint with the tracing values: %v\n%s", err, out)
	}
}

// chartServer renders the chart with set and returns its server container.
func chartServer(t *testing.T, set ...string) corev1.Container {
	t.Helper()
	out, err := command(t.Context(), nil, helmBin, append([]string{"template", releaseName, chartDir, "--namespace", releaseNamespace}, set...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range documents(out) {
		var dep appsv1.Deployment
		mustUnmarshal(t, d, &dep)
		if dep.Kind == "Deployment" {
			return dep.Spec.Template.Spec.Containers[0]
		}
	}
	t.Fatal("the chart has no Deployment")
	return corev1.Container{}
}
