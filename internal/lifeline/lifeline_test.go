package lifeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv switches the test binary into the parent's part (the server's).
const parentEnv = "LIFELINE_TEST_PARENT"

// The parent's main goroutine keeps the main thread: Go never ends that
// thread (it wedges it instead), so a goroutine that ends locked to it
// would prove nothing.
func init() {
	if os.Getenv(parentEnv) != "" {
		runtime.LockOSThread()
	}
}

// A child started by Start gets its parent-death signal when its parent
// process dies, and not before: not when the goroutine that asked for it,
// locked to its thread, ends and takes the thread along. A child started
// the plain way from such a goroutine is killed by it, which shows the
// test would see the difference.
func TestChildDiesWithItsParentOnly(t *testing.T) {
	if dir := os.Getenv(parentEnv); dir != "" {
		beParent(t, dir)
		return
	}
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParentOnly$")
	parent.Env = append(os.Environ(), parentEnv+"="+dir)
	parent.Stdout, parent.Stderr = os.Stdout, os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- parent.Wait() }()
	defer parent.Process.Kill()
	child := waitForPid(t, filepath.Join(dir, "child.pid"), exited)
	if gone(child) {
		t.Fatal("the child died before its parent")
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited // killed: its status says nothing
	if !eventuallyGone(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("child %d outlived its parent", child)
	}
}

// beParent starts two sleeps with a parent-death signal, each from a
// goroutine that ends locked to its thread: one through Start, one plain.
// It records the first's pid once the plain one has died of its thread's
// end, and waits to be killed.
func beParent(t *testing.T, dir string) {
	start := func(startIt func(*exec.Cmd) error) *exec.Cmd {
		c := exec.Command("sleep", "300")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		done := make(chan error)
		go func() { runtime.LockOSThread(); done <- startIt(c) }() // never unlocked
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain := start((*exec.Cmd).Start)
	through := start(Start)
	defer through.Process.Kill()
	if !eventuallyGone(plain.Process.Pid) {
		plain.Process.Kill()
		t.Fatal("a child started plainly from a thread that exited lived on: the test cannot tell")
	}
	if gone(through.Process.Pid) {
		t.Fatal("a child started by Start died while its parent lives")
	}
	if err := os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(through.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute) // until killed
	t.Fatal("the parent was not killed")
}

// waitForPid reads the pid the parent records at path, unless the parent
// exits first.
func waitForPid(t *testing.T, path string, exited <-chan error) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(string(b)); err == nil {
			return pid
		}
		select {
		case err := <-exited:
			t.Fatalf("the parent exited (%v) before it recorded its child", err)
		default:
		}
	}
	t.Fatal("the parent recorded no child")
	return 0
}

// eventuallyGone waits up to 10 s for pid to be gone.
func eventuallyGone(pid int) bool {
	for range 500 {
		if gone(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// gone reports whether pid has exited (a zombie waiting to be reaped
// counts).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}
