package steps

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kargo's YAML node helpers (internal/yaml/update.go, decode.go): fields
// addressed by dot-separated keys, as tidwall/sjson reads them ("\." a
// dot in a key, a leading ":" a number that is a key, not an index),
// changed in place with comments and style kept.

// errFieldNotFound is Kargo's FieldNotFoundErr.
type errFieldNotFound struct{ path string }

func (e errFieldNotFound) Error() string { return fmt.Sprintf("field '%s' not found", e.path) }

// updateField sets the field at key, creating it (and what leads to it)
// when it does not exist.
func updateField(node *yaml.Node, key string, value any) error {
	parts, err := splitKey(key)
	if err != nil {
		return err
	}
	return updateNode(node, parts, value)
}

func updateNode(node *yaml.Node, parts []string, value any) error {
	cur, rest := parts[0], parts[1:]
	switch node.Kind {
	case yaml.DocumentNode:
		return updateNode(node.Content[0], parts, value)
	case yaml.MappingNode:
		for i := 0; i < len(node.Content); i += 2 {
			if node.Content[i].Value == cur {
				if len(rest) == 0 {
					return replaceNode(node.Content[i+1], value)
				}
				return updateNode(node.Content[i+1], rest, value)
			}
		}
		return addField(node, cur, rest, value)
	case yaml.SequenceNode:
		index, err := parseIndex(cur)
		if err != nil {
			return err
		}
		if index == -1 || index >= len(node.Content) {
			kind := yaml.ScalarNode
			if len(rest) > 0 {
				kind = yaml.MappingNode
			}
			node.Content = append(node.Content, &yaml.Node{Kind: kind})
			index = len(node.Content) - 1
		}
		if len(rest) == 0 {
			return replaceNode(node.Content[index], value)
		}
		return updateNode(node.Content[index], rest, value)
	case yaml.ScalarNode:
		if len(rest) > 0 {
			*node = yaml.Node{Kind: yaml.MappingNode}
			return updateNode(node, parts, value)
		}
		return replaceNode(node, value)
	case yaml.AliasNode:
		return updateNode(node.Alias, parts, value)
	case 0:
		// An empty document.
		*node = yaml.Node{Kind: yaml.MappingNode}
		return updateNode(node, parts, value)
	}
	return fmt.Errorf("unexpected node kind: %v", node.Kind)
}

func addField(node *yaml.Node, key string, rest []string, value any) error {
	val := &yaml.Node{}
	if len(rest) == 0 {
		if err := val.Encode(value); err != nil {
			return fmt.Errorf("error encoding new value: %v", err)
		}
	} else {
		val.Kind = yaml.MappingNode
		if err := updateNode(val, rest, value); err != nil {
			return err
		}
	}
	node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, val)
	return nil
}

// replaceNode puts value in node's place, keeping its comments and style.
func replaceNode(node *yaml.Node, value any) error {
	n := &yaml.Node{}
	if err := n.Encode(value); err != nil {
		return fmt.Errorf("error encoding new value: %v", err)
	}
	keepComments(node, n)
	n.Style = node.Style
	*node = *n
	return nil
}

func keepComments(old, n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = old.HeadComment, old.LineComment, old.FootComment
	switch {
	case old.Kind == yaml.MappingNode && n.Kind == yaml.MappingNode:
		prev := map[string]*yaml.Node{}
		for i := 0; i+1 < len(old.Content); i += 2 {
			prev[old.Content[i].Value] = old.Content[i+1]
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if o, ok := prev[n.Content[i].Value]; ok {
				keepComments(o, n.Content[i+1])
			}
		}
	case old.Kind == yaml.SequenceNode && n.Kind == yaml.SequenceNode:
		for i := 0; i < len(n.Content) && i < len(old.Content); i++ {
			keepComments(old.Content[i], n.Content[i])
		}
	}
}

// decodeField decodes the field at path into out.
func decodeField(node *yaml.Node, path string, out any) error {
	parts, err := splitKey(path)
	if err != nil {
		return err
	}
	n, err := findNode(node, parts)
	if err != nil {
		return err
	}
	return n.Decode(out)
}

func findNode(node *yaml.Node, parts []string) (*yaml.Node, error) {
	if len(parts) == 0 {
		return node, nil
	}
	cur, rest := parts[0], parts[1:]
	switch node.Kind {
	case yaml.DocumentNode:
		if len(node.Content) == 0 {
			return nil, errFieldNotFound{path: cur}
		}
		return findNode(node.Content[0], parts)
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == cur {
				return findNode(node.Content[i+1], rest)
			}
		}
		return nil, errFieldNotFound{path: cur}
	case yaml.SequenceNode:
		index, err := parseIndex(cur)
		if err != nil {
			return nil, err
		}
		if index < 0 || index >= len(node.Content) {
			return nil, fmt.Errorf("index out of range: %d", index)
		}
		return findNode(node.Content[index], rest)
	case 0:
		return nil, errFieldNotFound{path: cur}
	}
	return nil, fmt.Errorf("cannot access nested field on scalar node")
}

// splitKey splits a key at its unescaped dots (Kargo's splitKey).
func splitKey(key string) ([]string, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, fmt.Errorf("empty key")
	}
	var parts []string
	var cur strings.Builder
	escaped := false
	for i := 0; i < len(key); i++ {
		c := key[i]
		if escaped {
			if c != '.' && c != ':' {
				return nil, fmt.Errorf("invalid escape sequence in key %q", key)
			}
			cur.WriteByte(c)
			escaped = false
			continue
		}
		switch c {
		case '\\':
			escaped = true
		case '.':
			if cur.Len() == 0 {
				return nil, fmt.Errorf("empty key part in key %q", key)
			}
			parts = append(parts, cur.String())
			cur.Reset()
		case ':':
			if cur.Len() > 0 {
				return nil, fmt.Errorf("unexpected colon in key %q", key)
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() == 0 {
		return nil, fmt.Errorf("empty key part in key %q", key)
	}
	return append(parts, cur.String()), nil
}

// parseIndex reads a sequence index: n, or the legacy [n]; -1 appends.
func parseIndex(s string) (int, error) {
	index, err := strconv.Atoi(s)
	if err != nil {
		if _, err := fmt.Sscanf(s, "[%d]", &index); err != nil {
			return 0, fmt.Errorf("invalid index format: %s", s)
		}
	}
	if index < -1 {
		return 0, fmt.Errorf("invalid negative index: %d", index)
	}
	return index, nil
}
