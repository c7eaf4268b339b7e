package client

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// WithBearerToken makes every request of the client carry
// "Authorization: Bearer <token>": a token of the server's tokens file, the
// admin token in <data-dir>/api-token, or TASKACTIONS_TOKEN inside a task.
func WithBearerToken(token string) ClientOption {
	return WithRequestEditorFn(BearerToken(token))
}

// BearerToken is the request editor behind WithBearerToken, for requests
// made by hand (a stream read with NewEventReader).
func BearerToken(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

// ReadTokenFile reads a token from a file such as <data-dir>/api-token.
func ReadTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("read token: %s is empty", path)
	}
	return token, nil
}
