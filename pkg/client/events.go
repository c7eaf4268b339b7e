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
	var ev Event
	var data bytes.Buffer
	hasData := false
	for {
		line, err := er.r.ReadString('\n')
		if err != nil {
			return Event{}, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !hasData {
				if ev.Retry > 0 {
					return ev, nil
				}
				ev = Event{} // no data: nothing to dispatch
				continue
			}
			ev.Data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
			if ev.Type == "" {
				ev.Type = "message"
			}
			ev.LastEventID = er.lastID
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			return Event{Comment: strings.TrimSpace(line[1:])}, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				ev.ID, ev.HasID = value, true
				er.lastID = value
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil {
				ev.Retry = n
			}
		}
	}
}
