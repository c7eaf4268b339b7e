package process

import (
	"testing"

	"taskactions/internal/executor/plugins"
)

// The plugin's actions need the executor's finalizer unless it swept at
// its start what a killed server left (cgroups, or as a subreaper).
func TestFinalizerOnlyWithoutASweep(t *testing.T) {
	p := New("i1", nil)
	if !plugins.NeedsFinalizer(p) {
		t.Error("without cgroups or a subreaper, process actions carry no finalizer")
	}
	p.reaper.on = true
	if plugins.NeedsFinalizer(p) {
		t.Error("swept as a subreaper, process actions still carry a finalizer")
	}
	p.reaper.on, p.cgroups.root = false, "/sys/fs/cgroup/taskactions-x"
	if plugins.NeedsFinalizer(p) {
		t.Error("swept in cgroups, process actions still carry a finalizer")
	}
}
