package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The event streams of the API (the operations tagged `streams`), typed.
// oapi-codegen's client reads a whole response before it returns, which a
// live stream never ends, so api/oapi-client.yaml leaves these operations
// out of client.gen.go and they are here: each opens its stream and
// returns at once, and Next decodes one event at a time into the
// document's types (x-sse-events of its ...StreamData schema says which
// type each event name carries).
//
//	s, err := c.StreamRunEvents(ctx, "demo", "dev", "r1", nil)
//	if err != nil { ... }
//	defer s.Close()
//	for {
//		e, err := s.Next() // io.EOF when the server ends the stream
//		if err != nil { ... }
//		switch e.Type {
//		case "action": fmt.Println(e.Item.ActionId.Name, e.Item.Phase)
//		case "synced": // live from here on
//		case "reset":  // drop what you have: a snapshot follows
//		}
//	}
//
// Reconnecting is the caller's: open the stream again with
// StreamOptions{LastEventID: s.LastEventID()}.

// StreamOptions are what every stream takes.
type StreamOptions struct {
	// LastEventID resumes after this event id (sent as Last-Event-ID).
	LastEventID string
}

// RunStreamOptions choose what StreamRunEvents sends: with Phase or Q set,
// only the actions that match (see the document's streamRunEvents), and an
// action once more when it stops matching, for the caller to drop.
type RunStreamOptions struct {
	StreamOptions
	// Phase keeps the actions in one of these phases.
	Phase []Phase
	// Q keeps the actions whose name or short name holds it, in any case.
	Q string
	// Window, when above 0, cuts the snapshot to the first Window actions
	// (a first view of a large run); the synced event's Continue then
	// pages on with ListRunActions.
	Window int
}

// LogStreamOptions choose the log of StreamActionLogs.
type LogStreamOptions struct {
	StreamOptions
	// Attempt is the attempt (from 1); 0 is the action's latest.
	Attempt int
	// Stream is stdout (the default) or stderr.
	Stream LogStream
}

// StreamEvent is one event of a stream of Ts (actions, runs, projects,
// Stages, Promotions). Type is the event's name: the stream's own
// ("action", "run", "project", "stage", "promotion"), with Item set, or
// "synced" or "reset", with Synced or Reset set.
type StreamEvent[T any] struct {
	ID     string
	Type   string
	Item   *T
	Synced *SyncedEvent
	Reset  *ResetEvent
}

// LogStreamEvent is one event of a log stream: "log" (Log set; ID is the
// byte offset after its text), "eof" (EOF set; the stream ends after it)
// or "reset" (Reset set).
type LogStreamEvent struct {
	ID    string
	Type  string
	Log   *LogText
	EOF   *LogEOF
	Reset *ResetEvent
}

// StreamError is a stream the server did not open: its status and, when
// it sent one, its problem document.
type StreamError struct {
	StatusCode int
	Problem    *Problem
}

func (e *StreamError) Error() string {
	if e.Problem != nil && e.Problem.Detail != nil {
		return fmt.Sprintf("stream: HTTP %d: %s", e.StatusCode, *e.Problem.Detail)
	}
	return fmt.Sprintf("stream: HTTP %d", e.StatusCode)
}

// Stream is an open event stream whose events are Es.
type Stream[E any] struct {
	resp   *http.Response
	events *EventReader
	decode func(Event) (E, error)
}

// Next returns the next event, skipping comments (heartbeats). It returns
// io.EOF when the server ends the stream.
func (s *Stream[E]) Next() (E, error) {
	for {
		ev, err := s.events.Next()
		if err != nil {
			var zero E
			return zero, err
		}
		if ev.Comment != "" || ev.Data == nil {
			continue
		}
		return s.decode(ev)
	}
}

// LastEventID is the id of the last event read: the StreamOptions'
// LastEventID of a reconnect.
func (s *Stream[E]) LastEventID() string { return s.events.LastEventID() }

// Response is the stream's response (its body is the stream).
func (s *Stream[E]) Response() *http.Response { return s.resp }

// Close ends the stream.
func (s *Stream[E]) Close() error { return s.resp.Body.Close() }

// decodeItem decodes an event of a stream of Ts whose own events are
// named item.
func decodeItem[T any](item string) func(Event) (StreamEvent[T], error) {
	return func(ev Event) (StreamEvent[T], error) {
		e := StreamEvent[T]{ID: ev.ID, Type: ev.Type}
		var err error
		switch ev.Type {
		case item:
			e.Item, err = decodeData[T](ev)
		case "synced":
			e.Synced, err = decodeData[SyncedEvent](ev)
		case "reset":
			e.Reset, err = decodeData[ResetEvent](ev)
		default:
			err = fmt.Errorf("stream: an event named %q, which the document does not have", ev.Type)
		}
		return e, err
	}
}

func decodeLog(ev Event) (LogStreamEvent, error) {
	e := LogStreamEvent{ID: ev.ID, Type: ev.Type}
	var err error
	switch ev.Type {
	case "log":
		e.Log, err = decodeData[LogText](ev)
	case "eof":
		e.EOF, err = decodeData[LogEOF](ev)
	case "reset":
		e.Reset, err = decodeData[ResetEvent](ev)
	default:
		err = fmt.Errorf("stream: an event named %q, which the document does not have", ev.Type)
	}
	return e, err
}

func decodeData[T any](ev Event) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return nil, fmt.Errorf("stream: the data of %q event %q: %w", ev.Type, ev.ID, err)
	}
	return v, nil
}

// openStream opens the stream at path (under the client's server) and
// checks that it is one.
func openStream[E any](ctx context.Context, c *Client, path string, query url.Values, opts *StreamOptions, decode func(Event) (E, error), editors []RequestEditorFn) (*Stream[E], error) {
	base, err := url.Parse(c.Server)
	if err != nil {
		return nil, err
	}
	u, err := base.Parse("./" + path)
	if err != nil {
		return nil, err
	}
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if opts != nil && opts.LastEventID != "" {
		req.Header.Set("Last-Event-ID", opts.LastEventID)
	}
	for _, edit := range append(append([]RequestEditorFn{}, c.RequestEditors...), editors...) {
		if err := edit(ctx, req); err != nil {
			return nil, err
		}
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		serr := &StreamError{StatusCode: resp.StatusCode}
		if strings.Contains(resp.Header.Get("Content-Type"), "json") {
			var p Problem
			if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&p) == nil {
				serr.Problem = &p
			}
		}
		return nil, serr
	}
	return &Stream[E]{resp: resp, events: NewEventReader(resp.Body), decode: decode}, nil
}

// segments joins path segments, each escaped.
func segments(parts ...string) string {
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// StreamProjects streams the projects and domains the caller may read
// (streamProjects).
func (c *Client) StreamProjects(ctx context.Context, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ProjectDomain]], error) {
	return openStream(ctx, c, "project-events", nil, opts, decodeItem[ProjectDomain]("project"), reqEditors)
}

// StreamRunSummaries streams the run summaries of a project and domain
// (streamRunSummaries).
func (c *Client) StreamRunSummaries(ctx context.Context, project, domain string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[RunEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "domains", domain, "events"), nil, opts, decodeItem[RunEvent]("run"), reqEditors)
}

// StreamRunEvents streams every action of a run (streamRunEvents).
func (c *Client) StreamRunEvents(ctx context.Context, project, domain, run string, opts *RunStreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ActionEvent]], error) {
	q := url.Values{}
	var so *StreamOptions
	if opts != nil {
		so = &opts.StreamOptions
		for _, p := range opts.Phase {
			q.Add("phase", string(p))
		}
		if opts.Q != "" {
			q.Set("q", opts.Q)
		}
		if opts.Window > 0 {
			q.Set("window", strconv.Itoa(opts.Window))
		}
	}
	return openStream(ctx, c, segments("projects", project, "domains", domain, "runs", run, "events"), q, so, decodeItem[ActionEvent]("action"), reqEditors)
}

// StreamActionEvents streams an action and its direct children
// (streamActionEvents).
func (c *Client) StreamActionEvents(ctx context.Context, project, domain, run, action string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ActionEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "domains", domain, "runs", run, "actions", action, "events"), nil, opts, decodeItem[ActionEvent]("action"), reqEditors)
}

// StreamActionLogs streams the log of an attempt (streamActionLogs); it
// ends after its "eof" event.
func (c *Client) StreamActionLogs(ctx context.Context, project, domain, run, action string, opts *LogStreamOptions, reqEditors ...RequestEditorFn) (*Stream[LogStreamEvent], error) {
	q := url.Values{}
	var so *StreamOptions
	if opts != nil {
		so = &opts.StreamOptions
		if opts.Attempt != 0 {
			q.Set("attempt", strconv.Itoa(opts.Attempt))
		}
		if opts.Stream != "" {
			q.Set("stream", string(opts.Stream))
		}
	}
	return openStream(ctx, c, segments("projects", project, "domains", domain, "runs", run, "actions", action, "logs", "events"), q, so, decodeLog, reqEditors)
}

// StreamProjectStages streams every Stage of a project
// (streamProjectStages).
func (c *Client) StreamProjectStages(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[StageEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "stage-events"), nil, opts, decodeItem[StageEvent]("stage"), reqEditors)
}

// StreamStage streams one Stage (streamStage).
func (c *Client) StreamStage(ctx context.Context, project, stage string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[StageEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "stages", stage, "events"), nil, opts, decodeItem[StageEvent]("stage"), reqEditors)
}

// StreamProjectWarehouses streams every Warehouse of a project
// (streamProjectWarehouses).
func (c *Client) StreamProjectWarehouses(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[WarehouseEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "warehouse-events"), nil, opts, decodeItem[WarehouseEvent]("warehouse"), reqEditors)
}

// StreamProjectPromotions streams every Promotion of a project
// (streamProjectPromotions).
func (c *Client) StreamProjectPromotions(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[PromotionEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "promotion-events"), nil, opts, decodeItem[PromotionEvent]("promotion"), reqEditors)
}

// StreamStagePromotions streams the Promotions of a Stage
// (streamStagePromotions).
func (c *Client) StreamStagePromotions(ctx context.Context, project, stage string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[PromotionEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "stages", stage, "promotions", "events"), nil, opts, decodeItem[PromotionEvent]("promotion"), reqEditors)
}

// StreamProjectAnalysisRuns streams every AnalysisRun of a project
// (streamProjectAnalysisRuns).
func (c *Client) StreamProjectAnalysisRuns(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[AnalysisRunEvent]], error) {
	return openStream(ctx, c, segments("projects", project, "analysis-run-events"), nil, opts, decodeItem[AnalysisRunEvent]("analysisrun"), reqEditors)
}

// errNotClient: a ClientWithResponses over another ClientInterface than
// *Client cannot open streams.
var errNotClient = errors.New("stream: this ClientWithResponses does not wrap a *Client")

// core is the *Client under c.
func (c *ClientWithResponses) core() (*Client, error) {
	if cc, ok := c.ClientInterface.(*Client); ok {
		return cc, nil
	}
	return nil, errNotClient
}

// The streams through a ClientWithResponses, as through its Client.

// StreamProjects is Client.StreamProjects.
func (c *ClientWithResponses) StreamProjects(ctx context.Context, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ProjectDomain]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamProjects(ctx, opts, reqEditors...)
}

// StreamRunSummaries is Client.StreamRunSummaries.
func (c *ClientWithResponses) StreamRunSummaries(ctx context.Context, project, domain string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[RunEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamRunSummaries(ctx, project, domain, opts, reqEditors...)
}

// StreamRunEvents is Client.StreamRunEvents.
func (c *ClientWithResponses) StreamRunEvents(ctx context.Context, project, domain, run string, opts *RunStreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ActionEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamRunEvents(ctx, project, domain, run, opts, reqEditors...)
}

// StreamActionEvents is Client.StreamActionEvents.
func (c *ClientWithResponses) StreamActionEvents(ctx context.Context, project, domain, run, action string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[ActionEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamActionEvents(ctx, project, domain, run, action, opts, reqEditors...)
}

// StreamActionLogs is Client.StreamActionLogs.
func (c *ClientWithResponses) StreamActionLogs(ctx context.Context, project, domain, run, action string, opts *LogStreamOptions, reqEditors ...RequestEditorFn) (*Stream[LogStreamEvent], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamActionLogs(ctx, project, domain, run, action, opts, reqEditors...)
}

// StreamProjectStages is Client.StreamProjectStages.
func (c *ClientWithResponses) StreamProjectStages(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[StageEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamProjectStages(ctx, project, opts, reqEditors...)
}

// StreamStage is Client.StreamStage.
func (c *ClientWithResponses) StreamStage(ctx context.Context, project, stage string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[StageEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamStage(ctx, project, stage, opts, reqEditors...)
}

// StreamProjectWarehouses is Client.StreamProjectWarehouses.
func (c *ClientWithResponses) StreamProjectWarehouses(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[WarehouseEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamProjectWarehouses(ctx, project, opts, reqEditors...)
}

// StreamProjectPromotions is Client.StreamProjectPromotions.
func (c *ClientWithResponses) StreamProjectPromotions(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[PromotionEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamProjectPromotions(ctx, project, opts, reqEditors...)
}

// StreamStagePromotions is Client.StreamStagePromotions.
func (c *ClientWithResponses) StreamStagePromotions(ctx context.Context, project, stage string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[PromotionEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamStagePromotions(ctx, project, stage, opts, reqEditors...)
}

// StreamProjectAnalysisRuns is Client.StreamProjectAnalysisRuns.
func (c *ClientWithResponses) StreamProjectAnalysisRuns(ctx context.Context, project string, opts *StreamOptions, reqEditors ...RequestEditorFn) (*Stream[StreamEvent[AnalysisRunEvent]], error) {
	cc, err := c.core()
	if err != nil {
		return nil, err
	}
	return cc.StreamProjectAnalysisRuns(ctx, project, opts, reqEditors...)
}
