package controlplane

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/server/v3/embed"

	"taskactions/internal/logging"
)

// maxSocketPath leaves room under the kernel's 108-byte sun_path limit.
const maxSocketPath = 100

// startEtcd starts a single-member etcd in <dataDir>/etcd. Clients reach it
// only through a unix socket in the data dir, whose 0700 mode is the access
// control: nothing on the machine gets at the store without the rights to
// the data dir. The peer listener must exist but is never dialled by a
// single member, so it takes any free loopback port.
func startEtcd(dataDir string, log zerolog.Logger, stopping *atomic.Bool) (*embed.Etcd, string, error) {
	sock := filepath.Join(dataDir, "etcd.sock")
	if len(sock) > maxSocketPath {
		return nil, "", fmt.Errorf("data dir path too long for etcd's unix socket (%d > %d bytes): %s", len(sock), maxSocketPath, sock)
	}
	cfg := embed.NewConfig()
	cfg.Name = "taskactions"
	cfg.Dir = filepath.Join(dataDir, "etcd")
	client := url.URL{Scheme: "unix", Path: sock}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logging.NewZap(log.With().Str("component", "etcd").Logger(), stopping))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after 60s")
	}
	return e, "unix://" + sock, nil
}
