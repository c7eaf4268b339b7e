package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/api"
)

// Every text/event-stream operation of the document is tagged streams (so
// api/oapi-client.yaml leaves it out of client.gen.go, whose
// ...WithResponse would never return on it) and has its method here, on
// Client and ClientWithResponses; every operation tagged streams is one.
func TestEveryStreamHasItsMethod(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	streams := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			isStream := false
			for _, r := range op.Responses.Map() {
				if r.Value != nil && r.Value.Content.Get("text/event-stream") != nil {
					isStream = true
				}
			}
			tagged := slices.Contains(op.Tags, "streams")
			if isStream != tagged {
				t.Errorf("%s %s (%s): a stream %v, tagged streams %v", method, path, op.OperationID, isStream, tagged)
			}
			name := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:]
			for _, typ := range []reflect.Type{reflect.TypeFor[*Client](), reflect.TypeFor[*ClientWithResponses]()} {
				_, has := typ.MethodByName(name)
				_, hasWithResponse := typ.MethodByName(name + "WithResponse")
				if isStream && (!has || hasWithResponse) {
					t.Errorf("%s: %s has %s %v, %sWithResponse %v", op.OperationID, typ, name, has, name, hasWithResponse)
				}
				if !isStream && !has && !hasWithResponse {
					t.Errorf("%s: %s has no method for it", op.OperationID, typ)
				}
			}
			if isStream {
				streams++
			}
		}
	}
	if streams == 0 {
		t.Fatal("no stream in the document")
	}
}

func TestStreamDecodesEvents(t *testing.T) {
	var gotPath, gotAuth, gotLast string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth, gotLast = r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Last-Event-ID")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: run\nid: 0\ndata: {\"run\":{\"project\":\"p\",\"domain\":\"d\",\"name\":\"r1\"},\"phase\":\"QUEUED\",\"actionCount\":1,\"phaseCounts\":{},\"startedAt\":\"2026-01-02T03:04:05Z\",\"deleted\":false}\n\n")
		fmt.Fprint(w, ": ping\n\n")
		fmt.Fprint(w, "event: synced\nid: 7\ndata: {\"resumed\":false,\"count\":1}\n\n")
		fmt.Fprint(w, "event: reset\nid: 8\ndata: {\"reason\":\"lagged\"}\n\n")
	}))
	defer srv.Close()
	c, err := NewClientWithResponses(srv.URL+"/api/v1", WithBearerToken("t0"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.StreamRunSummaries(context.Background(), "p", "d", &StreamOptions{LastEventID: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if gotPath != "/api/v1/projects/p/domains/d/events" || gotAuth != "Bearer t0" || gotLast != "5" {
		t.Errorf("request: %s, Authorization %q, Last-Event-ID %q", gotPath, gotAuth, gotLast)
	}
	var got []string
	for {
		e, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Item != nil:
			got = append(got, fmt.Sprintf("%s %s %s %s", e.Type, e.ID, e.Item.Run.Name, e.Item.Phase))
		case e.Synced != nil:
			got = append(got, fmt.Sprintf("%s %s %d", e.Type, e.ID, e.Synced.Count))
		case e.Reset != nil:
			got = append(got, fmt.Sprintf("%s %s %s", e.Type, e.ID, e.Reset.Reason))
		}
	}
	want := []string{"run 0 r1 QUEUED", "synced 7 1", "reset 8 lagged"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if s.LastEventID() != "8" {
		t.Errorf("LastEventID %q, want 8", s.LastEventID())
	}
}

func TestStreamRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"type":"about:blank","title":"Forbidden","status":403,"detail":"ci may not read"}`)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL + "/api/v1/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StreamActionLogs(context.Background(), "p", "d", "r", "a", &LogStreamOptions{Attempt: 2, Stream: Stderr})
	var serr *StreamError
	if !errors.As(err, &serr) || serr.StatusCode != http.StatusForbidden || serr.Problem == nil || !strings.Contains(err.Error(), "ci may not read") {
		t.Fatalf("err %v, want the 403 and its problem", err)
	}
}

func TestStreamUnknownEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: surprise\ndata: {}\n\n")
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	s, err := c.StreamProjects(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), `"surprise"`) {
		t.Fatalf("err %v, want one naming the event", err)
	}
}
