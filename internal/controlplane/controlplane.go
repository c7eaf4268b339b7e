// Package controlplane gives the rest of the program a Kubernetes API to
// store TaskActions in: an embedded one (etcd and the apiextensions API
// server in this process) or an external cluster. Either way it installs
// the CRDs it serves (TaskAction; Kargo's Stage, Freight, Promotion,
// Warehouse and ProjectConfig; Argo Rollouts' AnalysisTemplate,
// ClusterAnalysisTemplate and AnalysisRun; crd.go) and hands out a
// *rest.Config.
//
// The embedded one (embedded.go) also:
//   - holds the data dir with an exclusive lock (lock.go), and keeps etcd
//     off TCP: its listeners are unix sockets in the data dir (etcd.go);
//   - serves what clients expect of a cluster beyond CRDs: root and core
//     group discovery and namespaces (discovery.go, core.go);
//   - runs admission plugins in its API server: Kargo's webhooks (package
//     webhooks) and the one that keeps this server's own writes out of
//     managedFields (ownfields.go);
//   - keeps etcd small: trims its file before start (etcdtrim.go),
//     defragments, watches the quota and clears the NOSPACE alarm
//     (etcdspace.go);
//   - reports on Err the failure of etcd or the API server after start, as
//     etcd's embed does, so that its owner stops rather than serve a cache
//     that no longer changes.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"taskactions/config/crd"
)

// Config selects the control plane. With no Kubeconfig, no KUBECONFIG in
// the environment and not running in a pod, it is the embedded one.
type Config struct {
	// DataDir holds the embedded control plane's store and credentials.
	DataDir string
	// Kubeconfig points at an external cluster; it wins over KUBECONFIG.
	Kubeconfig string
	// EtcdQuota is the embedded etcd's space quota in bytes (0: 2 GiB).
	EtcdQuota int64
	Log       zerolog.Logger
}

// ControlPlane is a started control plane. Stop it once.
type ControlPlane struct {
	rest     *rest.Config
	embedded *embedded
	source   string
	kargo    bool
	rollouts bool
}

// Start brings the control plane up and returns once the TaskAction CRD is
// established. The caller owns Stop.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cp := &ControlPlane{}
	var err error
	path := kubeconfigPath(cfg.Kubeconfig)
	if ownKubeconfig(path, cfg.DataDir) {
		// `export KUBECONFIG=data/kubeconfig` for kubectl, as docs/operations.md
		// shows, must not turn the next start into a client of itself.
		cfg.Log.Info().Str("kubeconfig", path).Msg("the kubeconfig names this data dir's own embedded control plane: starting it")
		path = ""
	}
	switch {
	case path != "":
		cp.source = "kubeconfig " + path
		cp.rest, err = clientcmd.BuildConfigFromFlags("", path)
	case inCluster():
		cp.source = "in-cluster"
		cp.rest, err = rest.InClusterConfig()
	default:
		cp.source = "embedded " + cfg.DataDir
		cp.embedded, cp.rest, err = startEmbedded(ctx, cfg.DataDir, cfg.EtcdQuota, cfg.Log)
	}
	if err != nil {
		return nil, fmt.Errorf("control plane (%s): %w", cp.source, err)
	}
	// client-go throttles to 5 requests/s by default, far below what one
	// server needs. The embedded API server is ours alone: no client-side
	// limit. An external cluster gets a generous one; its own priority and
	// fairness protects it beyond that.
	if cp.embedded != nil {
		cp.rest.QPS = -1
	} else {
		cp.rest.QPS, cp.rest.Burst = 200, 400
	}
	t0 := time.Now()
	foreign, err := EnsureCRDs(ctx, cp.rest, CRD{YAML: crd.TaskActions},
		CRD{YAML: crd.Stages, KeepForeign: true}, CRD{YAML: crd.Freights, KeepForeign: true}, CRD{YAML: crd.Promotions, KeepForeign: true},
		CRD{YAML: crd.Warehouses, KeepForeign: true}, CRD{YAML: crd.ProjectConfigs, KeepForeign: true},
		CRD{YAML: crd.AnalysisTemplates, KeepForeign: true, OwnedWith: rolloutCRD},
		CRD{YAML: crd.ClusterAnalysisTemplates, KeepForeign: true, OwnedWith: rolloutCRD},
		CRD{YAML: crd.AnalysisRuns, KeepForeign: true, OwnedWith: rolloutCRD})
	if err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("control plane (%s): %w", cp.source, err)
	}
	cp.kargo = slices.ContainsFunc(foreign, inGroup("kargo.akuity.io"))
	cp.rollouts = slices.ContainsFunc(foreign, inGroup("argoproj.io"))
	cfg.Log.Info().Dur("tookMs", time.Since(t0)).Bool("kargoInstalled", cp.kargo).Bool("rolloutsInstalled", cp.rollouts).Msg("CRDs established")
	return cp, nil
}

// rolloutCRD is Argo Rollouts' Rollout CRD, which this binary never
// installs: where it exists, Rollouts is installed and owns its analysis
// CRDs.
const rolloutCRD = "rollouts.argoproj.io"

// inGroup matches the names of the CRDs of an API group.
func inGroup(group string) func(crd string) bool {
	return func(crd string) bool { return strings.HasSuffix(crd, "."+group) }
}

// RolloutsInstalled reports whether the cluster has Argo Rollouts' own
// analysis CRDs (AnalysisTemplate, ClusterAnalysisTemplate, AnalysisRun),
// which are then served as they are: Rollouts' controller runs
// AnalysisRuns there.
func (c *ControlPlane) RolloutsInstalled() bool { return c.rollouts }

// KargoInstalled reports whether the cluster has Kargo's own Stage CRD,
// which is then served as it is: Kargo's controller owns Stage statuses,
// and a project is a namespace labelled as one.
func (c *ControlPlane) KargoInstalled() bool { return c.kargo }

// RESTConfig returns a copy of the client configuration.
func (c *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Embedded reports whether the control plane runs in this process, which
// means: no Namespace objects, no Leases, no garbage collector.
func (c *ControlPlane) Embedded() bool { return c.embedded != nil }

// EtcdSpace reports the embedded etcd's use of its file; false on a
// cluster, whose etcd is not ours.
func (c *ControlPlane) EtcdSpace() (Space, bool) {
	if c.embedded == nil || c.embedded.space == nil {
		return Space{}, false
	}
	return c.embedded.space.space(), true
}

// Err delivers the failure of an embedded control plane after start:
// etcd or the API server stopped or failed while the process was not
// stopping it. The owner must stop then. On an external cluster it never
// delivers (the cluster's failures show as the caches' watch errors).
func (c *ControlPlane) Err() <-chan error {
	if c.embedded == nil {
		return nil
	}
	return c.embedded.errc
}

// Source says where the API is, for logs.
func (c *ControlPlane) Source() string { return c.source }

// Stop stops an embedded control plane (API server, then etcd) and releases
// the data dir. For an external cluster it does nothing.
func (c *ControlPlane) Stop() error {
	if c.embedded == nil {
		return nil
	}
	return c.embedded.stop()
}

func kubeconfigPath(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
}

// ownKubeconfig reports whether path is the kubeconfig the embedded
// control plane of dataDir writes.
func ownKubeconfig(path, dataDir string) bool {
	if path == "" || dataDir == "" {
		return false
	}
	own := filepath.Join(dataDir, fileKubeconfig)
	if x, err := os.Stat(path); err == nil {
		y, err := os.Stat(own)
		return err == nil && os.SameFile(x, y) // through symlinks too
	}
	a, err1 := filepath.Abs(path)
	b, err2 := filepath.Abs(own)
	return err1 == nil && err2 == nil && a == b
}

func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}
