package app

import "testing"

func TestFDBudget(t *testing.T) {
	for _, tc := range []struct {
		fds                   uint64
		conns, streams, procs int
	}{
		{1024, 255, 225, 20},
		{600, 111, 94, 8},
		{512, 80, 64, 6},
		{300, 24, 8, 1},
		{0, 24, 8, 1},
		{65536, 22746, 20070, 1784},
	} {
		c, s, p := fdBudget(tc.fds)
		if c != tc.conns || s != tc.streams || p != tc.procs {
			t.Errorf("fdBudget(%d) = %d, %d, %d; want %d, %d, %d", tc.fds, c, s, p, tc.conns, tc.streams, tc.procs)
		}
		// Whatever the limit, connections, the streams' files and the
		// processes leave the control plane at least 256 descriptors
		// (when there are that many at all).
		if used := uint64(c + s + p*fdsPerProcess); tc.fds > 512 && used+256 > tc.fds {
			t.Errorf("fdBudget(%d): %d descriptors used leave less than 256", tc.fds, used)
		}
		if s >= c {
			t.Errorf("fdBudget(%d): %d streams would take every one of %d connections", tc.fds, s, c)
		}
	}
}
