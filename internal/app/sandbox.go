package app

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/executor/sandbox"
)

// nobody is the uid and gid process tasks run as when the server is root.
const nobody = 65534

// Capability bits of /proc/self/status's CapEff.
const (
	capSetgid   = 6
	capSetuid   = 7
	capSysAdmin = 21
)

// processConfinement decides how process tasks are confined
// (--process-sandbox): Landlock where the kernel has it, and when the
// server may, another uid and a mount namespace hiding the data dir.
// Without Landlock a task of a non-root server could read the data dir,
// so then it is refused unless told otherwise (best-effort, or auto on a
// loopback listener).
func (a *App) processConfinement() *process.Confinement {
	mode := a.cfg.ProcessSandbox
	if mode == "off" {
		a.log.Warn().Msg("process tasks run unconfined, as the server (--process-sandbox=off): they can read its data dir and tokens")
		return nil
	}
	c := &process.Confinement{Landlock: sandbox.LandlockABI() > 0, Read: a.cfg.ProcessSandboxRead}
	caps := effectiveCaps()
	if os.Geteuid() == 0 && caps&(1<<capSetuid) != 0 && caps&(1<<capSetgid) != 0 {
		c.UID, c.GID = nobody, nobody
	}
	if dir, err := filepath.Abs(a.cfg.DataDir); err == nil && caps&(1<<capSysAdmin) != 0 {
		c.Hide = dir
	}
	log := a.log.Info()
	if !c.Landlock {
		c.Refuse = withoutLandlock(mode, a.cfg.loopback())
		log = a.log.Warn()
		if c.Refuse != "" {
			log = a.log.Error()
		}
	}
	log.Bool("landlock", c.Landlock).Int("landlockABI", sandbox.LandlockABI()).Int("uid", c.UID).Bool("hideDataDir", c.Hide != "").
		Bool("refused", c.Refuse != "").Msg("process sandbox")
	return c
}

// withoutLandlock is what a server on a kernel without Landlock does with
// process tasks under --process-sandbox=mode: "" runs them (the caller
// warns), else the reason each is refused. Off loopback a task could reach
// the data dir of a server others use, so auto refuses there.
func withoutLandlock(mode string, loopback bool) string {
	if mode == "required" || (mode == "auto" && !loopback) {
		return "this kernel has no Landlock, and --process-sandbox=" + mode + " on this listener requires it to run a process task"
	}
	return ""
}

// processCgroups runs each process task in a cgroup of its own where the
// server may create one, so that what it starts dies with it, setsid or
// not. The dir is named after the data dir: its lock admits one server.
// Without cgroups the server becomes a subreaper that sweeps what tasks
// leave, which reaches all but what leaves its session and clears its
// environment while the server is killed.
func (a *App) processCgroups(pp *process.Plugin) {
	if a.cfg.ProcessCgroups {
		dir, _ := filepath.Abs(a.cfg.DataDir)
		sum := sha256.Sum256([]byte(dir))
		root, err := pp.Cgroups(hex.EncodeToString(sum[:6]))
		if err == nil {
			a.log.Info().Str("cgroup", root).Msg("process tasks run in cgroups")
			return
		}
		a.log.Warn().Err(err).Msg("process tasks run without cgroups: the server sweeps what they leave as a subreaper")
	}
	root, _ := filepath.Abs(a.outputRoot())
	if err := pp.Subreap(root); err != nil {
		a.log.Warn().Err(err).Msg("process tasks run without cgroups or a subreaper: a process that leaves its group (setsid) and its parent can outlive its attempt")
		return
	}
	a.log.Info().Bool("cgroups", false).Msg("process tasks are swept by a subreaper")
}

// effectiveCaps reads this process's effective capabilities.
func effectiveCaps() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n
		}
	}
	return 0
}
