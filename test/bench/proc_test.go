package bench

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"taskactions/test/bench/collect"
	"taskactions/test/testserver"
	"testing"
	"time"
)

// proc is a process under measurement, read from /proc: only its own CPU
// and memory, not its clients'.
type proc struct {
	pid int
	// collected gets a byte each time the process has finished a
	// collection that collect asked for.
	collected *os.File
}

// start starts cmd as a process under measurement, with the write end of
// a pipe as its descriptor 3 for acknowledging collections.
func start(b *testing.B, cmd *exec.Cmd) proc {
	b.Helper()
	r, w, err := os.Pipe()
	must(b, err)
	cmd.ExtraFiles = []*os.File{w}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, collect.DoneFDEnv+"=3")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w.Close()
	b.Cleanup(func() { r.Close() })
	return proc{pid: cmd.Process.Pid, collected: r}
}

// cpuSeconds is the CPU time the process used so far.
func (p proc) cpuSeconds(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	return (utime + stime) / 100              // clock ticks (USER_HZ = 100)
}

// syscalls are the read and write system calls the process made so far,
// and the bytes it wrote (/proc/<pid>/io): a write per delivery is what a
// flush per event costs.
func (p proc) syscalls(b *testing.B) (reads, writes, written float64) {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.pid))
	if err != nil {
		b.Fatal(err)
	}
	counts := numbers(string(raw), ": ")
	return counts["syscr"], counts["syscw"], counts["wchar"]
}

// numbers reads text's "name<sep>value" lines (/proc/<pid>/io, the
// Prometheus text format) into a map of the values that are numbers.
func numbers(text, sep string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		name, value, _ := strings.Cut(line, sep)
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// collect has the process run a garbage collection and return the freed
// memory to the system (SIGUSR1, which the server under measurement and
// the floor both take so), as an idle process's forced collection (every
// two minutes) and the runtime's scavenger do in time. Go shrinks the
// stack of a parked goroutine only in a collection, by half at each. It
// waits for the process to say it is done: with 100,000 streams a
// collection takes seconds, and signals sent while one runs would
// coalesce into one collection.
func (p proc) collect(b *testing.B) {
	b.Helper()
	must(b, syscall.Kill(p.pid, syscall.SIGUSR1))
	must(b, p.collected.SetReadDeadline(time.Now().Add(2*time.Minute)))
	var done [1]byte
	if _, err := p.collected.Read(done[:]); err != nil {
		b.Fatalf("process %d did not finish its collection: %v", p.pid, err)
	}
}

// rssBytes is the process's resident memory.
func (p proc) rssBytes(b *testing.B) float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// floor is the bare broadcaster (./floor) running as its own process.
type floor struct {
	proc
	url string
}

// startFloor builds and starts the floor; with tls (cert and key files)
// it serves HTTPS and HTTP/2.
func startFloor(b *testing.B, tls ...string) *floor {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-o", bin, "./floor")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("building the floor: %v", err)
	}
	addr := testserver.FreeAddr(b)
	args := []string{"-listen", addr}
	if p := os.Getenv("FLOOR_CPUPROFILE"); p != "" {
		args = append(args, "-cpuprofile", p)
	}
	scheme := "http"
	if len(tls) == 2 {
		args = append(args, "-tls-cert", tls[0], "-tls-key", tls[1])
		scheme = "https"
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	p := start(b, cmd)
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	f := &floor{proc: p, url: scheme + "://" + addr}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return f
		}
		if time.Now().After(deadline) {
			b.Fatal("the floor does not listen")
		}
	}
}

// raiseFileLimit raises the open-file limit as far as allowed (to 200,000
// when running as root), for this process and the processes it starts.
func raiseFileLimit(b *testing.B) uint64 {
	var lim syscall.Rlimit
	must(b, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	want := syscall.Rlimit{Cur: 200000, Max: 200000}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		must(b, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want))
	}
	return want.Cur
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		name, text, sep string
		want            map[string]float64
	}{
		{"proc io", "rchar: 10\nsyscr: 3\nsyscw: 4\nwchar: 512\n", ": ", map[string]float64{"rchar": 10, "syscr": 3, "syscw": 4, "wchar": 512}},
		{"metrics", "# HELP go_memstats_heap_inuse_bytes x\n# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes 1.5e+06\n", " ",
			map[string]float64{"go_memstats_heap_inuse_bytes": 1.5e6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := numbers(tc.text, tc.sep); !maps.Equal(got, tc.want) {
				t.Errorf("numbers = %v, want %v", got, tc.want)
			}
		})
	}
}
