package handlers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"taskactions/internal/logs"
	"taskactions/internal/sse"
	"taskactions/internal/taskactions"
)

// logOf resolves the log a request names: the action must exist (live or
// retired) and have the attempt, its latest by default (1 before the
// first starts, whose log is empty).
func (s *Server) logOf(ctx context.Context, id taskactions.ActionID, attempt *int, stream *LogStream) (logs.Key, error) {
	u, err := s.mgr.Action(ctx, id)
	if err != nil {
		return logs.Key{}, err
	}
	latest := max(int(u.Attempts), 1)
	n := latest
	if attempt != nil {
		if *attempt > latest {
			return logs.Key{}, notFound(fmt.Sprintf("attempt %d of action %s (its latest is %d)", *attempt, id, latest))
		}
		n = *attempt
	}
	st := logs.Stdout
	if stream != nil {
		st = logs.Stream(*stream)
	}
	return logs.Key{Project: id.Project, Domain: id.Domain, Run: id.Run, Action: id.Name, Attempt: n, Stream: st}, nil
}

// GetActionLogs serves a log as plain text, with Range.
func (s *Server) GetActionLogs(ctx context.Context, req GetActionLogsRequestObject) (GetActionLogsResponseObject, error) {
	k, err := s.logOf(ctx, actionID(req.Project, req.Domain, req.Run, req.Action), req.Params.Attempt, req.Params.Stream)
	if err != nil {
		return nil, err
	}
	f, err := s.logs.OpenRead(ctx, k)
	if err != nil {
		return nil, err
	}
	return logResponse{r: requestFrom(ctx), f: f, dropped: f.Dropped()}, nil
}

// logResponse serves a log (this replica's file, or the history store's
// copy) through http.ServeContent, which answers Range, If-Range and
// HEAD. A log only grows, so its size is its ETag.
type logResponse struct {
	r       *http.Request
	f       *logs.Reader
	dropped int64
}

func (l logResponse) VisitGetActionLogsResponse(w http.ResponseWriter) error {
	var content io.ReadSeeker = strings.NewReader("")
	if l.f != nil {
		defer l.f.Close()
		content = l.f
	}
	size, err := content.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("ETag", `"`+strconv.FormatInt(size, 10)+`"`)
	if l.dropped > 0 {
		h.Set("Log-Dropped-Bytes", strconv.FormatInt(l.dropped, 10))
	}
	r := l.r
	switch rangeOf(r.Header.Get("Range"), r.Header.Get("If-Range"), h.Get("ETag")) {
	case rangeNone:
	case rangeIgnored:
		r = withoutRange(r)
	case rangeEmpty:
		if size > 0 {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return nil
		}
	}
	if size == 0 {
		// Nothing written yet: the whole (empty) log, not 416 for a
		// tail asked of nothing.
		r = withoutRange(r)
	}
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(readerAt(content), 0, size))
	return nil
}

// What a Range header asks of a log, where Go's ServeContent departs from
// RFC 9110: it refuses a unit it does not know with 416 (the RFC says
// ignore the header), and answers a last-0-bytes suffix (bytes=-0) with a
// 206 whose Content-Range is impossible (the RFC: unsatisfiable, 416).
const (
	rangeNone    = iota // no header, or one ServeContent handles
	rangeIgnored        // not in bytes: serve the whole log
	rangeEmpty          // only zero-length suffixes: 416
)

func rangeOf(h, ifRange, etag string) int {
	if h == "" || ifRange != "" && ifRange != etag {
		return rangeNone // ServeContent serves the whole log for a stale If-Range
	}
	h = strings.TrimSpace(h)
	if len(h) < 6 || !strings.EqualFold(h[:6], "bytes=") {
		return rangeIgnored
	}
	spec := h[6:]
	for _, part := range strings.Split(spec, ",") {
		if p := strings.TrimSpace(part); !strings.HasPrefix(p, "-") || strings.Trim(p[1:], "0") != "" {
			return rangeNone
		}
	}
	return rangeEmpty
}

func withoutRange(r *http.Request) *http.Request {
	r = r.Clone(r.Context())
	r.Header.Del("Range")
	return r
}

func readerAt(rs io.ReadSeeker) io.ReaderAt {
	if ra, ok := rs.(io.ReaderAt); ok {
		return ra
	}
	return strings.NewReader("")
}

// AppendActionLogs appends an outside executor's text to a log: only of
// an action that no built-in plugin runs (the executor writes those
// itself), and only to its current attempt, so that no line is forged into
// an attempt that is over.
func (s *Server) AppendActionLogs(ctx context.Context, req AppendActionLogsRequestObject) (AppendActionLogsResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	u, err := s.mgr.Action(ctx, id)
	if err != nil {
		return nil, err
	}
	current := max(int(u.Attempts), 1)
	switch a := req.Body.Attempt; {
	case s.mgr.RunsBuiltIn(u.TaskType):
		return nil, fmt.Errorf("action %s (task type %q) is run by this server's executor, which writes its logs: none is appended through the API: %w", id, u.TaskType, taskactions.ErrConflict)
	case a > current:
		return nil, notFound(fmt.Sprintf("attempt %d of action %s (its latest is %d)", a, id, current))
	case a < current:
		return nil, fmt.Errorf("attempt %d of action %s is over (it is on attempt %d): only the current attempt's log is appended to: %w", a, id, current, taskactions.ErrConflict)
	}
	st := logs.Stdout
	if req.Body.Stream != nil {
		st = logs.Stream(*req.Body.Stream)
	}
	k := logs.Key{Project: id.Project, Domain: id.Domain, Run: id.Run, Action: id.Name, Attempt: current, Stream: st}
	size, dropped, err := s.logs.Append(ctx, k, []byte(req.Body.Text))
	if err != nil {
		return nil, err
	}
	return AppendActionLogs200JSONResponse{Size: size, Dropped: dropped}, nil
}

// StreamActionLogs follows a log as server-sent events.
func (s *Server) StreamActionLogs(ctx context.Context, req StreamActionLogsRequestObject) (StreamActionLogsResponseObject, error) {
	id := actionID(req.Project, req.Domain, req.Run, req.Action)
	k, err := s.logOf(ctx, id, req.Params.Attempt, req.Params.Stream)
	if err != nil {
		return nil, err
	}
	return logStream{ctx: ctx, s: s, id: id, key: k, cursor: lastEventID(req.Params.LastEventID, req.Params.LastEventId)}, nil
}

type logStream struct {
	ctx    context.Context
	s      *Server
	id     taskactions.ActionID
	key    logs.Key
	cursor string // a byte offset, as the client sent it
}

func (ls logStream) VisitStreamActionLogsResponse(w http.ResponseWriter) error {
	if isHead(ls.ctx) {
		sse.WriteHead(w)
		return nil
	}
	if !ls.s.streams.acquire() {
		w.Header().Set("Retry-After", "5")
		writeProblemCtx(ls.ctx, w, errTooManyStreams)
		return nil
	}
	defer ls.s.streams.release()
	defer ls.s.metrics.StreamOpened(operationFrom(ls.ctx).stream)()
	f, err := ls.s.logs.Follow(ls.ctx, ls.key)
	if err != nil {
		writeProblemCtx(ls.ctx, w, err)
		return nil
	}
	defer f.Close()
	ended, release := ls.s.holdSession(ls.ctx)
	defer release()
	ctx, cancel := context.WithCancel(ls.ctx)
	defer cancel()
	defer context.AfterFunc(ended, cancel)()
	return sse.Tail(ctx, w, ls.cursor, attemptLog{Follower: f, ctx: ctx, mgr: ls.s.mgr, id: ls.id, attempt: ls.key.Attempt}, ls.s.sse)
}

// attemptLog is a log whose end is known from the log store (this
// process wrote it, and is done) or else from the action: it has ended
// once the action is terminal, gone, or on a later attempt.
type attemptLog struct {
	*logs.Follower
	ctx     context.Context
	mgr     *taskactions.Manager
	id      taskactions.ActionID
	attempt int
}

func (l attemptLog) Ended() (bool, int64) {
	if l.Follower.Ended() {
		return true, l.Dropped()
	}
	u, err := l.mgr.Action(l.ctx, l.id)
	if err != nil {
		return l.ctx.Err() == nil, l.Dropped() // deleted: nothing more will come
	}
	return u.Phase.Terminal() || int(u.Attempts) > l.attempt, l.Dropped()
}
