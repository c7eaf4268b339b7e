package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"taskactions/internal/failpoint"
	"taskactions/internal/secrets"
)

// embedded is etcd plus the apiextensions API server, in this process, on
// one data dir.
type embedded struct {
	lock     *dirLock
	etcd     *embed.Etcd
	space    *spaceKeeper
	quota    int64
	api      *apiServer
	log      zerolog.Logger
	stopping atomic.Bool // quiets etcd's reports of its listeners closing
	// errc gets the first failure of etcd or the API server after start.
	errc chan error
}

// Files in the data dir. The dir is 0700; secrets in it are 0600.
const (
	fileToken      = "token"
	fileKubeconfig = "kubeconfig"
	dirPKI         = "pki"
)

// startEmbedded brings the embedded control plane up and returns the
// configuration of a client authenticated as the admin user.
func startEmbedded(ctx context.Context, dataDir string, quota int64, log zerolog.Logger) (*embedded, *rest.Config, error) {
	dataDir, err := prepareDataDir(dataDir, log)
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockDataDir(dataDir)
	if err != nil {
		return nil, nil, err
	}
	e := &embedded{lock: lock, log: log, quota: quota, errc: make(chan error, 1)}
	cfg, err := e.start(ctx, dataDir)
	if err != nil {
		_ = e.stop()
		return nil, nil, err
	}
	go e.watch()
	failpoint.AfterReady(failpoint.EtcdDies, e.etcd.Server.HardStop)
	return e, cfg, nil
}

// watch reports the first of etcd and the API server to fail or end
// while the control plane is not stopping: the server's reads would
// otherwise come from a cache that no longer changes, and its writes
// fail, with nobody told.
func (e *embedded) watch() {
	var err error
	select {
	case err = <-e.etcd.Err():
		err = fmt.Errorf("etcd: %w", err)
	case <-e.etcd.Server.StopNotify():
		err = errors.New("etcd stopped")
	case <-e.api.exited:
		err = fmt.Errorf("API server stopped: %w", e.api.exitErr())
	}
	if !e.stopping.Load() {
		e.errc <- err
	}
}

func (e *embedded) start(ctx context.Context, dataDir string) (*rest.Config, error) {
	token, err := secrets.LoadOrCreate(filepath.Join(dataDir, fileToken))
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dataDir, fileKubeconfig)
	ln, err := listenLoopback(previousPort(kubeconfigPath))
	if err != nil {
		return nil, err
	}
	var endpoint string
	t0 := time.Now()
	if e.etcd, endpoint, err = startEtcd(ctx, dataDir, e.quota, e.log, &e.stopping); err != nil {
		_ = ln.Close()
		return nil, err
	}
	e.space = startSpaceKeeper(e.etcd, e.quota, e.log.With().Str("component", "etcd").Logger())
	etcdReady := time.Since(t0)
	e.api, err = startAPIServer(apiServerConfig{
		etcdEndpoint: endpoint,
		certDir:      filepath.Join(dataDir, dirPKI),
		token:        token,
		listener:     ln,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(dataDir, dirPKI, "apiserver.crt"))
	if err != nil {
		return nil, fmt.Errorf("read api server certificate: %w", err)
	}
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(e.api.port)),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		UserAgent:       FieldManager,
		// The API server is in this process: gzip on loopback only spends
		// CPU at both ends (a twentieth of a restart's list).
		DisableCompression: true,
	}
	if err := e.api.waitReady(ctx, cfg); err != nil {
		return nil, err
	}
	e.log.Info().Dur("etcdMs", etcdReady).Dur("apiServerMs", time.Since(t0)-etcdReady).Str("apiServerURL", cfg.Host).Msg("embedded control plane up")
	if err := writeKubeconfig(kubeconfigPath, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// stop stops the API server, then etcd, then drops the lock: the reverse of
// start, so nothing is written to a closed store.
func (e *embedded) stop() error {
	e.stopping.Store(true)
	var errs []error
	if e.api != nil {
		errs = append(errs, e.api.stop())
	}
	if e.space != nil {
		e.space.close()
		ctx, cancel := context.WithTimeout(context.Background(), tidyTimeout)
		e.space.tidy(ctx)
		cancel()
	}
	if e.etcd != nil {
		e.etcd.Close()
	}
	if e.lock != nil {
		errs = append(errs, e.lock.release())
	}
	return errors.Join(errs...)
}

// prepareDataDir creates the data dir with mode 0700, or tightens an
// existing one: its files are the only credentials of the control plane.
func prepareDataDir(dir string, log zerolog.Logger) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		log.Warn().Str("dataDir", abs).Stringer("mode", st.Mode().Perm()).Msg("data dir readable by others; setting mode 0700")
		if err := os.Chmod(abs, 0o700); err != nil {
			return "", fmt.Errorf("restrict data dir: %w", err)
		}
	}
	return abs, nil
}

// previousPort returns the API server port of the last run, so that a
// kubeconfig someone copied keeps working across restarts.
func previousPort(kubeconfigPath string) int {
	cfg, err := clientcmd.LoadFromFile(kubeconfigPath)
	if err != nil {
		return 0
	}
	for _, c := range cfg.Clusters {
		if u, err := url.Parse(c.Server); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				return p
			}
		}
	}
	return 0
}

// listenLoopback listens on 127.0.0.1:port, or on any free port when that
// one is taken (or port is 0).
func listenLoopback(port int) (net.Listener, error) {
	if port > 0 {
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return ln, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for api server: %w", err)
	}
	return ln, nil
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	const name = "taskactions"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
