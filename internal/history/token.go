package history

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// ErrBadToken: a continue token this server did not make.
var ErrBadToken = errors.New("invalid continue token")

// A continue token is the key of the last item of a page, opaque to
// clients: base64url of {"t": unix nanos, "n": name}. Keyset paging, not
// offsets, so that runs arriving between two pages neither shift an item
// into the next page twice nor out of it.
type token struct {
	T int64  `json:"t"`
	N string `json:"n"`
}

func encodeToken(t time.Time, name string) string {
	b, _ := json.Marshal(token{nanos(t), name})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var t token
	if err != nil || json.Unmarshal(b, &t) != nil || t.N == "" {
		return time.Time{}, "", ErrBadToken
	}
	return fromNanos(t.T), t.N, nil
}

// Token is the continue token of a page ending at k.
func (k ActionKey) Token() string { return encodeToken(k.CreatedAt, k.Name) }

// ParseActionKey reads a token made by ActionKey.Token.
func ParseActionKey(s string) (*ActionKey, error) {
	t, n, err := decodeToken(s)
	if err != nil {
		return nil, err
	}
	return &ActionKey{t, n}, nil
}

// Token is the continue token of a page ending at k.
func (k RunKey) Token() string { return encodeToken(k.StartedAt, k.Run) }

// ParseRunKey reads a token made by RunKey.Token.
func ParseRunKey(s string) (*RunKey, error) {
	t, n, err := decodeToken(s)
	if err != nil {
		return nil, err
	}
	return &RunKey{t, n}, nil
}

// Key is the position of a run in lists.
func (r Run) Key() RunKey { return RunKey{r.StartedAt, r.ID.Run} }

// Key is the position of an action in lists.
func (a Action) Key() ActionKey { return ActionKey{a.CreatedAt, a.Name} }
