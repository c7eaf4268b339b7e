// Package app wires the program together. Start listens first (so probes
// and held streams are answered while the rest comes up), then builds
// every running part on one lifecycle.Group (parts.go): the control plane,
// the history store, the caches of TaskActions, Stages, Freight and
// Promotions, the API routes, the metrics listener, the aborter, collector
// and retention, the Kargo controllers and the executor. The group starts
// them in that order and stops them in reverse; the first part to fail
// after start stops the server (Run). It also holds the configuration and
// its flags' rules (config.go), authentication and authorization setup
// (auth.go), and the HTTP bounds derived from the descriptor limit.
package app

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	httpstep "taskactions/internal/executor/plugins/http"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/lease"
	"taskactions/internal/logs"
	"taskactions/internal/tracing"
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
	ExecutorTaskTypes string // "auto", "*" all with a plugin, "" none, or a comma list
	ExecutorProcess   string // auto, true, false
	// ProcessSandbox confines process tasks (see sandbox.go): auto,
	// required, best-effort or off.
	ProcessSandbox string
	// ProcessSandboxRead are more dirs a confined task may read and
	// execute (its scripts).
	ProcessSandboxRead []string
	// ProcessCgroups runs each process task in a cgroup of its own where
	// the server may create one; false (or none to be had) falls back on
	// a subreaper and sweeps (see the process plugin's reaper.go).
	ProcessCgroups    bool
	ExecutorWorkers   int
	MaxSystemFailures int
	// PromotionHTTPAllow are the hosts the http step may call (host,
	// host:port, IP or CIDR; "*" any); empty: none, loopback included.
	PromotionHTTPAllow []string
	// AnalysisHTTPAllow are the hosts AnalysisRuns' web and Prometheus
	// metrics may call, with the syntax of PromotionHTTPAllow.
	AnalysisHTTPAllow []string
	// AnalysisJobs lets AnalysisRuns' job metrics run, each measurement a
	// local process (the process plugin), the image not pulled.
	AnalysisJobs bool
	// PromotionGitLocal lets the git promotion steps use file:// URLs and
	// local paths (repositories on this server's disk).
	PromotionGitLocal bool
	// KargoCredentialsFile holds repositories' credentials for the
	// promotion steps (credentials.File); on a cluster Kargo's labelled
	// Secrets are looked up first.
	KargoCredentialsFile string
	// KargoCredentialsOverHTTP gives credentials for http:// URLs too
	// (Kargo's ALLOW_CREDENTIALS_OVER_HTTP); by default they are not sent
	// in clear.
	KargoCredentialsOverHTTP bool
	// KargoControllers runs the Stage controller and the Promotion
	// orchestrator: auto (on the embedded control plane only, since Kargo's
	// controllers own Stages and Promotions on a cluster), true or false.
	KargoControllers string
	// LeaderElectionNamespace holds the Leases on a cluster: the
	// executor's and Kargo's controllers'.
	LeaderElectionNamespace string
	// LeaderElection are the Leases' timings.
	LeaderElection      lease.Timings
	ShutdownGracePeriod time.Duration

	// Auth is "token" (the default: every API request needs a token or a
	// session) or "none" (loopback listeners only).
	Auth string
	// AuthTokensFile maps tokens to subjects and grants (see auth.TokenFile).
	AuthTokensFile string
	// AllowedHosts are Host names answered besides the listen host,
	// localhost, 127.0.0.1 and ::1 ("*": any).
	AllowedHosts []string
	// CORSOrigins may call the API from their pages (none by default).
	CORSOrigins []string
	// MetricsListen serves /metrics without a token on an address of its
	// own; /metrics on the main listener needs a token either way.
	MetricsListen string
	// MaxConnections and MaxStreams bound HTTP connections and open event
	// streams; zero derives them from the file descriptor limit.
	MaxConnections int
	MaxStreams     int
	// MaxProcesses bounds the process tasks running at once (more wait
	// for a slot); zero derives it from the descriptor limit.
	MaxProcesses int

	// HistoryDSN names the history store: "" for SQLite in the data dir,
	// postgres://... for PostgreSQL, or a path of a SQLite file.
	HistoryDSN string
	// Retention is how long a finished action's object stays in the
	// control plane once history has it; 0 keeps them all.
	Retention time.Duration
	// OutputSweep is how often this replica removes the output dirs of
	// deleted runs from its disk (package outputs); 0 never does.
	OutputSweep time.Duration
	// EtcdQuota is the embedded etcd's space quota in bytes (0: etcd's 2 GiB).
	EtcdQuota int64
	// LogMaxBytes bounds what is kept of each attempt's stdout and stderr.
	LogMaxBytes int64

	// Tracing exports OpenTelemetry traces (internal/tracing); cmd/server
	// fills it from the standard OTEL_* variables: off unless they name an
	// endpoint.
	Tracing tracing.Config
	// TraceLinkTemplate is a URL of a trace in the tracing backend, with
	// {traceId} where the trace id goes (https://jaeger.example/trace/{traceId}):
	// the dashboard links each action to its run's trace. Empty: no link.
	TraceLinkTemplate string
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		Listen:                  "127.0.0.1:8080",
		DataDir:                 "./data",
		NamespaceTemplate:       "{project}-{domain}",
		Workers:                 32,
		SSEHeartbeat:            15 * time.Second,
		SSEReplayEvents:         10000,
		SSEReplayAge:            5 * time.Minute,
		SSEMailbox:              4096,
		ExecutorTaskTypes:       "auto",
		ExecutorProcess:         "auto",
		ProcessSandbox:          "auto",
		ProcessCgroups:          true,
		KargoControllers:        "auto",
		ExecutorWorkers:         8,
		MaxSystemFailures:       5,
		LeaderElectionNamespace: "default",
		LeaderElection:          lease.DefaultTimings,
		ShutdownGracePeriod:     10 * time.Second,
		Auth:                    AuthToken,
		Retention:               time.Hour,
		OutputSweep:             time.Hour,
		LogMaxBytes:             logs.DefaultMaxBytes,
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", c.Listen, err)
	}
	// Actions are found by their identity, whatever their namespace, so a
	// template may put every project in one namespace (Flyte's "flyte").
	sample := strings.NewReplacer("{project}", "p", "{domain}", "d").Replace(c.NamespaceTemplate)
	if errs := validation.IsDNS1123Label(sample); len(errs) > 0 {
		return fmt.Errorf("--namespace-template %q does not make namespace names: %s", c.NamespaceTemplate, strings.Join(errs, "; "))
	}
	if err := c.LeaderElection.Validate(); err != nil {
		return fmt.Errorf("--leader-election-*: %w", err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	switch c.ExecutorProcess {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--executor-process %q: want auto, true or false", c.ExecutorProcess)
	}
	switch c.ProcessSandbox {
	case "auto", "required", "best-effort", "off":
	default:
		return fmt.Errorf("--process-sandbox %q: want auto, required, best-effort or off", c.ProcessSandbox)
	}
	switch c.KargoControllers {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--kargo-controllers %q: want auto, true or false", c.KargoControllers)
	}
	if c.Retention < 0 || c.OutputSweep < 0 || c.EtcdQuota < 0 || c.LogMaxBytes < 0 {
		return fmt.Errorf("--retention, --output-sweep, --etcd-quota and --log-max-bytes cannot be negative")
	}
	if c.Workers < 1 || c.ExecutorWorkers < 1 || c.SSEReplayEvents < 1 || c.SSEMailbox < 1 {
		return fmt.Errorf("worker counts and stream buffers must be at least 1")
	}
	switch c.Auth {
	case AuthToken, AuthKubernetes:
	case AuthNone:
		if !c.loopback() {
			return fmt.Errorf("--auth=none is only allowed on a loopback --listen (not %s): anyone who reaches the port could do anything", c.Listen)
		}
		if c.AuthTokensFile != "" {
			return fmt.Errorf("--auth-tokens-file needs --auth=token or kubernetes")
		}
	default:
		return fmt.Errorf("--auth %q: want token, kubernetes or none", c.Auth)
	}
	for _, o := range c.CORSOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("--cors-origins: %q is not an origin (scheme://host[:port])", o)
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %w", c.MetricsListen, err)
		}
	}
	if c.MaxConnections < 0 || c.MaxStreams < 0 || c.MaxProcesses < 0 {
		return fmt.Errorf("--max-connections, --max-streams and --max-processes must not be negative")
	}
	if _, err := httpstep.ParseAllowlist(c.AnalysisHTTPAllow); err != nil {
		return fmt.Errorf("--analysis-http-allow: %w", err)
	}
	if _, err := httpstep.ParseAllowlist(c.PromotionHTTPAllow); err != nil {
		return fmt.Errorf("--promotion-http-allow: %w", err)
	}
	if err := checkTraceLink(c.TraceLinkTemplate); err != nil {
		return fmt.Errorf("--trace-link-template: %w", err)
	}
	if c.KargoCredentialsFile != "" {
		if _, err := credentials.LoadFile(c.KargoCredentialsFile); err != nil {
			return fmt.Errorf("--kargo-credentials-file: %w", err)
		}
	}
	return nil
}

// Values of Config.Auth.
const (
	AuthToken = "token"
	// AuthKubernetes: besides the tokens of AuthToken, bearer tokens the
	// cluster accepts (TokenReview), their requests authorized by the
	// cluster (SubjectAccessReview). On a cluster only.
	AuthKubernetes = "kubernetes"
	AuthNone       = "none"
)

// loopback reports whether the listen address is loopback only.
func (c Config) loopback() bool {
	return loopbackAddr(c.Listen)
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkTraceLink: a trace link template is an http(s) URL with {traceId}
// in it. The dashboard puts it in an href, so no other scheme
// (javascript:) may come through.
func checkTraceLink(tmpl string) error {
	if tmpl == "" {
		return nil
	}
	if !strings.Contains(tmpl, "{traceId}") {
		return fmt.Errorf("%q has no {traceId}", tmpl)
	}
	u, err := url.Parse(strings.ReplaceAll(tmpl, "{traceId}", "0af7651916cd43dd8448eb211c80319c"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", tmpl)
	}
	return nil
}
