package providers

import (
	"strings"
	"unicode/utf8"
)

// expand replaces the $(VAR) references of s with vars' values, as the
// kubelet expands a container's command, args and env values
// (k8s.io/kubernetes third_party/forked/golang/expansion, with
// MappingFuncFor over vars): "$$" is "$", an undefined $(VAR) and an
// unclosed "$(" stay as they are, any other "$" is kept.
func expand(s string, vars map[string]string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(s); cursor++ {
		if s[cursor] == '$' && cursor+1 < len(s) {
			buf.WriteString(s[checkpoint:cursor])
			read, isVar, advance := readVariableName(s[cursor+1:])
			if isVar {
				if v, ok := vars[read]; ok {
					buf.WriteString(v)
				} else {
					buf.WriteString("$(" + read + ")")
				}
			} else {
				buf.WriteString(read)
			}
			cursor += advance
			checkpoint = cursor + 1
		}
	}
	return buf.String() + s[checkpoint:]
}

// readVariableName is the expansion package's tryReadVariableName: what
// follows a "$", whether it is a variable name, and how many bytes it
// took.
func readVariableName(s string) (string, bool, int) {
	r, size := utf8.DecodeRuneInString(s)
	switch r {
	case '$':
		return s[0:size], false, size
	case '(':
		for i := 1; i < len(s); i++ {
			if s[i] == ')' {
				return s[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + string(r), false, size
	}
}
