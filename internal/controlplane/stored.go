package controlplane

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// storedPrefix is where the apiextensions API server keeps custom
// resources in etcd: <prefix>/<group>/<resource>/<namespace>/<name>,
// each as the JSON it stored.
const storedPrefix = "/registry/apiextensions.kubernetes.io/"

// storedPage is how many objects a read of etcd takes at a time.
const storedPage = 1000

// StoredObject is one object as the API server stored it: its JSON,
// without its resourceVersion, which is ModRevision.
type StoredObject struct {
	Value       []byte
	ModRevision int64
}

// Stored reads every object of a custom resource straight from the
// embedded etcd, as the API server stored it, without the API server: a
// page of objects at a time to each, all at one etcd revision, which it
// returns. A
// start reads every live object once, and through the API server that
// costs a decoding with the CRD's schema, an encoding and the client's
// decoding, per object; this is one decoding.
//
// It is nil on a cluster: there etcd is not this process's.
type Stored func(ctx context.Context, each func(page []StoredObject) error) (revision int64, err error)

// StoredObjects is the Stored reader of a group's resource, or nil when
// the control plane is not embedded.
func (c *ControlPlane) StoredObjects(group, resource string) Stored {
	if c.embedded == nil {
		return nil
	}
	e := c.embedded.etcd
	prefix := storedPrefix + group + "/" + resource + "/"
	return func(ctx context.Context, each func([]StoredObject) error) (int64, error) {
		kv := v3client.New(e.Server)
		defer kv.Close()
		end := clientv3.GetPrefixRangeEnd(prefix)
		key, rev := prefix, int64(0)
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(storedPage)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev)) // the pages of one revision
			}
			r, err := kv.Get(ctx, key, opts...)
			if err != nil {
				return 0, fmt.Errorf("read %s from etcd: %w", prefix, err)
			}
			if rev == 0 {
				rev = r.Header.Revision
			}
			page := make([]StoredObject, len(r.Kvs))
			for i, o := range r.Kvs {
				page[i] = StoredObject{Value: o.Value, ModRevision: o.ModRevision}
			}
			if err := each(page); err != nil {
				return 0, err
			}
			if !r.More || len(r.Kvs) == 0 {
				return rev, nil
			}
			key = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
		}
	}
}
