package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// hide covers dir with an empty tmpfs and mounts keep (inside dir) back
// at its path: the task sees its own output dir where it always is, and
// nothing else of the data dir. It runs in the launcher's own mount
// namespace, as root.
func hide(dir, keep string) error {
	fd, err := syscall.Open(keep, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open output dir: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("hide the data dir: %w", err)
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return fmt.Errorf("output dir mount point: %w", err)
	}
	// The descriptor still names the real output dir under the tmpfs.
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := syscall.Mount(src, keep, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount output dir: %w", err)
	}
	return nil
}
