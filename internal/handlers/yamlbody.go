package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"go.yaml.in/yaml/v3"
)

// A YAML body (Stage and Freight writes take one, as kubectl reads a
// manifest) is read once, into the JSON it stands for, before the request
// is validated; from there on it is a JSON request. The reading is bounded
// like a JSON body: an alias counts as a copy of what it names, so a small
// body cannot expand into gigabytes (a flat anchor referenced many times),
// and the work is linear in what is read (no quadratic check of duplicate
// keys, as the YAML libraries' decoders into Go values make). YAML 1.1
// reads plain scalars as kubectl does (sigs.k8s.io/yaml, on go-yaml v2):
// `on`, `yes`, `y` are booleans, `0x1F` and `017` integers, `~` null; a
// timestamp stays the string it is written as.
const (
	// maxYAMLJSON bounds the JSON a YAML body reads as: what a JSON body
	// may be.
	maxYAMLJSON = MaxBodyBytes
	// maxYAMLNodes bounds the nodes read, each alias's as often as it is
	// used: no more than a JSON body of MaxBodyBytes can hold (every JSON
	// value takes two bytes with its separator).
	maxYAMLNodes = MaxBodyBytes / 2
	// maxYAMLDepth bounds nesting, as encoding/json bounds it.
	maxYAMLDepth = 10000
)

// yamlTooLarge is a YAML body past one of the bounds above (413).
type yamlTooLarge struct{ limit string }

func (e *yamlTooLarge) Error() string {
	return "the YAML body reads as " + e.limit + " (each alias counts as a copy of what it names)"
}

// yamlAsJSON puts the JSON a YAML body reads as in its place (the body
// has been read into memory, bounded, by readBody).
func yamlAsJSON(r *http.Request) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/yaml" {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyReadError(err)
	}
	j, err := yamlToJSON(b)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(j))
	r.ContentLength = int64(len(j))
	r.Header.Set("Content-Type", "application/json")
	return nil
}

var errYAMLJSONTooLarge = &yamlTooLarge{fmt.Sprintf("more than %d bytes of JSON, the limit of a body", maxYAMLJSON)}

// yamlToJSON reads one YAML document as JSON.
func yamlToJSON(b []byte) ([]byte, error) {
	doc, err := oneYAMLDocument(b)
	if err != nil {
		return nil, err
	}
	c := yamlConv{expanding: map[*yaml.Node]bool{}}
	if err := c.value(doc, 0); err != nil {
		return nil, err
	}
	if c.out.Len() > maxYAMLJSON {
		return nil, errYAMLJSONTooLarge
	}
	return c.out.Bytes(), nil
}

// oneYAMLDocument parses the body into nodes (which keeps each alias as a
// pointer to its anchor: nothing is expanded yet), refusing a stream of
// several documents as a JSON body with data after its value is refused.
// Empty documents (a `---` alone, comments) do not count.
func oneYAMLDocument(b []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	doc := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"} // none: the schema says a body is required
	for docs := 0; ; {
		var next yaml.Node
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return doc, nil
		case err != nil:
			return nil, badRequest{fmt.Errorf("the body is not YAML: %w", err)}
		case emptyDocument(&next):
			continue
		}
		if docs++; docs > 1 {
			return nil, badRequest{errors.New("the body holds more than one YAML document: send one object per request")}
		}
		doc = &next
	}
}

// emptyDocument: a document of nothing (a trailing `---`, or comments).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return true
	}
	c := n.Content[0]
	return c.Kind == yaml.ScalarNode && c.Tag == "!!null" && c.Value == ""
}

// yamlConv writes nodes as JSON, counting what it reads.
type yamlConv struct {
	out   bytes.Buffer
	nodes int
	// expanding holds the anchors whose alias is being written: one met
	// again inside itself would never end.
	expanding map[*yaml.Node]bool
}

// visit counts a node read at depth.
func (c *yamlConv) visit(n *yaml.Node, depth int) error {
	c.nodes++
	switch {
	case c.nodes > maxYAMLNodes:
		return &yamlTooLarge{fmt.Sprintf("more than %d nodes", maxYAMLNodes)}
	case c.out.Len() > maxYAMLJSON:
		return errYAMLJSONTooLarge
	case depth > maxYAMLDepth:
		return badRequest{fmt.Errorf("line %d: the YAML body nests deeper than %d", n.Line, maxYAMLDepth)}
	}
	return nil
}

func (c *yamlConv) value(n *yaml.Node, depth int) error {
	if err := c.visit(n, depth); err != nil {
		return err
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			c.out.WriteString("null")
			return nil
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		return c.alias(n, depth, c.value)
	case yaml.SequenceNode:
		c.out.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				c.out.WriteByte(',')
			}
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		c.out.WriteByte(']')
		return nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	}
	j, err := scalarJSON(n)
	if err != nil {
		return err
	}
	c.out.Write(j)
	return nil
}

// alias writes what an alias names with write, refusing one inside the
// node it names.
func (c *yamlConv) alias(n *yaml.Node, depth int, write func(*yaml.Node, int) error) error {
	target := n.Alias
	if target == nil || c.expanding[target] {
		return badRequest{fmt.Errorf("line %d: alias *%s is inside the node it names", n.Line, n.Value)}
	}
	c.expanding[target] = true
	defer delete(c.expanding, target)
	return write(target, depth)
}

// object is a JSON object being written: the keys it has, so that a
// merged mapping adds only what it lacks.
type object struct {
	seen  map[string]int // key: the line it is on
	count int
}

// mapping writes a mapping as a JSON object. A key may appear once; merge
// keys (`<<: *base`) add the pairs of the mappings they name that the
// mapping does not have, the first named winning (YAML's merge type).
func (c *yamlConv) mapping(n *yaml.Node, depth int) error {
	o := &object{seen: make(map[string]int, len(n.Content)/2)}
	c.out.WriteByte('{')
	if err := c.members(n, depth, o, true); err != nil {
		return err
	}
	c.out.WriteByte('}')
	return nil
}

// members writes the pairs of n that o lacks, then those of its merge
// keys. own: n is the mapping o is written from, whose keys come first.
func (c *yamlConv) members(n *yaml.Node, depth int, o *object, own bool) error {
	mine := o.seen // the keys n has had, for repeats
	if !own {
		mine = make(map[string]int, len(n.Content)/2)
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if err := c.visit(k, depth+1); err != nil {
			return err
		}
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return err
		}
		if line, dup := mine[key]; dup {
			return badRequest{fmt.Errorf("line %d: mapping key %q already defined at line %d", k.Line, key, line)}
		}
		mine[key] = k.Line
		if !own {
			if _, has := o.seen[key]; has {
				continue
			}
			o.seen[key] = k.Line
		}
		if o.count > 0 {
			c.out.WriteByte(',')
		}
		o.count++
		writeJSONString(&c.out, key)
		c.out.WriteByte(':')
		if err := c.value(v, depth+1); err != nil {
			return err
		}
	}
	for _, m := range merges {
		if err := c.merge(m, depth+1, o, false); err != nil {
			return err
		}
	}
	return nil
}

// merge adds to o the pairs of a merge key's value: a mapping, an alias
// of one, or a list of those (the earlier winning).
func (c *yamlConv) merge(v *yaml.Node, depth int, o *object, inList bool) error {
	if err := c.visit(v, depth); err != nil {
		return err
	}
	switch {
	case v.Kind == yaml.MappingNode:
		return c.members(v, depth, o, false)
	case v.Kind == yaml.AliasNode && v.Alias != nil && v.Alias.Kind == yaml.MappingNode:
		return c.alias(v, depth, func(t *yaml.Node, depth int) error { return c.members(t, depth, o, false) })
	case v.Kind == yaml.SequenceNode && !inList:
		for _, e := range v.Content {
			if err := c.merge(e, depth+1, o, true); err != nil {
				return err
			}
		}
		return nil
	}
	return badRequest{fmt.Errorf("line %d: a merge key (<<) takes a mapping, an alias of one, or a list of those", v.Line)}
}

// key is the JSON key of a mapping key, as kubectl writes it: a scalar
// resolved as YAML 1.1 does, then printed (`1: a` is "1", `on: a` "true").
func (c *yamlConv) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", badRequest{fmt.Errorf("line %d: a mapping or list as a mapping key has no JSON form", k.Line)}
	}
	s, err := resolveScalar(k)
	if err != nil {
		return "", err
	}
	switch s.kind {
	case nullScalar:
		return "", badRequest{fmt.Errorf("line %d: a null mapping key has no JSON form", k.Line)}
	case floatScalar:
		return floatKey(s.float), nil
	}
	return s.text, nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s) // a string always encodes
	b.Write(j)
}
