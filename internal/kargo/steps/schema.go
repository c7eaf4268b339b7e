package steps

import (
	"embed"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/xeipuuv/gojsonschema"
)

// The config schemas are Kargo v1.6.3's, as they are
// (internal/promotion/runner/builtin/schemas), so a config is accepted or
// refused here as there, with the same messages.
var (
	//go:embed schemas/*.json
	schemaFiles embed.FS

	schemaMu sync.Mutex
	compiled = map[string]*gojsonschema.Schema{}
)

// schemaOf is the compiled schema of a kind (compiled once).
func schemaOf(kind string) (*gojsonschema.Schema, error) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s := compiled[kind]; s != nil {
		return s, nil
	}
	loader := gojsonschema.NewReferenceLoaderFileSystem(fmt.Sprintf("file:///schemas/%s-config.json", kind), http.FS(schemaFiles))
	s, err := gojsonschema.NewSchema(loader)
	if err != nil {
		return nil, err
	}
	compiled[kind] = s
	return s, nil
}

// validate checks a config against the kind's schema, with Kargo's
// messages: "invalid <kind> config: <field>: <what>", one line per error.
func validate(kind string, cfg map[string]any) error {
	s, err := schemaOf(kind)
	if err != nil {
		return fmt.Errorf("could not validate %s config: %w", kind, err)
	}
	res, err := s.Validate(gojsonschema.NewGoLoader(cfg)) // nil: "(root): Invalid type", as in Kargo
	if err != nil {
		return fmt.Errorf("could not validate %s config: %w", kind, err)
	}
	if !res.Valid() {
		errs := make([]error, len(res.Errors()))
		for i, e := range res.Errors() {
			errs[i] = errors.New(e.String())
		}
		return fmt.Errorf("invalid %s config: %w", kind, errors.Join(errs...))
	}
	return nil
}
