package testserver

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	certutil "k8s.io/client-go/util/cert"
)

// FreeAddr is a loopback address with a port free a moment ago, for a
// server started in another process.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// SelfSignedCert writes a certificate for localhost and 127.0.0.1 and its
// key into a temporary dir, and returns their files and a pool that
// trusts the certificate.
func SelfSignedCert(t testing.TB) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}
