package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/server/v3/embed"

	"taskactions/internal/logging"
)

// maxSocketPath leaves room under the kernel's 108-byte sun_path limit.
const maxSocketPath = 100

// startEtcd starts a single-member etcd in <dataDir>/etcd. It opens no TCP
// port: clients and the (never dialled) raft peer listener are unix sockets
// in the data dir, whose 0700 mode is the access control. A peer port on
// loopback would let any local process send a raft message that makes etcd
// panic and the server exit.
func startEtcd(ctx context.Context, dataDir string, quota int64, log zerolog.Logger, stopping *atomic.Bool) (*embed.Etcd, string, error) {
	sock := filepath.Join(dataDir, "etcd.sock")
	peerSock := filepath.Join(dataDir, "etcd-peer.sock")
	for _, s := range []string{sock, peerSock} {
		if len(s) > maxSocketPath {
			return nil, "", fmt.Errorf("data dir path too long for etcd's unix socket (%d > %d bytes): %s", len(s), maxSocketPath, s)
		}
	}
	bootstrapping, err := prepareEtcdDir(dataDir, log)
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "taskactions"
	cfg.Dir = filepath.Join(dataDir, "etcd")
	trimEtcdFile(cfg.Dir, log)
	client := url.URL{Scheme: "unix", Path: sock}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	// etcd listens for peers on the URL's Host (a path, for a unix socket),
	// which a URL parsed from a string cannot hold; this one is never
	// parsed. The advertised peer URL only names the member: a single
	// member never dials itself.
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: peerSock}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Host: "taskactions-peer"}}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	// Keep one hour of revisions, compacted every few minutes: the API
	// server's watch cache needs only recent ones, and old revisions of
	// retired actions would otherwise fill the file.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "10m"
	cfg.QuotaBackendBytes = quota
	// etcd keeps its raft log in memory back to the last snapshot, plus
	// entries for slow followers: every write, whole (10,000 by default).
	// A single member has no follower; a short log keeps memory flat.
	cfg.SnapshotCount = 1000
	cfg.SnapshotCatchUpEntries = 100
	// etcd keeps five 64 MB files of its write-ahead log (a copy to recover
	// from by hand) and reads every one of them at each start, to find the
	// snapshots they name: 0.4 s of a start with 50,000 live actions. Only
	// files that a snapshot has made unneeded are removed (the rest are
	// locked), so one more than the file in use is enough.
	cfg.MaxWalFiles = 2
	// A single member elects itself once its election timeout passes, a
	// random 1 to 2 timeouts after a restart (fast-forwarded by one): with
	// etcd's 100 ms tick and 1 s timeout that was up to a second of every
	// restart spent waiting for a vote nobody else casts. With no peers
	// there is no network to be patient with.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	// etcd warns of a request slower than 100 ms (applied) or 300 ms
	// (served): thresholds for a dedicated member's disk and cores. In
	// process, on a machine busy with the tasks it runs, reading the
	// largest CRDs (260 KB) at start passes them under load, and a first
	// start warned with nothing wrong. A request over a second still warns.
	cfg.WarningApplyDuration = time.Second
	cfg.WarningUnaryRequestDuration = time.Second
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logging.NewZap(log.With().Str("component", "etcd").Logger(), stopping))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		if bootstrapping {
			if err := os.Remove(filepath.Join(dataDir, fileEtcdBootstrap)); err != nil {
				e.Close()
				return nil, "", fmt.Errorf("etcd's first start: %w", err)
			}
		}
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed while starting: %w", err)
	case <-ctx.Done():
		// A stop while etcd replays its log: do not wait for it.
		e.Server.Stop()
		e.Close()
		return nil, "", fmt.Errorf("start etcd: %w", context.Cause(ctx))
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after 60s")
	}
	return e, "unix://" + sock, nil
}

// fileEtcdBootstrap marks an etcd dir whose first start has not finished.
const fileEtcdBootstrap = "etcd.bootstrapping"

// prepareEtcdDir makes a first start of etcd recoverable. A member stopped
// before its first start was ready leaves a dir it cannot start from
// again (it never elects itself: measured, "etcd not ready after 60s" on
// every start after a Ctrl-C in the first second of the first one). A
// marker is written before a first start and removed once etcd is ready;
// a dir found with it holds nothing yet and is made afresh. It reports
// whether this start is a first one.
func prepareEtcdDir(dataDir string, log zerolog.Logger) (bool, error) {
	dir, marker := filepath.Join(dataDir, "etcd"), filepath.Join(dataDir, fileEtcdBootstrap)
	if _, err := os.Stat(marker); err == nil {
		log.Warn().Str("dir", dir).Msg("etcd's first start was stopped before it was ready: starting it afresh")
		if err := os.RemoveAll(dir); err != nil {
			return false, fmt.Errorf("remove the unfinished etcd dir: %w", err)
		}
	}
	switch _, err := os.Stat(dir); {
	case err == nil:
		return false, nil
	case !os.IsNotExist(err):
		return false, fmt.Errorf("etcd dir: %w", err)
	}
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return false, fmt.Errorf("etcd's first start: %w", err)
	}
	return true, errors.Join(f.Sync(), f.Close())
}
