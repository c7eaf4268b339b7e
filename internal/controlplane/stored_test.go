package controlplane

import (
	"context"
	"fmt"
	"testing"

	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// Stored reads every object under its resource's prefix, and nothing
// outside it, at one revision, whatever the count's place against its
// pages: a page short, exactly full, or spilling by one. A write after the
// read began is not in it.
func TestStoredReadsEveryObjectAtOneRevision(t *testing.T) {
	kv := v3client.New(shared.embedded.etcd.Server)
	defer kv.Close()
	ctx := context.Background()
	// A neighbouring resource whose name extends this one's: the prefix
	// ends with "/", so it is not read.
	if _, err := kv.Put(ctx, storedPrefix+"stored.test/things-other/ns/x", "{}"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, storedPage - 1, storedPage, storedPage + 1, 2*storedPage + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			resource := fmt.Sprintf("things%d", n)
			for i := range n {
				if _, err := kv.Put(ctx, fmt.Sprintf("%sstored.test/%s/ns/o%05d", storedPrefix, resource, i), fmt.Sprintf(`{"i":%d}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			read := shared.StoredObjects("stored.test", resource)
			var got []StoredObject
			pages := 0
			rev, err := read(ctx, func(page []StoredObject) error {
				pages++
				if pages == 1 && n > 0 {
					// Written after the read's revision was taken.
					if _, err := kv.Put(ctx, fmt.Sprintf("%sstored.test/%s/ns/zzz", storedPrefix, resource), `{"late":true}`); err != nil {
						t.Fatal(err)
					}
				}
				got = append(got, page...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("read %d objects in %d pages, want %d", len(got), pages, n)
			}
			for i, o := range got {
				if want := fmt.Sprintf(`{"i":%d}`, i); string(o.Value) != want {
					t.Fatalf("object %d is %s, want %s", i, o.Value, want)
				}
				if o.ModRevision <= 0 || o.ModRevision > rev {
					t.Fatalf("object %d modified at %d, after the read's revision %d", i, o.ModRevision, rev)
				}
			}
		})
	}
}
