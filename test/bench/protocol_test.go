package bench

import (
	"crypto/tls"
	"net/http"
	"testing"

	"taskactions/test/testserver"
)

// protocol is how the readers reach a server and the floor: HTTP/1.1 over
// plain TCP, or HTTP/2 over TLS, both serving the same certificate.
type protocol struct {
	name  string
	certs []string // cert and key files; none for HTTP/1.1
	// transport is a new client transport, which trusts the certificate.
	transport func() *http.Transport
}

func http1() protocol {
	return protocol{name: "http1", transport: func() *http.Transport { return &http.Transport{} }}
}

func h2(b *testing.B) protocol {
	cert, key, pool := testserver.SelfSignedCert(b)
	return protocol{name: "h2", certs: []string{cert, key}, transport: func() *http.Transport {
		return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	}}
}

// serverEnv is the environment that makes the server serve p.
func (p protocol) serverEnv() []string {
	if len(p.certs) != 2 {
		return nil
	}
	return []string{tlsEnv + "=" + p.certs[0] + "," + p.certs[1]}
}
