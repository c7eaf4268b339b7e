// Package testserver starts the whole server (internal/app) in the test
// process for the end-to-end and browser tests: real control plane, real
// listener.
package testserver

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
)

// Config is a server configuration for tests: the data dir, a free
// loopback port (unless listen is set), a short grace period, and an
// executor that leaves actions of type "external" to the tests, which move
// them with PUT .../status as an executor outside the server would.
func Config(dataDir, listen string) app.Config {
	cfg := app.Defaults()
	cfg.Listen = "127.0.0.1:0"
	if listen != "" {
		cfg.Listen = listen
	}
	cfg.DataDir = dataDir
	cfg.ShutdownGracePeriod = 2 * time.Second
	cfg.ExecutorTaskTypes = "echo,sleep,process,http,analysis-measurement"
	// The http step calls the tests' local servers, which nothing allows
	// by default.
	cfg.PromotionHTTPAllow = []string{"127.0.0.1"}
	cfg.AnalysisHTTPAllow = []string{"127.0.0.1"}
	return cfg
}

// Start starts a server and returns it with a client of its API that
// carries the admin token of its data dir.
func Start(cfg app.Config) (*app.App, *client.ClientWithResponses, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger())
	if err != nil {
		return nil, nil, err
	}
	var opts []client.ClientOption
	if cfg.Auth != app.AuthNone {
		token, err := AdminToken(cfg.DataDir)
		if err != nil {
			_ = a.Stop()
			return nil, nil, err
		}
		opts = append(opts, client.WithBearerToken(token))
	}
	c, err := client.NewClientWithResponses(a.URL()+"/api/v1", opts...)
	if err != nil {
		_ = a.Stop()
		return nil, nil, err
	}
	return a, c, nil
}

// AdminToken is the admin token of a data dir.
func AdminToken(dataDir string) (string, error) {
	return client.ReadTokenFile(filepath.Join(dataDir, app.FileAPIToken))
}

// Authorized wraps a transport (nil: the default one) so that every
// request carries the token, for tests that make requests by hand.
func Authorized(token string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return bearerTransport{token: token, base: base}
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// CloseIdleConnections passes on to the base transport, so that
// http.Client.CloseIdleConnections reaches it (an HTTP/2 client keeps its
// connection after the response otherwise).
func (t bearerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
