// Package pg starts a throwaway PostgreSQL for tests, apart from testenv so
// that a test of the history store does not link the API server.
package pg

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Postgres is a throwaway PostgreSQL cluster in a temp dir, listening on
// a unix socket only, with trust authentication (only this machine's
// users can reach the socket, in a 0700 dir).
type Postgres struct {
	Dir  string
	DSN  string // postgres://postgres@/postgres?host=<socket dir>
	bin  string
	cred *syscall.Credential
}

// StartPostgres initdb's and starts a cluster with Debian's binaries
// (make installs the postgresql package when they are missing). PostgreSQL
// refuses to run as root, so as root it runs as the package's postgres
// user.
func StartPostgres() (*Postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "taskactions-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if p.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := p.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	opts := "-c listen_addresses='' -c unix_socket_directories=" + dir + " -c fsync=off -c max_connections=50"
	if out, err := p.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	p.DSN = "postgres://postgres@/postgres?host=" + dir + "&sslmode=disable"
	return p, nil
}

// CreateDatabase makes an empty database and returns its DSN.
func (p *Postgres) CreateDatabase(name string) (string, error) {
	out, err := p.run("psql", "-h", p.Dir, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE "+name)
	if err != nil {
		return "", fmt.Errorf("create database: %w: %s", err, out)
	}
	return "postgres://postgres@/" + name + "?host=" + p.Dir + "&sslmode=disable", nil
}

// Stop stops the cluster and removes it.
func (p *Postgres) Stop() {
	_, _ = p.run("pg_ctl", "-D", filepath.Join(p.Dir, "data"), "-m", "immediate", "stop")
	os.RemoveAll(p.Dir)
}

func (p *Postgres) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.Dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd.CombinedOutput()
}

// postgresBin finds Debian's versioned bin dir (initdb and pg_ctl are not
// on PATH there).
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if path, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(path), nil
	}
	return "", fmt.Errorf("PostgreSQL is not installed (make test installs Debian's postgresql package)")
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and there is no postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// DatabaseName makes a test name usable as a database name.
func DatabaseName(s string) string {
	return strings.ToLower(strings.NewReplacer("/", "_", "-", "_", " ", "_").Replace(s))
}
