// Package lifecycle runs the parts of the server that run: each is a
// Runnable, started in the order it was added and stopped in reverse, by
// one Group (controller-runtime's manager and etcd's embed are the models).
//
// The Group guarantees:
//   - a part starts only once every part added before it is ready;
//   - a part that fails to start, or a started part that fails while a
//     later one starts, stops the parts already started, in reverse
//     order, and Start returns its error;
//   - after Start, the first part to end on its own (with an error, or
//     with none before it was asked to stop) is reported on Err: a part
//     that dies is never silent;
//   - Stop stops every part, each only after the parts added after it have
//     returned, and returns what they returned.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Runnable is a part of the server that runs. Run brings it up, calls
// ready once it serves what the parts added after it need, then runs until
// ctx ends, when it cleans up and returns nil. Any other return is a
// failure: before ready, of its start; after, of the running server.
type Runnable interface {
	Run(ctx context.Context, ready func()) error
}

// Func is a Runnable of a function.
type Func func(ctx context.Context, ready func()) error

// Run implements Runnable.
func (f Func) Run(ctx context.Context, ready func()) error { return f(ctx, ready) }

// Background is a Runnable that is ready at once and runs run until its
// context ends: a controller whose start needs nothing awaited.
func Background(run func(ctx context.Context) error) Runnable {
	return Func(func(ctx context.Context, ready func()) error {
		ready()
		return run(ctx)
	})
}

// Group starts and stops Runnables. Add every part, then Start once and
// Stop once.
type Group struct {
	parts []*part
	errc  chan error // the first failure after start
	once  sync.Once  // guards errc, failed and first
	// failed is closed at the first failure, first holds it: a part that
	// dies while a later one starts fails the start.
	failed chan struct{}
	first  error
	mu     sync.Mutex
	// stopping is set once Stop began: parts that end then are stopping,
	// not failing.
	stopping bool
}

type part struct {
	name   string
	r      Runnable
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what Run returned, once done
	// named: err was named by Start already (the part failed to start,
	// or failed first while a later part started).
	named bool
}

// NewGroup returns an empty Group.
func NewGroup() *Group { return &Group{errc: make(chan error, 1), failed: make(chan struct{})} }

// Add appends a part, named for errors and logs. Not after Start.
func (g *Group) Add(name string, r Runnable) {
	g.parts = append(g.parts, &part{name: name, r: r})
}

// Start starts the parts in order. ctx bounds the start: when it ends
// first, the parts started are stopped and Start returns its cause. The
// parts run with ctx's values (a Lease's fence, a trace), but not its
// end: the group stops them, in reverse order.
func (g *Group) Start(ctx context.Context) error {
	for i, p := range g.parts {
		if err := g.start(ctx, p); err != nil {
			return errors.Join(err, g.stop(g.parts[:i+1], true))
		}
	}
	return nil
}

// start runs one part and waits until it is ready, fails, or ctx ends.
func (g *Group) start(ctx context.Context, p *part) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	ready := make(chan struct{})
	var readyOnce sync.Once
	go func() {
		defer close(p.done)
		p.err = p.r.Run(runCtx, func() { readyOnce.Do(func() { close(ready) }) })
		g.ended(p)
	}()
	select {
	case <-ready:
		return nil
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s: ended while starting", p.name)
		}
		p.named = true
		return fmt.Errorf("%s: %w", p.name, p.err)
	case <-g.failed:
		return g.first
	case <-ctx.Done():
		return fmt.Errorf("%s: start: %w", p.name, context.Cause(ctx))
	}
}

// ended reports a part that returned while the group was not stopping.
func (g *Group) ended(p *part) {
	g.mu.Lock()
	stopping := g.stopping
	g.mu.Unlock()
	if stopping {
		return
	}
	err := p.err
	if err == nil {
		err = errors.New("ended on its own")
	}
	g.once.Do(func() {
		p.named = true
		g.first = fmt.Errorf("%s: %w", p.name, err)
		g.errc <- g.first
		close(g.failed)
	})
}

// Err delivers the first failure of a part after Start (at most one):
// the owner stops the server then.
func (g *Group) Err() <-chan error { return g.errc }

// Run makes the Group a Runnable, so that parts started together (the
// Kargo controllers) are one part of a larger group: it is ready once
// every part is, and returns when ctx ends or a part fails, having
// stopped them all.
func (g *Group) Run(ctx context.Context, ready func()) error {
	if err := g.Start(ctx); err != nil {
		return err
	}
	ready()
	select {
	case <-ctx.Done():
	case <-g.Err():
	}
	return g.Stop()
}

// Stop stops every started part in reverse order and returns the errors
// they returned (a part's failure reported on Err included).
func (g *Group) Stop() error { return g.stop(g.parts, false) }

// stop stops parts in reverse order; starting leaves out the failures
// Start names itself.
func (g *Group) stop(parts []*part, starting bool) error {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if p.done == nil {
			continue // never started
		}
		p.cancel()
		<-p.done
		if p.err != nil && !(starting && p.named) {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, p.err))
		}
	}
	return errors.Join(errs...)
}

// Service is a Runnable of a part that has a Start and a Stop: Start
// brings it up (ready when it returns), Stop takes it down when its
// context ends. A nil stop has nothing to stop.
func Service(start func(context.Context) error, stop func() error) Runnable {
	return Func(func(ctx context.Context, ready func()) error {
		if err := start(ctx); err != nil {
			return err
		}
		ready()
		<-ctx.Done()
		if stop == nil {
			return nil
		}
		return stop()
	})
}
