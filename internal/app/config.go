// Package app wires the program together: control plane, action manager,
// run service, executor and HTTP server, and stops them in the reverse
// order.
package app

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Config is everything the server can be told. cmd/server fills it from
// flags and TASKACTIONS_* environment variables.
type Config struct {
	Listen            string
	DataDir           string
	Kubeconfig        string
	NamespaceTemplate string
	// TLSCert and TLSKey, both set, serve HTTPS (and with it HTTP/2).
	TLSCert, TLSKey string

	Workers int // manager workers

	SSEHeartbeat    time.Duration
	SSEReplayEvents int
	SSEReplayAge    time.Duration
	SSEMailbox      int

	// Executor settings; see internal/executor.
	ExecutorTaskTypes string // "*" all, "" none, or a comma list
	ExecutorProcess   string // auto, true, false
	ExecutorWorkers   int
	MaxSystemFailures int
	// LeaderElectionNamespace holds the executor's Lease on a cluster.
	LeaderElectionNamespace string
	ShutdownGracePeriod     time.Duration
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		Listen:                  "127.0.0.1:8080",
		DataDir:                 "./data",
		NamespaceTemplate:       "{project}-{domain}",
		Workers:                 8,
		SSEHeartbeat:            15 * time.Second,
		SSEReplayEvents:         10000,
		SSEReplayAge:            5 * time.Minute,
		SSEMailbox:              4096,
		ExecutorTaskTypes:       "*",
		ExecutorProcess:         "auto",
		ExecutorWorkers:         8,
		MaxSystemFailures:       5,
		LeaderElectionNamespace: "default",
		ShutdownGracePeriod:     10 * time.Second,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", c.Listen, err)
	}
	if !strings.Contains(c.NamespaceTemplate, "{project}") || !strings.Contains(c.NamespaceTemplate, "{domain}") {
		return fmt.Errorf("--namespace-template %q must contain {project} and {domain}: actions are named <run>-<action>, so two projects or domains sharing a namespace would collide", c.NamespaceTemplate)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	switch c.ExecutorProcess {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--executor-process %q: want auto, true or false", c.ExecutorProcess)
	}
	if c.Workers < 1 || c.ExecutorWorkers < 1 || c.SSEReplayEvents < 1 || c.SSEMailbox < 1 {
		return fmt.Errorf("worker counts and stream buffers must be at least 1")
	}
	return nil
}

// loopback reports whether the listen address is loopback only.
func (c Config) loopback() bool {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
