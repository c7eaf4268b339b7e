package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

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
// (none when empty).
func writePage[V any](w http.ResponseWriter, status int, items []V, encode func(V) []byte, next string) error {
	var cont []byte
	if next != "" {
		cont, _ = json.Marshal(next)
		cont = append([]byte(`,"continue":`), cont...)
	}
	size := len(`{"items":[]}`) + 1 + len(cont)
	for _, it := range items {
		size += len(encode(it)) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"items":[`)
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(encode(it))
	}
	buf.WriteString("]")
	buf.Write(cont)
	buf.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := buf.WriteTo(w)
	return err
}

func (l actionList) VisitListRunActionsResponse(w http.ResponseWriter) error   { return l.write(w) }
func (l actionList) VisitListChildActionsResponse(w http.ResponseWriter) error { return l.write(w) }
