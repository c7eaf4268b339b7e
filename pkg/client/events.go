package client

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
)

// Event is one server-sent event, or a comment line (": ping").
type Event struct {
	// ID is the event's id field; HasID tells an absent id from an empty
	// one. LastEventID is what EventSource would send on reconnect.
	ID          string
	HasID       bool
	LastEventID string
	Type        string // "action", "run", "synced", "reset"
	Data        []byte
	Comment     string // set (and nothing else) for a comment
	Retry       int    // a retry hint in milliseconds, when the block had one
}

// EventReader parses a text/event-stream as a browser's EventSource does
// (https://html.spec.whatwg.org/multipage/server-sent-events.html), and
// also reports comments, so callers can see heartbeats.
type EventReader struct {
	r      *bufio.Reader
	lastID string

	// The event being read, kept across calls so that a comment in the
	// middle of it can be returned without losing it.
	ev      Event
	data    bytes.Buffer
	hasData bool
}

// NewEventReader reads events from r (a response body).
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// LastEventID is the id of the last event read: what to send as
// Last-Event-ID when reconnecting.
func (er *EventReader) LastEventID() string { return er.lastID }

// Next returns the next event or comment. io.EOF means the stream ended.
func (er *EventReader) Next() (Event, error) {
	for {
		line, err := er.r.ReadString('\n')
		if err != nil {
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			ev, ok := er.dispatch()
			if ok {
				return ev, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			return Event{Comment: strings.TrimSpace(line[1:])}, nil
		}
		er.field(line)
	}
}

// dispatch ends the event at a blank line. Without data there is nothing
// to dispatch, except a retry hint.
func (er *EventReader) dispatch() (Event, bool) {
	ev := er.ev
	ev.LastEventID = er.lastID
	ok := er.hasData || ev.Retry > 0
	if er.hasData {
		ev.Data = bytes.TrimSuffix(bytes.Clone(er.data.Bytes()), []byte("\n"))
		if ev.Type == "" {
			ev.Type = "message"
		}
	}
	er.ev, er.hasData = Event{}, false
	er.data.Reset()
	return ev, ok
}

func (er *EventReader) field(line string) {
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "event":
		er.ev.Type = value
	case "data":
		er.data.WriteString(value)
		er.data.WriteByte('\n')
		er.hasData = true
	case "id":
		if !strings.Contains(value, "\x00") {
			er.ev.ID, er.ev.HasID = value, true
			er.lastID = value
		}
	case "retry":
		// Only ASCII digits; anything else is ignored.
		if value != "" && strings.Trim(value, "0123456789") == "" {
			er.ev.Retry, _ = strconv.Atoi(value)
		}
	}
}
