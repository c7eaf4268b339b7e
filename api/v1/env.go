package v1

import "strings"

// ReservedEnvPrefix names the environment variables the process plugin
// sets (the action's identity, the API URL and token), which must always
// win.
const ReservedEnvPrefix = "TASKACTIONS_"

// EnvVarProblem says what is wrong with an environment variable of an
// action (spec.envVars, container.env), or "" when nothing is: a process
// cannot have an empty name, "=" or NUL in a name, or NUL in a value, and
// names under ReservedEnvPrefix are the server's. The API refuses such
// variables; the process plugin drops any that an object written some
// other way still holds ("TASKACTIONS_URL=x" would read as TASKACTIONS_URL
// to some programs).
func EnvVarProblem(name, value string) string {
	switch {
	case name == "":
		return "an environment variable needs a name"
	case strings.ContainsAny(name, "=\x00"):
		return `an environment variable name cannot contain "=" or NUL`
	case strings.HasPrefix(strings.ToUpper(name), ReservedEnvPrefix):
		return "names starting with " + ReservedEnvPrefix + " are set by the server"
	case strings.ContainsRune(value, 0):
		return "an environment variable value cannot contain NUL"
	}
	return ""
}
