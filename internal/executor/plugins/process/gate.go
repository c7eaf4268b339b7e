package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// An attempt's record must be stored before its command runs: a server
// killed in between would leave nothing saying that it may have run, and
// the next server would run it again. Yet the record and RUNNING go in
// one status write. So the command's shim starts held (starter.go): in
// the attempt's process group and cgroup, with its parent-death signal,
// it waits on its stdin, a pipe whose other end the server keeps, before
// it runs anything. The round that starts it reports RUNNING with the
// record (marker, pid and start time), which the executor stores; the
// next round finds the record stored (what a round reads is what the
// control plane holds) and opens the gate. A shim that reads anything
// but the word, or the pipe's end (the server died, or shut the gate),
// exits without running the command.

// gateWord lets a held shim run its command.
const gateWord = "run"

// gate is the server's end of a held shim's stdin.
type gate struct {
	mu   sync.Mutex
	r, w *os.File // r until the shim started; w until opened or shut
}

// holdOn makes cmd start held behind a new gate.
func holdOn(cmd *exec.Cmd) (*gate, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	cmd.Stdin = r
	return &gate{r: r, w: w}, nil
}

// started drops the server's copy of the read end: the shim has its own,
// and the pipe ends for it when the write end goes.
func (g *gate) started() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.r
	g.r = nil
	if r == nil {
		return nil
	}
	if err := r.Close(); err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	return nil
}

// held reports whether the gate is still shut on a shim waiting at it.
func (g *gate) held() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.w != nil
}

// open lets the command run. It fails if the shim is gone.
func (g *gate) open() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return errors.New("the gate was shut")
	}
	_, err := io.WriteString(g.w, gateWord+"\n")
	err = errors.Join(err, g.w.Close())
	g.w = nil
	if err != nil {
		return fmt.Errorf("open the gate: %w", err)
	}
	return nil
}

// shut makes a shim still waiting exit without running its command; one
// that runs it is not concerned.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range []*os.File{g.r, g.w} {
		if f != nil {
			_ = f.Close() // a pipe end: nothing was written to it that a close could lose
		}
	}
	g.r, g.w = nil, nil
}
