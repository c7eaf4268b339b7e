package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"taskactions/internal/app"
)

// clearEnv unsets every TASKACTIONS_* (and OTEL_*) variable for the test, so the
// developer's environment cannot leak into the expectations.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TASKACTIONS_") || strings.HasPrefix(name, "OTEL_") {
			t.Setenv(name, "") // restores the value after the test
			os.Unsetenv(name)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		want       func(*app.Config) // edits the defaults into the expected config
		wantLevel  string
		wantFormat string
		wantErr    string // a substring of the error; "" for none
	}{
		{name: "defaults", wantLevel: "info"},
		{name: "flags", args: []string{"--data-dir", "/var/lib/ta", "-workers=3", "--sse-heartbeat=500ms", "--log-level=debug", "--log-format", "console"},
			want:      func(c *app.Config) { c.DataDir, c.Workers, c.SSEHeartbeat = "/var/lib/ta", 3, 500*time.Millisecond },
			wantLevel: "debug", wantFormat: "console"},
		{name: "env when the flag is absent",
			env: map[string]string{
				"TASKACTIONS_DATA_DIR": "/srv/data", "TASKACTIONS_SSE_HEARTBEAT": "2s", "TASKACTIONS_LOG_LEVEL": "trace",
				"TASKACTIONS_EXECUTOR_TASK_TYPES": "", "TASKACTIONS_SSE_BUFFER": "16",
			},
			want: func(c *app.Config) {
				c.DataDir, c.SSEHeartbeat, c.ExecutorTaskTypes, c.SSEMailbox = "/srv/data", 2*time.Second, "", 16
			},
			wantLevel: "trace"},
		{name: "flag wins over env",
			args:      []string{"--data-dir=/flag", "--log-level=warn"},
			env:       map[string]string{"TASKACTIONS_DATA_DIR": "/env", "TASKACTIONS_LOG_LEVEL": "debug", "TASKACTIONS_WORKERS": "4"},
			want:      func(c *app.Config) { c.DataDir, c.Workers = "/flag", 4 },
			wantLevel: "warn"},
		// The env value of a flag given on the command line is never parsed.
		{name: "malformed env shadowed by a flag", args: []string{"--workers=2"}, env: map[string]string{"TASKACTIONS_WORKERS": "abc"},
			want: func(c *app.Config) { c.Workers = 2 }, wantLevel: "info"},
		{name: "malformed int env", env: map[string]string{"TASKACTIONS_WORKERS": "abc"}, wantErr: "TASKACTIONS_WORKERS"},
		{name: "malformed duration env", env: map[string]string{"TASKACTIONS_SSE_REPLAY_AGE": "5 minutes"}, wantErr: "TASKACTIONS_SSE_REPLAY_AGE"},
		{name: "unrelated env ignored", env: map[string]string{"TASKACTIONS_NO_SUCH_FLAG": "x", "DATA_DIR": "/nope"}, wantLevel: "info"},
		{name: "positional args", args: []string{"--workers=2", "serve"}, wantErr: "unexpected arguments"},
		{name: "lists and auth", args: []string{"--allowed-hosts", " tasks.example.com, 10.0.0.5 ,", "--auth=none", "--max-streams=10"},
			env: map[string]string{"TASKACTIONS_CORS_ORIGINS": "https://ui.example.com", "TASKACTIONS_METRICS_LISTEN": "127.0.0.1:9090"},
			want: func(c *app.Config) {
				c.AllowedHosts, c.Auth, c.MaxStreams = []string{"tasks.example.com", "10.0.0.5"}, "none", 10
				c.CORSOrigins, c.MetricsListen = []string{"https://ui.example.com"}, "127.0.0.1:9090"
			},
			wantLevel: "info"},
		// Traces are OpenTelemetry's variables, not flags; the link is a flag.
		{name: "traces", args: []string{"--trace-link-template=https://jaeger.example/trace/{traceId}"},
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			want: func(c *app.Config) {
				c.Tracing.Enabled, c.TraceLinkTemplate = true, "https://jaeger.example/trace/{traceId}"
			},
			wantLevel: "info"},
		{name: "traces over gRPC", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTLP/HTTP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, level, format, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := app.Defaults()
			if tt.want != nil {
				tt.want(&want)
			}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("config:\n got %+v\nwant %+v", cfg, want)
			}
			if level != tt.wantLevel || format != tt.wantFormat {
				t.Errorf("log level, format = %q, %q; want %q, %q", level, format, tt.wantLevel, tt.wantFormat)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	tests := map[string]string{
		"data-dir":              "TASKACTIONS_DATA_DIR",
		"listen":                "TASKACTIONS_LISTEN",
		"sse-replay-events":     "TASKACTIONS_SSE_REPLAY_EVENTS",
		"shutdown-grace-period": "TASKACTIONS_SHUTDOWN_GRACE_PERIOD",
	}
	for flag, want := range tests {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}
