package process

import (
	"os/exec"
	"syscall"
)

// Nothing a task starts may outlive the server. Two parts see to that.
//
// The kernel sends a child its parent-death signal when the *thread* that
// forked it exits, so every process is started by internal/lifeline, from
// an OS thread that never exits: the signal comes when the server process
// dies, not when the Go scheduler retires some thread.
//
// That signal reaches only the direct child. So the child is a small shell
// shim, leader of the attempt's process group, which runs the command in
// the group and, on the parent-death signal, kills the whole group. Abort,
// timeout and stop kill the group too (starting with SIGTERM, which the
// shim passes by: the command decides).

// deathSignal is what the shim gets when the server dies.
const deathSignal = syscall.SIGUSR1

// shimScript waits at its gate (gate.go: it exits, running nothing,
// unless the server sends the word), then runs "$@" in the background of
// the shim's process group, its stdin /dev/null as before the gate, and
// waits for it, surviving SIGTERM/INT/HUP (the command gets them too, as a
// member of the group). When the command ends, the shim records its exit
// code in the attempt's exit record (exitrecord.go) before it exits
// itself: the server learns of an exit only after it is recorded, so a
// server killed in between finds the record and does not run the command
// again. Its exit status is the command's.
//
// On SIGUSR1 (the server died) the group dies within graceSeconds: a
// watchdog kills it, unless the command ends first, which is then
// recorded and the group killed at once. The grace is for a command
// that was ending as the server died: killed a moment before its exit
// after its work was done, it would run again under the next server. A
// signal that interrupts the wait (its status then 128+10) says nothing
// of the command, so the shim waits again: for the real status of a
// command that has ended, or for its end within the grace (a second
// wait of a command already waited for answers 127: the first status
// stands).
var shimScript = `gone= hit= dog=
trap 'gone=1 hit=1' USR1
trap ':' TERM INT HUP
IFS= read -r word || exit 125
exec </dev/null
[ "$word" = ` + gateWord + ` ] || exit 125
"$@" &
child=$!
while :; do
	hit=
	wait "$child"
	code=$?
	if [ -n "$gone" ] && [ -z "$dog" ]; then
		dog=1
		(sleep ` + graceSeconds + `; kill -KILL 0) &
	fi
	if [ -n "$hit" ] && [ "$code" -eq 138 ]; then
		wait "$child"
		again=$?
		[ "$again" -eq 127 ] || code=$again
	fi
	if ! kill -0 "$child" 2>/dev/null; then
		rec="` + exitRecordName("$"+markerEnv) + `"
		echo "$code" > "$rec.tmp" && mv -f "$rec.tmp" "$rec"
		[ -z "$gone" ] || kill -KILL 0
		exit "$code"
	fi
done`

// graceSeconds is how long a command may go on ending after the server
// died (the shim's watchdog, sleep(1)'s argument): well under the second
// within which nothing of an attempt outlives its server.
const graceSeconds = "0.3"

// command is the shim running path and args, in a process group of its
// own, with the parent-death signal set.
func shimCommand(path string, args []string) *exec.Cmd {
	return withShim(exec.Command("/bin/sh", shimArgs(path, args)...))
}

func shimArgs(path string, args []string) []string {
	return append([]string{"-c", shimScript, "taskactions-shim", path}, args...)
}

// withShim sets what the shim's process needs from its start.
func withShim(cmd *exec.Cmd) *exec.Cmd {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, deathSignal
	return cmd
}
