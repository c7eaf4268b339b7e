package steps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlUpdate is one change of a YAML file (Kargo's intyaml.Update).
type yamlUpdate struct {
	Key   string
	Value any
}

// setValuesInFile rewrites the scalar at each key of a YAML file, line
// by line, so that everything else (comments, style, order) stays as it
// was (Kargo's intyaml.SetValuesInFile): a key must address an existing
// scalar.
func setValuesInFile(file string, updates []yamlUpdate) error {
	in, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("error reading file %q: %w", file, err)
	}
	out, err := setValuesInBytes(in, updates)
	if err != nil {
		return fmt.Errorf("error mutating bytes: %w", err)
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		return fmt.Errorf("error writing mutated bytes to file %q: %w", file, err)
	}
	return nil
}

func setValuesInBytes(in []byte, updates []yamlUpdate) ([]byte, error) {
	doc := &yaml.Node{}
	if err := yaml.Unmarshal(in, doc); err != nil {
		return nil, fmt.Errorf("error unmarshaling input: %w", err)
	}
	type change struct {
		col   int
		value any
	}
	changes := map[int]change{}
	for _, u := range updates {
		line, col, err := findScalar(doc, strings.Split(u.Key, "."))
		if err != nil {
			return nil, fmt.Errorf("error finding key %s: %w", u.Key, err)
		}
		changes[line] = change{col: col, value: u.Value}
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 0; sc.Scan(); line++ {
		text := sc.Text()
		c, ok := changes[line]
		if !ok || c.col > len(text) {
			out.WriteString(text + "\n")
			continue
		}
		kept := text[:c.col]
		out.WriteString(kept)
		if !strings.HasSuffix(kept, " ") {
			out.WriteString(" ")
		}
		fmt.Fprintf(&out, "%v\n", quoteIfNecessary(c.value))
	}
	return out.Bytes(), sc.Err()
}

func findScalar(node *yaml.Node, path []string) (int, int, error) {
	if len(path) == 0 {
		if node.Kind == yaml.ScalarNode {
			return node.Line - 1, node.Column - 1, nil
		}
		return 0, 0, fmt.Errorf("key path does not address a scalar node")
	}
	switch node.Kind {
	case yaml.DocumentNode:
		if len(node.Content) > 0 {
			return findScalar(node.Content[0], path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == path[0] {
				return findScalar(node.Content[i+1], path[1:])
			}
		}
	case yaml.SequenceNode:
		index, err := strconv.Atoi(path[0])
		if err != nil {
			return 0, 0, err
		}
		if index < 0 || index >= len(node.Content) {
			return 0, 0, fmt.Errorf("index out of range: %d", index)
		}
		return findScalar(node.Content[index], path[1:])
	}
	return 0, 0, fmt.Errorf("key path not found")
}

// quoteIfNecessary is Kargo's yaml.QuoteIfNecessary: a string a YAML
// reader would take for a number, a bool or JSON is quoted.
func quoteIfNecessary(val any) any {
	s, ok := val.(string)
	if !ok {
		return val
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return fmt.Sprintf("%q", s)
	}
	if _, err := strconv.ParseBool(s); err == nil {
		return fmt.Sprintf("%q", s)
	}
	if json.Valid([]byte(s)) {
		return fmt.Sprintf("%q", s)
	}
	return val
}
