// Package sandbox confines a process task to its own attempt. The server
// starts the task through itself: its own binary, re-executed under the
// name Name, is a launcher that takes a Spec, confines itself with what
// Linux gives (a mount namespace hiding the data dir, Landlock, another
// uid, no_new_privs) and then executes the command, which inherits all of
// it. The launcher runs before anything else in the binary (an init
// function of this package, which every binary starting process tasks
// imports), so a test binary that runs the server starts tasks the same
// way.
//
// What a confined task reaches: read and execute in the system's dirs
// (SystemDirs), read and write in its output dir and a private temporary
// dir, the usual device files, and the network. Not the data dir (tokens,
// keys, etcd, history), other actions' outputs, or the server's processes
// (Landlock's signal scope); nor any named unix socket, etcd's included
// (Landlock from its ABI 9, else a seccomp filter: unixsock.go).
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Name is the launcher's argv[0]: what selects it at start.
const Name = "taskactions-sandbox"

// Spec is what the launcher is told, as JSON in argv[1].
type Spec struct {
	// Dir is the attempt's output dir: the working dir, read and write.
	Dir string
	// Tmp is the attempt's private temporary dir (TMPDIR, HOME).
	Tmp string
	// Hide, when set, is covered with an empty tmpfs in a mount namespace
	// of the task's own (the data dir), Dir being mounted back at its path
	// within: nothing else of it is there to reach, with Landlock or not.
	Hide string
	// Landlock restricts the file system to the rules below.
	Landlock bool
	// Read are more dirs to read and execute than SystemDirs.
	Read []string
	// UID and GID, when UID is not 0, are what the command runs as.
	UID, GID int
	// Parent is the server's pid: if it is gone by the time the uid is
	// dropped (which clears the parent-death signal), the launcher quits.
	Parent int
}

// SystemDirs are read and executed by a confined task: what commands need
// to run (those missing are skipped).
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys"}

// deviceFiles are read and written: the harmless devices.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// LandlockABI is the Landlock version of the kernel (0 when it has none).
func LandlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Command returns the launcher running path with args under spec, with
// the attributes the launcher cannot set itself: a mount namespace of its
// own when spec.Hide is set (the server must be root for that).
func Command(spec Spec, path string, args ...string) (*exec.Cmd, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox spec: %w", err)
	}
	// /proc/self/exe in the forked child is still the server's binary,
	// whatever its path and whether the task's uid could reach it.
	cmd := exec.Command("/proc/self/exe", append([]string{string(b), path}, args...)...)
	cmd.Args[0] = Name
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if spec.Hide != "" {
		// Go makes every mount of the new namespace private, so what the
		// launcher mounts is seen by the task alone.
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	return cmd, nil
}

func init() {
	if len(os.Args) < 3 || os.Args[0] != Name {
		return
	}
	err := launch(os.Args[1], os.Args[2:])
	fmt.Fprintln(os.Stderr, "taskactions sandbox:", err)
	os.Exit(126) // as a shell says a command could not be run
}

// launch confines this process under the JSON spec, then executes argv.
func launch(specJSON string, argv []string) error {
	var spec Spec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if spec.Hide != "" {
		if err := hide(spec.Hide, spec.Dir); err != nil {
			return err
		}
	}
	if err := os.Chdir(spec.Dir); err != nil {
		return fmt.Errorf("chdir: %w", err)
	}
	if spec.Landlock {
		if err := restrict(spec); err != nil {
			return err
		}
	}
	if err := noNewPrivs(); err != nil {
		return err
	}
	if needsUnixFilter(spec, LandlockABI()) {
		if err := denyUnixSockets(); err != nil {
			return err
		}
	}
	if spec.UID != 0 {
		if err := dropTo(spec.UID, spec.GID, spec.Parent); err != nil {
			return err
		}
	}
	return fmt.Errorf("exec %s: %w", argv[0], syscall.Exec(argv[0], argv, os.Environ()))
}

// restrict applies Landlock: the file system rights this kernel knows of,
// and its IPC scopes (signals, abstract sockets), all denied but for the
// rules. The network is left alone: a task talks to the API.
func restrict(spec Spec) error {
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}.BestEffort()
	rules := []landlock.Rule{
		landlock.RODirs(SystemDirs...).IgnoreIfMissing(),
		landlock.RWFiles(deviceFiles...).IgnoreIfMissing(),
		landlock.RWDirs(spec.Dir, spec.Tmp).WithRefer(),
	}
	if len(spec.Read) > 0 {
		rules = append(rules, landlock.RODirs(spec.Read...))
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

func noNewPrivs() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	return nil
}

const (
	prSetNoNewPrivs = 38
	prSetPdeathsig  = 1
)

// dropTo switches every thread to uid and gid with no supplementary
// groups, then sets the parent-death signal again (a change of
// credentials clears it) and quits if the server is already gone.
func dropTo(uid, gid, parent int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(syscall.SIGUSR1), 0); e != 0 {
		return fmt.Errorf("parent-death signal: %w", e)
	}
	if os.Getppid() != parent {
		return fmt.Errorf("the server is gone")
	}
	return nil
}
