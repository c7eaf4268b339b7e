package controlplane

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A control plane whose etcd dies after start says so on Err, and one
// stopped on purpose says nothing.
func TestErrReportsEtcdDyingAfterStart(t *testing.T) {
	cp, err := Start(t.Context(), Config{DataDir: filepath.Join(t.TempDir(), "data"), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cp.Err():
		t.Fatalf("Err before anything failed: %v", err)
	default:
	}
	cp.embedded.etcd.Server.HardStop()
	select {
	case err := <-cp.Err():
		if !strings.Contains(err.Error(), "etcd") {
			t.Errorf("Err: %v, want etcd named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("etcd stopped and Err said nothing")
	}
	_ = cp.Stop()
}

func TestErrIsQuietOnStop(t *testing.T) {
	cp, err := Start(t.Context(), Config{DataDir: filepath.Join(t.TempDir(), "data"), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	errc := cp.Err()
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("a stop reported %v", err)
	case <-time.After(time.Second):
	}
}
