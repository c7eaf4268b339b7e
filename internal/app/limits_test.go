package app

import "testing"

func TestHTTPLimits(t *testing.T) {
	for _, tc := range []struct {
		fds            uint64
		conns, streams int
	}{
		{1024, 640, 600},
		{512, 192, 176},
		{300, 16, 1},
		{0, 16, 1},
		{65536, 57088, 53520},
	} {
		c, s := httpLimits(tc.fds)
		if c != tc.conns || s != tc.streams {
			t.Errorf("httpLimits(%d) = %d, %d; want %d, %d", tc.fds, c, s, tc.conns, tc.streams)
		}
		// Whatever the limit, the descriptors HTTP may take leave the
		// control plane at least 256 (when there are that many at all).
		if tc.fds > 512 && uint64(c)+256 > tc.fds {
			t.Errorf("httpLimits(%d): %d connections leave less than 256 descriptors", tc.fds, c)
		}
		if s >= c {
			t.Errorf("httpLimits(%d): %d streams would take every one of %d connections", tc.fds, s, c)
		}
	}
}
