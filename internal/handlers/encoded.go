package handlers

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"taskactions/internal/taskactions"
)

// Actions are encoded once per update: the manager keeps each action's
// latest update, and the update memoizes its encodings. Lists and stream
// snapshots of unchanged actions then only copy bytes, which is most of
// the work saved for a run of thousands of actions.

// actionJSON is the API view (schema Action) of an update, encoded once.
func actionJSON(u *taskactions.ActionUpdate) []byte {
	return u.JSON.Bytes(func() []byte {
		b, _ := json.Marshal(actionOf(&u.Action))
		return b
	})
}

// WarmAction makes an update's list encoding ahead of any read (the
// manager's Warm).
func WarmAction(u *taskactions.ActionUpdate) { actionJSON(u) }

// encodeActionEvent is the data of an `action` stream event: the action
// view plus `deleted`, encoded once per update however many streams carry
// it.
func encodeActionEvent(u *taskactions.ActionUpdate) []byte {
	return u.Wire.Bytes(func() []byte { return withDeleted(actionJSON(u), u.Deleted) })
}

// withDeleted is an encoded object with the field `deleted` added: the
// data of a stream event, made from the object's encoding without
// encoding it again.
func withDeleted(obj []byte, deleted bool) []byte {
	b := slices.Clip(obj)
	return append(append(b[:len(b)-1], `,"deleted":`...), strconv.FormatBool(deleted)+"}"...)
}

// actionList is a 200 response of schema ActionList, written from the
// actions' memoized encodings.
type actionList taskactions.ActionPage

func (l actionList) write(w http.ResponseWriter) error {
	return writePage(w, http.StatusOK, l.Items, actionJSON, l.Continue)
}

// actionJSONResponse is a 200 response of schema Action, from the
// action's memoized encoding: the same bytes, live or retired.
type actionJSONResponse struct{ u *taskactions.ActionUpdate }

func (r actionJSONResponse) VisitGetActionResponse(w http.ResponseWriter) error {
	b := actionJSON(r.u)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(append(b[:len(b):len(b)], '\n'))
	return err
}

// writeItems writes a 200 response {"items":[...]} from the items'
// memoized encodings: one buffer of the exact size, no re-encoding.
func writeItems[V any](w http.ResponseWriter, items []V, encode func(V) []byte) error {
	return writeItemsStatus(w, http.StatusOK, items, encode)
}

// writeItemsStatus is writeItems with another status (201 for created).
func writeItemsStatus[V any](w http.ResponseWriter, status int, items []V, encode func(V) []byte) error {
	return writePage(w, status, items, encode, "")
}

// writePage is writeItemsStatus with the continue token of the next page
// (none when empty). The body goes out in chunks of a pooled buffer: a page
// of 10,000 actions is some 6 MB, which a buffer of its own would allocate
// (and the collector clear) on every request. A page that fits one chunk
// has a Content-Length; a bigger one is sent as it is made (chunked), in
// one pass over the items, which are scattered in memory.
func writePage[V any](w http.ResponseWriter, status int, items []V, encode func(V) []byte, next string) error {
	w.Header().Set("Content-Type", "application/json")
	c := newChunker(w, status)
	defer c.release()
	c.write([]byte(`{"items":[`))
	for i, it := range items {
		if i > 0 {
			c.write([]byte{','})
		}
		c.write(encode(it))
	}
	c.write([]byte("]"))
	if next != "" {
		cont, _ := json.Marshal(next)
		c.write([]byte(`,"continue":`))
		c.write(cont)
	}
	c.write([]byte("}\n"))
	return c.finish()
}

// chunker gathers a response body's small writes into chunks of a pooled
// buffer, and writes the header before the first chunk.
type chunker struct {
	w       http.ResponseWriter
	status  int
	started bool // the header is written
	buf     *[]byte
	err     error
}

const chunkSize = 64 << 10

var chunks = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }}

func newChunker(w http.ResponseWriter, status int) *chunker {
	return &chunker{w: w, status: status, buf: chunks.Get().(*[]byte)}
}

func (c *chunker) write(p []byte) {
	if len(*c.buf)+len(p) > chunkSize {
		c.flush()
	}
	if len(p) > chunkSize {
		c.start()
		if c.err == nil {
			_, c.err = c.w.Write(p)
		}
		return
	}
	*c.buf = append(*c.buf, p...)
}

func (c *chunker) start() {
	if !c.started {
		c.started = true
		c.w.WriteHeader(c.status)
	}
}

func (c *chunker) flush() {
	c.start()
	if c.err == nil && len(*c.buf) > 0 {
		_, c.err = c.w.Write(*c.buf)
	}
	*c.buf = (*c.buf)[:0]
}

// finish writes what is left; a body that never filled a chunk gets its
// Content-Length.
func (c *chunker) finish() error {
	if !c.started {
		c.w.Header().Set("Content-Length", strconv.Itoa(len(*c.buf)))
	}
	c.flush()
	return c.err
}

func (c *chunker) release() {
	*c.buf = (*c.buf)[:0]
	chunks.Put(c.buf)
}

func (l actionList) VisitListRunActionsResponse(w http.ResponseWriter) error   { return l.write(w) }
func (l actionList) VisitListChildActionsResponse(w http.ResponseWriter) error { return l.write(w) }
