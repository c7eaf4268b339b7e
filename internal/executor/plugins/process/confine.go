package process

import (
	"fmt"
	"os"
	"os/exec"

	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/sandbox"
)

// Confinement is how the plugin confines the commands it starts (see
// internal/executor/sandbox). Without one (New's default) a command runs
// as the server does, as the executor's own tests want.
type Confinement struct {
	// Refuse, when set, fails every process task with this reason: a
	// sandbox is required and this host cannot give it.
	Refuse string
	// Landlock confines the file system to the attempt's dirs and the
	// system's.
	Landlock bool
	// Read are more dirs commands may read and execute.
	Read []string
	// UID and GID (UID not 0) are what commands run as: the server runs
	// as root.
	UID, GID int
	// Hide is the data dir, hidden from commands in a mount namespace of
	// their own (root only).
	Hide string
}

// Confine makes the plugin start every command under c.
func (p *Plugin) Confine(c *Confinement) { p.confine = c }

// confined is the shim running path and args under the plugin's
// confinement, with the attempt's private temporary dir (removed by
// cleanup), and the environment entries that point there.
func (p *Plugin) confined(tc *plugins.TaskContext, path string, args []string) (cmd *exec.Cmd, env []string, cleanup func(), err error) {
	c := p.confine
	if c == nil {
		return shimCommand(path, args), nil, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "taskactions-task-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("private tmp: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	if c.UID != 0 {
		// The output dir and the tmp dir are the only ones the task's uid
		// may write.
		for _, d := range []string{tmp, tc.OutputDir} {
			if err := os.Chown(d, c.UID, c.GID); err != nil {
				cleanup()
				return nil, nil, nil, fmt.Errorf("hand %s to the task's uid: %w", d, err)
			}
		}
	}
	spec := sandbox.Spec{Dir: tc.OutputDir, Tmp: tmp, Hide: c.Hide, Landlock: c.Landlock, Read: c.Read, UID: c.UID, GID: c.GID, Parent: os.Getpid()}
	cmd, err = sandbox.Command(spec, "/bin/sh", shimArgs(path, args)...)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return withShim(cmd), []string{"TMPDIR=" + tmp, "HOME=" + tmp}, cleanup, nil
}
