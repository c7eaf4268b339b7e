package sandbox

import (
	"encoding/binary"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestUnixSocketFilter runs the filter's program on the calls a task may
// make, in each convention of each architecture: only socket(2) of the
// unix family (and i386's socketcall) is denied.
func TestUnixSocketFilter(t *testing.T) {
	const (
		afInet = unix.AF_INET
		afUnix = unix.AF_UNIX
	)
	tests := []struct {
		name   string
		goarch string
		arch   uint32
		nr     uint32
		arg0   uint32
		denied bool
	}{
		{"x86-64 socket(AF_UNIX)", "amd64", unix.AUDIT_ARCH_X86_64, 41, afUnix, true},
		{"x86-64 socket(AF_INET)", "amd64", unix.AUDIT_ARCH_X86_64, 41, afInet, false},
		{"x32 socket(AF_UNIX)", "amd64", unix.AUDIT_ARCH_X86_64, x32Bit | 41, afUnix, true},
		{"x86-64 read(1)", "amd64", unix.AUDIT_ARCH_X86_64, 0, afUnix, false},
		{"x86-64 socketpair(AF_UNIX)", "amd64", unix.AUDIT_ARCH_X86_64, 53, afUnix, false},
		{"i386 socket(AF_UNIX)", "amd64", unix.AUDIT_ARCH_I386, 359, afUnix, true},
		{"i386 socket(AF_INET)", "amd64", unix.AUDIT_ARCH_I386, 359, afInet, false},
		{"i386 socketcall", "amd64", unix.AUDIT_ARCH_I386, 102, 1, true},
		{"i386 41 is dup", "amd64", unix.AUDIT_ARCH_I386, 41, afUnix, false},
		{"another convention", "amd64", unix.AUDIT_ARCH_AARCH64, 198, afUnix, false},
		{"arm64 socket(AF_UNIX)", "arm64", unix.AUDIT_ARCH_AARCH64, 198, afUnix, true},
		{"arm64 socket(AF_INET)", "arm64", unix.AUDIT_ARCH_AARCH64, 198, afInet, false},
		{"arm64 41 is not socket", "arm64", unix.AUDIT_ARCH_AARCH64, 41, afUnix, false},
		{"arm socket(AF_UNIX)", "arm64", unix.AUDIT_ARCH_ARM, 281, afUnix, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vm, err := bpf.NewVM(unixSocketFilter(rulesByGOARCH[tc.goarch]))
			if err != nil {
				t.Fatal(err)
			}
			// struct seccomp_data as the kernel reads it. bpf.VM loads
			// words big-endian (for packets), so each field is written so.
			data := make([]byte, 64)
			binary.BigEndian.PutUint32(data[offNr:], tc.nr)
			binary.BigEndian.PutUint32(data[offArch:], tc.arch)
			binary.BigEndian.PutUint32(data[offArg0:], tc.arg0)
			ret, err := vm.Run(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := uint32(ret) == retDeny; got != tc.denied || (!got && uint32(ret) != retAllow) {
				t.Errorf("returned %#x, denied %v; want denied %v", ret, got, tc.denied)
			}
		})
	}
}

// connectProbe connects to the unix socket named by its argument and says
// whether it could.
const connectProbe = `use Socket;
socket(S, PF_UNIX, SOCK_STREAM, 0) or do { print "denied: $!\n"; exit 0 };
connect(S, sockaddr_un($ARGV[0])) or do { print "denied: $!\n"; exit 0 };
print "reached\n";`

// A confined task cannot connect to a unix socket outside its dirs, as
// etcd's is in the data dir, though the same probe run unconfined reaches
// it. Here by Landlock or by the seccomp filter, whichever this kernel
// needs (needsUnixFilter).
func TestConfinedTaskReachesNoUnixSocket(t *testing.T) {
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Fatalf("the probe needs perl (Debian's perl-base): %v", err)
	}
	sock := filepath.Join(t.TempDir(), "etcd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	out, err := exec.Command(perl, "-e", connectProbe, sock).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "reached" {
		t.Fatalf("unconfined, the probe says %q (%v); want reached", out, err)
	}

	spec := Spec{Dir: t.TempDir(), Tmp: t.TempDir(), Landlock: LandlockABI() > 0}
	cmd, err := Command(spec, perl, "-e", connectProbe, sock)
	if err != nil {
		t.Fatal(err)
	}
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "denied") {
		t.Fatalf("confined (Landlock ABI %d, filter %v), the probe says %q (%v); want denied",
			LandlockABI(), needsUnixFilter(spec, LandlockABI()), out, err)
	}
	t.Logf("confined (Landlock ABI %d, filter %v): %s", LandlockABI(), needsUnixFilter(spec, LandlockABI()), strings.TrimSpace(string(out)))
}
