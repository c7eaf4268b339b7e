package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The scalars of a YAML body, read as kubectl reads them: its YAML library
// (go-yaml v2, through sigs.k8s.io/yaml) resolves plain scalars by YAML
// 1.1's rules, so these follow that library's resolver. go-yaml v3, which
// parses the body here, would read `on` as a string (YAML 1.2).

type scalarKind int

const (
	stringScalar scalarKind = iota
	nullScalar
	boolScalar
	intScalar // text holds its decimal form
	floatScalar
)

type scalar struct {
	kind  scalarKind
	text  string
	float float64
}

// yaml11Words are the plain scalars YAML 1.1 reads as something else than
// a string.
var yaml11Words = map[string]scalar{}

func init() {
	for _, w := range []struct {
		s    scalar
		list string
	}{
		{scalar{kind: boolScalar, text: "true"}, "y Y yes Yes YES true True TRUE on On ON"},
		{scalar{kind: boolScalar, text: "false"}, "n N no No NO false False FALSE off Off OFF"},
		{scalar{kind: nullScalar}, "~ null Null NULL"},
		{scalar{kind: floatScalar, float: math.NaN()}, ".nan .NaN .NAN"},
		{scalar{kind: floatScalar, float: math.Inf(1)}, ".inf .Inf .INF +.inf +.Inf +.INF"},
		{scalar{kind: floatScalar, float: math.Inf(-1)}, "-.inf -.Inf -.INF"},
	} {
		for _, s := range strings.Fields(w.list) {
			yaml11Words[s] = w.s
		}
	}
	yaml11Words[""] = scalar{kind: nullScalar}
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolvePlain reads an untagged, unquoted scalar.
func resolvePlain(in string) scalar {
	if s, ok := yaml11Words[in]; ok {
		return s
	}
	str := scalar{kind: stringScalar, text: in}
	switch c := in[0]; {
	case c == '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return scalar{kind: floatScalar, float: f}
		}
		return str
	case c != '+' && c != '-' && (c < '0' || c > '9'):
		return str
	}
	plain := strings.ReplaceAll(in, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return scalar{kind: intScalar, text: strconv.FormatInt(i, 10)}
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return scalar{kind: intScalar, text: strconv.FormatUint(u, 10)}
	}
	if yamlStyleFloat.MatchString(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return scalar{kind: floatScalar, float: f}
		}
	}
	if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
		if i, err := strconv.ParseInt("-"+digits, 2, 64); err == nil {
			return scalar{kind: intScalar, text: strconv.FormatInt(i, 10)}
		}
	}
	return str // a timestamp among them: kept as written
}

// typedTags are the tags that say which scalar a value is.
var typedTags = map[string]scalarKind{"!!int": intScalar, "!!float": floatScalar, "!!bool": boolScalar, "!!null": nullScalar}

const quotedStyles = yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle

// resolveScalar reads a scalar node: quoted, a string; with a tag, what
// the tag says it is; plain, by YAML 1.1's rules.
func resolveScalar(n *yaml.Node) (scalar, error) {
	if n.Style&yaml.TaggedStyle == 0 {
		if n.Style&quotedStyles != 0 {
			return scalar{kind: stringScalar, text: n.Value}, nil
		}
		return resolvePlain(n.Value), nil
	}
	switch kind, typed := typedTags[n.Tag]; {
	case n.Tag == "!!str" || n.Tag == "!!timestamp":
		return scalar{kind: stringScalar, text: n.Value}, nil
	case typed:
		s := resolvePlain(n.Value)
		if kind == floatScalar && s.kind == intScalar {
			f, _ := strconv.ParseFloat(s.text, 64)
			return scalar{kind: floatScalar, float: f}, nil
		}
		if s.kind != kind {
			return scalar{}, badRequest{fmt.Errorf("line %d: %q is not a %s", n.Line, n.Value, n.Tag)}
		}
		return s, nil
	}
	return scalar{}, badRequest{fmt.Errorf("line %d: the tag %s has no JSON form", n.Line, n.Tag)}
}

// scalarJSON is a scalar value as JSON.
func scalarJSON(n *yaml.Node) ([]byte, error) {
	s, err := resolveScalar(n)
	if err != nil {
		return nil, err
	}
	switch s.kind {
	case nullScalar:
		return []byte("null"), nil
	case boolScalar, intScalar:
		return []byte(s.text), nil
	case floatScalar:
		j, err := json.Marshal(s.float)
		if err != nil {
			return nil, badRequest{fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)}
		}
		return j, nil
	}
	return json.Marshal(s.text)
}

// floatKey prints a float key as kubectl does (sigs.k8s.io/yaml).
func floatKey(f float64) string {
	switch s := strconv.FormatFloat(f, 'g', -1, 32); s {
	case "+Inf":
		return ".inf"
	case "-Inf":
		return "-.inf"
	case "NaN":
		return ".nan"
	default:
		return s
	}
}
