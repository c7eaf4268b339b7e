package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"taskactions/test/testserver"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// The server listens on TCP where it says and nowhere else: the HTTP API
// and the embedded API server's loopback TLS port. etcd, client and raft
// peer, is on unix sockets in the data dir (a TCP peer port let any local
// process crash the server with one raft message).
func TestListensOnlyOnTheAPIAndTheAPIServer(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	p := startServer(t, "--listen", addr, "--data-dir", dataDir)
	waitReady(t, p, addr)

	kc, err := clientcmd.LoadFromFile(filepath.Join(dataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(kc.Clusters["taskactions"].Server)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{addr, u.Host}
	slices.Sort(want)
	got := listening(t, p.cmd.Process.Pid)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the server listens on %v, want exactly %v (the API and the API server)", got, want)
	}
	for _, sock := range []string{"etcd.sock", "etcd-peer.sock"} {
		st, err := os.Stat(filepath.Join(dataDir, sock))
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			t.Errorf("%s: not a unix socket in the data dir (%v)", sock, err)
		}
	}
	if st, err := os.Stat(dataDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, want 0700: its sockets are only as private as it", st.Mode().Perm())
	}
}

// listening returns the local addresses of the process's listening TCP
// sockets (and any UDP socket), from /proc: its socket inodes, matched
// against the kernel's tables.
func listening(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// local_address st ... inode: fields 1, 3 and 9.
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			if strings.HasPrefix(table, "tcp") && fields[3] != "0A" { // LISTEN
				continue
			}
			out = append(out, table[:3]+":"+decodeAddr(t, fields[1]))
		}
		f.Close()
	}
	for i, a := range out {
		if rest, ok := strings.CutPrefix(a, "tcp:"); ok {
			out[i] = rest
		}
	}
	return out
}

// decodeAddr reads /proc/net's hex address:port (IPv4 in host order).
func decodeAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, len(hexIP)/2)
	for i := range raw {
		b, _ := strconv.ParseUint(hexIP[2*i:2*i+2], 16, 8)
		raw[i] = byte(b)
	}
	// Each 32-bit word is little-endian.
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	ip := net.IP(raw)
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
}
