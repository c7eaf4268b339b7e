package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"taskactions/internal/lifeline"
)

// ExitError is a git command that exited non-zero: Kargo's
// internal/exec.ExitError, its message "error executing cmd [<command>]:
// <output>".
type ExitError struct {
	Command  string
	Output   []byte
	ExitCode int
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("error executing cmd [%s]: %s", e.Command, string(e.Output))
}

// maxOutput bounds what is kept of a command's output (stdout and stderr
// together): a command that talks more is cut, not buffered without end.
const maxOutput = 4 << 20

// boundedBuffer keeps the first maxOutput bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		b.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// run runs cmd with its output combined, as Kargo's exec.Exec. The
// command line and output in errors have passwords taken out (secrets),
// and so has any password in a URL.
func run(cmd *exec.Cmd, secrets []string) ([]byte, error) {
	command := redact(cmd.String(), secrets) // before the shim goes in front
	var out boundedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	shim(cmd)
	err := lifeline.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	res := out.Bytes()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return res, &ExitError{
			Command:  command,
			Output:   []byte(redact(string(res), secrets)),
			ExitCode: exitErr.ExitCode(),
		}
	}
	if err != nil {
		return res, fmt.Errorf("error executing cmd [%s]: %s: %w", command, redact(string(res), secrets), err)
	}
	return res, nil
}

// userinfoPassword is the password of a URL's user info.
var userinfoPassword = regexp.MustCompile(`(://[^/@\s:]*):[^/@\s]+@`)

// redact takes secrets, and passwords in URLs, out of s.
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return userinfoPassword.ReplaceAllString(s, "$1:***@")
}

// Redact is redact for callers that build messages around a URL.
func Redact(s string) string { return redact(s, nil) }

// commandContext is exec.CommandContext with the command killed when ctx
// ends (its whole output so far kept), with its process group: git runs
// helpers (git-remote-http, ssh) that hold its output pipes, and killing
// git alone left Wait blocked while a helper hung on the network, so an
// abort did not end the step. WaitDelay is the backstop for a helper that
// left the group.
func commandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = commandWaitDelay
	return cmd
}

// commandWaitDelay is how long Wait waits for the output pipes once the
// command's group is killed.
const commandWaitDelay = 5 * time.Second

// shim makes cmd run under a shell that leads its process group and, when
// the server dies (its parent-death signal, sent to it alone), kills the
// group: git and the helpers it started. Without it a git command that
// hung on the network outlived a kill -9 of the server for as long as the
// network kept it. The shell passes git's exit status through (128+n for
// a git killed by signal n); stdin is /dev/null for both, as for git
// before.
func shim(cmd *exec.Cmd) {
	cmd.Args = append([]string{"sh", "-c", shimScript, "git-shim", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGUSR1
}

// shimScript traps the death signal before it starts the command, so a
// server that dies first leaves nothing started (USR1's default ends the
// shell). The trap's kill ends the shell too: the server is gone.
const shimScript = `trap 'kill -KILL 0' USR1
"$@" &
wait $!`
