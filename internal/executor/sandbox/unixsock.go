package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Landlock confines connect(2) to a named unix socket only from its ABI 9
// (LANDLOCK_ACCESS_FS_RESOLVE_UNIX). On an older kernel a confined task
// could still connect to any socket it can name: the embedded etcd's
// (<data-dir>/etcd.sock) takes no credentials, so a task could read and
// rewrite every stored object. There the launcher installs a seccomp
// filter under which socket(2) of the unix family fails with EPERM, for
// the task and all it starts. A socketpair(2), which names nothing, still
// works; so does every other family (the network is left alone).

// resolveUnixABI is the first Landlock ABI that confines connect(2) to a
// named unix socket.
const resolveUnixABI = 9

// needsUnixFilter reports whether a task under spec needs the filter: its
// Landlock cannot confine unix sockets, and the data dir, whose sockets it
// would reach, is not hidden from it.
func needsUnixFilter(spec Spec, abi int) bool {
	return abi < resolveUnixABI && spec.Hide == ""
}

// archRules are a process's syscall conventions on this GOARCH: its own,
// then the 32-bit ones the kernel also serves it. A filter sees the
// convention of each call (seccomp_data.arch), so it must judge each.
type archRules struct {
	arch   uint32   // AUDIT_ARCH_*
	socket []uint32 // the numbers of socket(2): denied for AF_UNIX
	denied []uint32 // denied outright: i386's socketcall(2), whose arguments a filter cannot read
}

// x32 calls are x86-64 calls with this bit in the number.
const x32Bit = 0x40000000

var rulesByGOARCH = map[string][]archRules{
	"amd64": {
		{arch: unix.AUDIT_ARCH_X86_64, socket: []uint32{41, x32Bit | 41}},
		{arch: unix.AUDIT_ARCH_I386, socket: []uint32{359}, denied: []uint32{102}},
	},
	"arm64": {
		{arch: unix.AUDIT_ARCH_AARCH64, socket: []uint32{198}},
		{arch: unix.AUDIT_ARCH_ARM, socket: []uint32{281}},
	},
}

// Offsets in struct seccomp_data. The first argument's low 32 bits are at
// its offset on the little-endian architectures above.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retDeny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

// unixSocketFilter is the filter's program: for each convention, a block
// that denies its socket(2) of AF_UNIX (and its denied calls) and allows
// the rest; a call of another convention is allowed.
func unixSocketFilter(rules []archRules) []bpf.Instruction {
	var prog []bpf.Instruction
	for _, r := range rules {
		block := archBlock(r)
		prog = append(prog,
			bpf.LoadAbsolute{Off: offArch, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: r.arch, SkipTrue: uint8(len(block))})
		prog = append(prog, block...)
	}
	return append(prog, bpf.RetConstant{Val: retAllow})
}

// archBlock judges a call known to be of r's convention.
func archBlock(r archRules) []bpf.Instruction {
	n := len(r.denied) + len(r.socket)
	allow := 1 + n      // after the load and the comparisons
	family := allow + 1 // where the first argument is judged
	deny := family + 2
	block := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	for _, nr := range r.denied {
		block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(deny - len(block) - 1)})
	}
	for _, nr := range r.socket {
		block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(family - len(block) - 1)})
	}
	return append(block,
		bpf.RetConstant{Val: retAllow},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
		bpf.RetConstant{Val: retDeny},
		bpf.RetConstant{Val: retAllow},
	)
}

// denyUnixSockets installs the filter on every thread of this process
// (no_new_privs must be set), which an exec keeps.
func denyUnixSockets() error {
	rules, ok := rulesByGOARCH[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("seccomp: no syscall table for %s, and this kernel's Landlock (ABI < %d) cannot keep a task from the data dir's unix sockets", runtime.GOARCH, resolveUnixABI)
	}
	raw, err := bpf.Assemble(unixSocketFilter(rules))
	if err != nil {
		return fmt.Errorf("seccomp: assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
