package app

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"one namespace for all (Flyte's)", func(c *Config) { c.NamespaceTemplate = "flyte" }, ""},
		{"namespace template that makes no name", func(c *Config) { c.NamespaceTemplate = "Flyte_{project}" }, "does not make namespace names"},
		{"no authentication on loopback", func(c *Config) { c.Auth = AuthNone }, ""},
		{"no authentication on localhost", func(c *Config) { c.Auth, c.Listen = AuthNone, "localhost:9000" }, ""},
		{"no authentication on every interface", func(c *Config) { c.Auth, c.Listen = AuthNone, "0.0.0.0:8080" }, "--auth=none is only allowed on a loopback"},
		{"no authentication on a LAN address", func(c *Config) { c.Auth, c.Listen = AuthNone, "192.168.1.5:8080" }, "--auth=none"},
		{"tokens file without authentication", func(c *Config) { c.Auth, c.AuthTokensFile = AuthNone, "t.yaml" }, "--auth-tokens-file needs --auth=token"},
		{"unknown auth", func(c *Config) { c.Auth = "basic" }, "want token, kubernetes or none"},
		{"CORS origin", func(c *Config) { c.CORSOrigins = []string{"https://ui.example.com", "http://localhost:3000"} }, ""},
		{"CORS origin with a path", func(c *Config) { c.CORSOrigins = []string{"https://ui.example.com/app"} }, "is not an origin"},
		{"CORS wildcard", func(c *Config) { c.CORSOrigins = []string{"*"} }, "is not an origin"},
		{"metrics address", func(c *Config) { c.MetricsListen = "127.0.0.1:9090" }, ""},
		{"metrics address without port", func(c *Config) { c.MetricsListen = "127.0.0.1" }, "--metrics-listen"},
		{"negative stream bound", func(c *Config) { c.MaxStreams = -1 }, "must not be negative"},
		{"trace link", func(c *Config) { c.TraceLinkTemplate = "https://jaeger.example/trace/{traceId}" }, ""},
		{"trace link without its id", func(c *Config) { c.TraceLinkTemplate = "https://jaeger.example/search" }, "has no {traceId}"},
		{"trace link of another scheme", func(c *Config) { c.TraceLinkTemplate = "javascript:alert('{traceId}')" }, "is not an http(s) URL"},
		{"missing credentials file", func(c *Config) { c.KargoCredentialsFile = "/nonexistent/creds.yaml" }, "--kargo-credentials-file: credentials file: stat /nonexistent/creds.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestAllowedHosts(t *testing.T) {
	got := allowedHosts("0.0.0.0:8080", []string{"tasks.example.com"})
	for _, want := range []string{"localhost", "127.0.0.1", "::1", "tasks.example.com"} {
		found := false
		for _, h := range got {
			found = found || h == want
		}
		if !found {
			t.Errorf("allowed hosts %v lack %s", got, want)
		}
	}
	if got := allowedHosts("tasks.internal:8080", nil); got[len(got)-1] != "tasks.internal" {
		t.Errorf("the listen host is not allowed: %v", got)
	}
}
