package bench

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a process under measurement, read from /proc: only its own CPU
// and memory, not its clients'.
type proc struct{ pid int }

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
	addr := freeAddr(b)
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
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	f := &floor{proc: proc{cmd.Process.Pid}, url: scheme + "://" + addr}
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

// freeAddr is a loopback address nothing listens on.
func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their files and a pool that trusts it.
func selfSigned(b *testing.B) (certFile, keyFile string, pool *x509.CertPool) {
	b.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(b, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(b, err)
	cert, err := x509.ParseCertificate(der)
	must(b, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(b, err)
	dir := b.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(b, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	must(b, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
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
