package controlplane

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
)

// etcd keeps every revision of every object until it is compacted, and its
// file never shrinks by itself: compaction frees pages inside the file,
// defragmentation gives them back. The embedded etcd compacts on its own
// (periodic auto-compaction, see startEtcd); spaceKeeper defragments when
// much of the file is free, and clears the NOSPACE alarm once there is
// room again (etcd keeps refusing writes until the alarm is cleared, even
// after space was freed).

// Space is the embedded etcd's use of its file.
type Space struct {
	Size, InUse, Quota int64 // bytes
	NoSpace            bool  // the NOSPACE alarm is raised: writes fail
	Defrags            int64 // defragmentations done since start
}

const (
	// defragFreeBytes and defragFreeRatio: defragment when at least this
	// much of the file, and this share of it, is free.
	defragFreeBytes = 64 << 20
	defragFreeRatio = 0.5
	// tidyFreeBytes is defragFreeBytes at a stop, when nothing waits.
	tidyFreeBytes = 4 << 20
	// tidyTimeout bounds the compaction at a stop.
	tidyTimeout = 30 * time.Second
	// spaceCheckEvery is how often the keeper looks.
	spaceCheckEvery = 30 * time.Second
	// defaultQuota is etcd's own default.
	defaultQuota = 2 << 30
)

type spaceKeeper struct {
	etcd    *embed.Etcd
	quota   int64
	log     zerolog.Logger
	defrags atomic.Int64
	done    chan struct{}
	stop    context.CancelFunc
}

func startSpaceKeeper(e *embed.Etcd, quota int64, log zerolog.Logger) *spaceKeeper {
	if quota <= 0 {
		quota = defaultQuota
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &spaceKeeper{etcd: e, quota: quota, log: log, done: make(chan struct{}), stop: cancel}
	go k.run(ctx)
	return k
}

func (k *spaceKeeper) run(ctx context.Context) {
	defer close(k.done)
	t := time.NewTicker(spaceCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.check(ctx)
		}
	}
}

// check defragments when the free space is large, and clears NOSPACE when
// the file fits in the quota with room to spare.
func (k *spaceKeeper) check(ctx context.Context) {
	k.defragIf(defragFreeBytes)
	if k.noSpace() && k.etcd.Server.Backend().Size() < k.quota*8/10 {
		_, err := k.etcd.Server.Alarm(ctx, &pb.AlarmRequest{
			Action: pb.AlarmRequest_DEACTIVATE, MemberID: uint64(k.etcd.Server.MemberID()), Alarm: pb.AlarmType_NOSPACE,
		})
		if err != nil {
			k.log.Warn().Err(err).Msg("could not clear etcd's NOSPACE alarm")
			return
		}
		k.log.Info().Int64("quota", k.quota).Msg("etcd has room again: writes resume")
	}
}

// tidy runs at a clean stop, once the API server is gone and no watcher
// is left to need an old revision: it compacts them all away and
// defragments whatever that freed. The next start then reads a file of
// live objects only (the embedded etcd maps its file into memory, and
// rebuilding its index at start touches every page: with 10,000 live
// actions and their recent revisions, 146 MiB of the process's RSS). A
// crash skips this; periodic compaction and check catch up after the
// next start.
func (k *spaceKeeper) tidy(ctx context.Context) {
	rev := k.etcd.Server.KV().Rev()
	_, err := k.etcd.Server.Compact(ctx, &pb.CompactionRequest{Revision: rev, Physical: true})
	if err != nil && !errors.Is(err, mvcc.ErrCompacted) {
		k.log.Warn().Err(err).Msg("etcd compaction at stop failed")
		return
	}
	k.defragIf(tidyFreeBytes)
}

// defragIf defragments when at least minFree bytes, and half the file,
// are free; or when the file nears the quota, which etcd checks against
// the file's size, with a tenth of it free.
func (k *spaceKeeper) defragIf(minFree int64) {
	be := k.etcd.Server.Backend()
	size, inUse := be.Size(), be.SizeInUse()
	free := size - inUse
	large := free >= minFree && float64(free) >= defragFreeRatio*float64(size)
	nearQuota := size > k.quota*8/10 && free >= size/10
	if large || nearQuota {
		t0 := time.Now()
		if err := be.Defrag(); err != nil {
			k.log.Warn().Err(err).Msg("etcd defragmentation failed")
			return
		}
		k.defrags.Add(1)
		k.log.Info().Int64("sizeBefore", size).Int64("sizeAfter", be.Size()).Dur("tookMs", time.Since(t0)).Msg("etcd defragmented")
	}
}

func (k *spaceKeeper) noSpace() bool {
	for _, a := range k.etcd.Server.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

func (k *spaceKeeper) space() Space {
	be := k.etcd.Server.Backend()
	return Space{Size: be.Size(), InUse: be.SizeInUse(), Quota: k.quota, NoSpace: k.noSpace(), Defrags: k.defrags.Load()}
}

func (k *spaceKeeper) close() {
	k.stop()
	<-k.done
}
