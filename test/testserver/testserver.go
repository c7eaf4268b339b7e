// Package testserver starts the whole server (internal/app) in the test
// process for the end-to-end and browser tests: real control plane, real
// listener.
package testserver

import (
	"context"
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
	cfg.ExecutorTaskTypes = "echo,sleep,process"
	return cfg
}

// Start starts a server and returns it with a client of its API.
func Start(cfg app.Config) (*app.App, *client.ClientWithResponses, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.Start(ctx, cfg, testenv.Logger())
	if err != nil {
		return nil, nil, err
	}
	c, err := client.NewClientWithResponses(a.URL() + "/api/v1")
	if err != nil {
		_ = a.Stop()
		return nil, nil, err
	}
	return a, c, nil
}
