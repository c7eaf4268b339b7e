package client

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads events until an error. Empty Data is normalised to nil so
// expectations need not tell an empty slice from an absent one.
func readAll(er *EventReader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := er.Next()
		if err != nil {
			return evs, err
		}
		if len(ev.Data) == 0 {
			ev.Data = nil
		}
		evs = append(evs, ev)
	}
}

// msg builds a dispatched event as the spec describes it.
func msg(typ, data, lastID string) Event {
	ev := Event{Type: typ, LastEventID: lastID}
	if data != "" {
		ev.Data = []byte(data)
	}
	return ev
}

func withID(ev Event, id string) Event {
	ev.ID, ev.HasID = id, true
	return ev
}

func withRetry(ev Event, ms int) Event {
	ev.Retry = ms
	return ev
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []Event
		lastID string // LastEventID() at the end
	}{
		{"empty stream", "", nil, ""},
		{"all fields", "id: 1\nevent: action\ndata: {\"a\":1}\n\n",
			[]Event{withID(msg("action", `{"a":1}`, "1"), "1")}, "1"},
		{"default type", "data: x\n\n", []Event{msg("message", "x", "")}, ""},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []Event{msg("message", "a\nb\n\nc", "")}, ""},
		{"no space after colon", "data:x\n\n", []Event{msg("message", "x", "")}, ""},
		{"only one space stripped", "data:  x \n\n", []Event{msg("message", " x ", "")}, ""},
		{"colon in value", "data: a: b\n\n", []Event{msg("message", "a: b", "")}, ""},
		{"CRLF", "id: 9\r\nevent: run\r\ndata: a\r\ndata: b\r\n\r\n",
			[]Event{withID(msg("run", "a\nb", "9"), "9")}, "9"},
		// A line without a colon is a field with an empty value.
		{"field without colon", "data\n\n", []Event{msg("message", "", "")}, ""},
		{"event without colon", "event: x\nevent\ndata: y\n\n", []Event{msg("message", "y", "")}, ""},
		{"unknown field ignored", "foo: bar\ndata: x\n\n", []Event{msg("message", "x", "")}, ""},
		{"type does not carry over", "event: a\ndata: 1\n\ndata: 2\n\n",
			[]Event{msg("a", "1", ""), msg("message", "2", "")}, ""},
		{"id carries over as LastEventID", "id: 1\ndata: a\n\ndata: b\n\n",
			[]Event{withID(msg("message", "a", "1"), "1"), msg("message", "b", "1")}, "1"},
		// Not dispatched, but the spec still sets the last event ID buffer.
		{"no data: not dispatched, id kept", "id: 7\nevent: x\n\ndata: y\n\n",
			[]Event{msg("message", "y", "7")}, "7"},
		{"empty id resets", "id: 1\ndata: a\n\nid\ndata: b\n\n",
			[]Event{withID(msg("message", "a", "1"), "1"), withID(msg("message", "b", ""), "")}, ""},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
			[]Event{withID(msg("message", "a", "1"), "1"), msg("message", "b", "1")}, "1"},
		{"comment", ": ping\n\n", []Event{{Comment: "ping"}}, ""},
		{"comment between events", "data: a\n\n: ping\n\ndata: b\n\n",
			[]Event{msg("message", "a", ""), {Comment: "ping"}, msg("message", "b", "")}, ""},
		// Comments are ignored lines: they must not cut the event they sit in.
		{"comment inside an event", "id: 5\nevent: action\n: ping\ndata: x\n\n",
			[]Event{{Comment: "ping"}, withID(msg("action", "x", "5"), "5")}, "5"},
		{"retry with data", "retry: 3000\ndata: x\n\n", []Event{withRetry(msg("message", "x", ""), 3000)}, ""},
		{"retry alone is reported", "retry: 500\n\n", []Event{{Retry: 500}}, ""},
		{"retry not a number", "retry: soon\ndata: x\n\n", []Event{msg("message", "x", "")}, ""},
		// The spec takes ASCII digits only: a sign makes the field ignored.
		{"retry negative ignored", "retry: -1\ndata: x\n\n", []Event{msg("message", "x", "")}, ""},
		{"retry with plus ignored", "retry: +5\ndata: x\n\n", []Event{msg("message", "x", "")}, ""},
		// LastEventID is documented as what EventSource would send on reconnect.
		{"retry block keeps LastEventID", "id: 3\nretry: 10\n\n",
			[]Event{withRetry(withID(Event{LastEventID: "3"}, "3"), 10)}, "3"},
		// An unterminated event is dropped at end of stream, per the spec.
		{"unterminated event", "data: x\n", nil, ""},
		{"unterminated line", "data: x", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			er := NewEventReader(strings.NewReader(tt.stream))
			got, err := readAll(er)
			if err != io.EOF {
				t.Errorf("final error = %v, want io.EOF", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events:\n got %s\nwant %s", dump(got), dump(tt.want))
			}
			if er.LastEventID() != tt.lastID {
				t.Errorf("LastEventID() = %q, want %q", er.LastEventID(), tt.lastID)
			}
		})
	}
}

// The reader is fed a chunk at a time, as a network body would be.
func TestEventReaderSmallReads(t *testing.T) {
	stream := "id: 1\nevent: action\ndata: hello\n\n: ping\n\nid: 2\ndata: bye\n\n"
	er := NewEventReader(iotest.OneByteReader(strings.NewReader(stream)))
	got, err := readAll(er)
	want := []Event{withID(msg("action", "hello", "1"), "1"), {Comment: "ping"}, withID(msg("message", "bye", "2"), "2")}
	if err != io.EOF || !reflect.DeepEqual(got, want) {
		t.Errorf("got %s, %v; want %s, EOF", dump(got), err, dump(want))
	}
}

func TestEventReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	er := NewEventReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)))
	got, err := readAll(er)
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
	if want := []Event{msg("message", "a", "")}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %s, want %s", dump(got), dump(want))
	}
}

func dump(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  {ID:%q HasID:%v Last:%q Type:%q Data:%q Comment:%q Retry:%d}",
			e.ID, e.HasID, e.LastEventID, e.Type, e.Data, e.Comment, e.Retry)
	}
	return b.String()
}
