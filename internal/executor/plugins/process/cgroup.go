package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A process that leaves the attempt's process group (setsid) escapes the
// group kill. Where the server may create cgroups (cgroup v2, writable),
// each attempt runs in a cgroup of its own, created before its process
// starts (clone into it: nothing runs outside it for a moment) and killed
// whole with cgroup.kill on abort, timeout, exit, stop, and at the next
// start for whatever a killed server left behind. The cgroup is named by
// the attempt's marker, which the plugin state records before the start.

// cgroups is the dir of the attempts' cgroups ("" when there is none).
type cgroups struct{ root string }

// Cgroups sets the plugin up to run each attempt in a cgroup under a dir
// of its own (named by key: one per data dir, so that servers of other
// data dirs keep theirs), if this process may create one, and kills what
// an earlier server left there. It returns the dir, or "" and why not.
func (p *Plugin) Cgroups(key string) (string, error) {
	base, err := ownCgroup()
	if err != nil {
		return "", err
	}
	root := filepath.Join(base, "taskactions-"+key)
	if err := os.Mkdir(root, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create %s: %w", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("no cgroup.kill (kernel before 5.14): %w", err)
	}
	p.cgroups = cgroups{root: root}
	p.cgroups.sweep()
	return root, nil
}

// ownCgroup is this process's cgroup v2 dir.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var path string
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", errors.New("no cgroup v2 hierarchy")
	}
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(mount, path), nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint options - fstype source superoptions
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("cgroup2 is not mounted")
}

// create makes the attempt's cgroup and opens it for clone.
func (c cgroups) create(marker string) (*os.File, error) {
	dir := filepath.Join(c.root, marker)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	return os.Open(dir)
}

// kill kills every process of the attempt's cgroup and removes it.
func (c cgroups) kill(marker string) {
	if c.root == "" || marker == "" {
		return
	}
	dir := filepath.Join(c.root, marker)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return // gone already
	}
	// A cgroup can be removed once its processes are gone, which takes
	// the kernel a moment after the kill.
	for range 100 {
		if err := syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweep kills the cgroups an earlier server process left: at start none
// of them is this one's.
func (c cgroups) sweep() {
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			c.kill(e.Name())
		}
	}
}

// remove kills what is left and removes the dir, at stop.
func (c cgroups) remove() {
	if c.root == "" {
		return
	}
	c.sweep()
	_ = syscall.Rmdir(c.root) // not empty: an attempt still ends; the next start sweeps
}
