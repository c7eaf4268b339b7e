package process

import (
	"errors"
	"strconv"
	"sync"
	"syscall"
	"time"

	"taskactions/internal/executor/plugins"
)

// Every running command holds descriptors of the server's (pipes, log
// files, a pidfd), so only so many run at once; an attempt past the bound
// waits, still initializing, for a slot. Running out of descriptors or
// memory while starting one is the same wait, never the task's failure.

// slots bounds the commands running at once.
type slots struct {
	mu      sync.Mutex
	max     int // 0: no bound
	used    int
	waiting map[string]func() // attempts to wake when a slot frees
}

// Limit bounds the commands running at once (n <= 0: no bound).
func (p *Plugin) Limit(n int) {
	p.slots.mu.Lock()
	p.slots.max = n
	p.slots.mu.Unlock()
}

// take takes a slot for the attempt k, or registers wake to be called
// when one frees.
func (s *slots) take(k string, wake func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.freeLocked(k, wake) {
		return false
	}
	delete(s.waiting, k)
	s.used++
	return true
}

// free reports whether a slot is free now, registering wake if not.
func (s *slots) free(k string, wake func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freeLocked(k, wake)
}

func (s *slots) freeLocked(k string, wake func()) bool {
	if s.max > 0 && s.used >= s.max {
		if wake != nil {
			if s.waiting == nil {
				s.waiting = map[string]func(){}
			}
			s.waiting[k] = wake
		}
		return false
	}
	return true
}

// give gives a slot back and wakes the attempts waiting for one.
func (s *slots) give() {
	s.mu.Lock()
	s.used--
	woken := s.waiting
	s.waiting = nil
	s.mu.Unlock()
	for _, wake := range woken {
		wake()
	}
}

// forget drops a waiting attempt (aborted or finished).
func (s *slots) forget(k string) {
	s.mu.Lock()
	delete(s.waiting, k)
	s.mu.Unlock()
}

// slotWait is an attempt waiting to start: polled now and then besides
// being woken, in case a wake is lost.
func slotWait(why string) plugins.Transition {
	return plugins.Transition{Phase: plugins.PhaseInitializing, Version: 1, Info: why, RequeueAfter: 5 * time.Second}
}

func (s *slots) full() plugins.Transition {
	s.mu.Lock()
	n := s.max
	s.mu.Unlock()
	return slotWait("waiting for a process slot (" + strconv.Itoa(n) + " running; --max-processes)")
}

// outOfResources reports whether a start failed for want of descriptors,
// processes or memory: the system's condition, which passes.
func outOfResources(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
