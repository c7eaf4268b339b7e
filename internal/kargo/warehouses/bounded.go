package warehouses

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// boundedClient is a copy of client whose responses' bodies, all
// together, end in errChartResponseTooLarge past maxChartResponseBytes.
// One budget for all of them: an OCI listing is several requests (a
// ping, a token, pages of tags), and none is allowed to be endless.
func boundedClient(client *http.Client) *http.Client {
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *client
	c.Transport = newBoundedTransport(base, maxChartResponseBytes, errChartResponseTooLarge)
	return &c
}

// newBoundedTransport is base with one budget of limit bytes for all the
// bodies it reads; past it, reads fail with tooLarge.
func newBoundedTransport(base http.RoundTripper, limit int64, tooLarge error) *boundedTransport {
	t := &boundedTransport{base: base, limit: limit, err: tooLarge}
	t.left.Store(limit)
	return t
}

type boundedTransport struct {
	base  http.RoundTripper
	limit int64
	err   error        // what a read past the limit fails with
	left  atomic.Int64 // bytes still allowed; negative once exceeded
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = &boundedBody{ReadCloser: res.Body, t: t}
	return res, nil
}

type boundedBody struct {
	io.ReadCloser
	t *boundedTransport
}

// Read reads at most one byte more than is allowed: a body of exactly
// the limit ends well, one byte more is an error.
func (b *boundedBody) Read(p []byte) (int, error) {
	left := b.t.left.Load()
	if left < 0 {
		return 0, b.t.tooLarge()
	}
	if int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.t.left.Add(-int64(n)) < 0 {
		return 0, b.t.tooLarge()
	}
	return n, err
}

func (t *boundedTransport) tooLarge() error {
	return fmt.Errorf("%w: more than %d bytes", t.err, t.limit)
}
