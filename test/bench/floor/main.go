// Command floor is the smallest correct SSE broadcaster in Go's standard
// library, the floor the server's streams are measured against (make
// bench): a POST to /change encodes one event once, and every open GET
// /events stream writes and flushes it. It has no journal, cursor,
// coalescing, cache or routing. A reader too slow for 256 pending events
// is cut off, so memory stays bounded.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"

	"taskactions/test/bench/collect"
)

type broadcaster struct {
	mu      sync.Mutex
	streams map[chan []byte]struct{}
}

func (b *broadcaster) change(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	ev := fmt.Appendf(nil, "event: action\ndata: %s\n\n", data)
	b.mu.Lock()
	for s := range b.streams {
		select {
		case s <- ev:
		default: // too slow: cut off
			delete(b.streams, s)
			close(s)
		}
	}
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (b *broadcaster) events(w http.ResponseWriter, r *http.Request) {
	s := make(chan []byte, 256)
	b.mu.Lock()
	b.streams[s] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		if _, ok := b.streams[s]; ok {
			delete(b.streams, s)
		}
		b.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	if _, err := io.WriteString(w, "event: synced\ndata: {}\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	for {
		select {
		case ev, ok := <-s:
			if !ok {
				return
			}
			if _, err := w.Write(ev); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address")
	cert := flag.String("tls-cert", "", "serve HTTPS (and HTTP/2) with this certificate")
	key := flag.String("tls-key", "", "key of --tls-cert")
	profile := flag.String("cpuprofile", "", "write a CPU profile here until SIGTERM")
	flag.Parse()
	if *profile != "" {
		stop := profileCPU(*profile)
		defer stop()
	}
	b := &broadcaster{streams: map[chan []byte]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /change", b.change)
	mux.HandleFunc("GET /events", b.events)
	srv := &http.Server{Addr: *listen, Handler: mux}
	collect.OnSignal() // for the idle benchmark, as the server does
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { <-term; srv.Close() }()
	var err error
	if *cert != "" {
		err = srv.ListenAndServeTLS(*cert, *key)
	} else {
		err = srv.ListenAndServe()
	}
	if !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func profileCPU(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
