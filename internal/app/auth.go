package app

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
	"taskactions/internal/auth"
	"taskactions/internal/handlers"
	"taskactions/internal/secrets"
	"taskactions/internal/taskactions"
)

// Files of the data dir that hold the API's credentials (mode 0600).
const (
	// FileAPIToken is the admin token: every verb in every project.
	FileAPIToken = "api-token"
	// fileAuthKey signs session cookies and task tokens, so both survive a
	// restart.
	fileAuthKey = "auth-key"
)

// loginCodeTTL is how long the login link printed at start works.
const loginCodeTTL = time.Hour

// taskTokenTTL bounds a task token. The attempt's end ends it sooner: the
// authenticator checks the live action on every request.
const taskTokenTTL = 24 * time.Hour

// access is the server's authentication and authorization, built from the
// configuration and the data dir.
type access struct {
	authn    auth.Authenticator
	authz    auth.Authorizer
	cluster  *auth.Cluster          // --auth=kubernetes: set its client once the cluster is up
	sessions *auth.Sessions         // nil with --auth=none
	login    *auth.LoginCodes       // nil with --auth=none
	signer   *auth.Signer           // nil with --auth=none
	throttle *auth.Throttle         // failed logins and tokens per address; nil with --auth=none
	hosts    handlers.HostAllowlist // the names the Host guard allows
	// stopLogouts ends the reading of the logouts other replicas record.
	stopLogouts context.CancelFunc
}

// logoutRefresh is how soon a logout on one replica holds on the others.
const logoutRefresh = 5 * time.Second

// keepLogouts makes logouts end sessions for good, recorded in store
// (history's database, shared by replicas). Until the store is open (the
// start), a stream held on a session is checked again once the API
// serves it.
func (ac *access) keepLogouts(ctx context.Context, store auth.LogoutStore, log zerolog.Logger) error {
	if ac.sessions == nil {
		return nil
	}
	l, err := auth.NewLogouts(ctx, store)
	if err != nil {
		return fmt.Errorf("logouts: %w", err)
	}
	ac.sessions.SetLogouts(l)
	var run context.Context
	run, ac.stopLogouts = context.WithCancel(context.Background())
	go l.Run(run, logoutRefresh, log)
	return nil
}

// newAccess reads the admin token and the signing key from the data dir
// (creating them on the first start) and the tokens file, if any.
func (a *App) newAccess() (*access, error) {
	ac := &access{authz: auth.GrantAuthorizer{}, hosts: handlers.NewHostAllowlist(allowedHosts(a.cfg.Listen, a.cfg.AllowedHosts))}
	if a.cfg.Auth == AuthNone {
		a.log.Warn().Str("listen", a.cfg.Listen).Msg("authentication is off (--auth=none): any process on this machine may use the API, the process plugin included")
		ac.authn = auth.Open{}
		return ac, nil
	}
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	token, err := secrets.LoadOrCreate(filepath.Join(a.cfg.DataDir, FileAPIToken))
	if err != nil {
		return nil, err
	}
	key, err := secrets.LoadOrCreate(filepath.Join(a.cfg.DataDir, fileAuthKey))
	if err != nil {
		return nil, err
	}
	rawKey, err := hex.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("%s: not hex: %w", fileAuthKey, err)
	}
	var file *auth.TokenFile
	if a.cfg.AuthTokensFile != "" {
		if file, err = auth.LoadTokenFile(a.cfg.AuthTokensFile); err != nil {
			return nil, err
		}
		if st, err := os.Stat(a.cfg.AuthTokensFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			a.log.Warn().Str("file", a.cfg.AuthTokensFile).Msg("the tokens file is readable by others: use tokenSha256 or chmod 600")
		}
	}
	tokens, err := auth.NewTokens(file, map[string]*auth.Subject{token: auth.Admin()})
	if err != nil {
		return nil, err
	}
	if ac.signer, err = auth.NewSigner(rawKey); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(a.ln.Addr().String())
	ac.sessions = auth.NewSessions(ac.signer, tokens, auth.CookieName+"-"+port, a.cfg.TLSCert != "")
	ac.login = auth.NewLoginCodes(ac.sessions, token, loginCodeTTL)
	ac.throttle = auth.NewThrottle(auth.DefaultFailureBurst, auth.DefaultFailureRate)
	authn := &auth.RequestAuthenticator{Tokens: tokens, Sessions: ac.sessions, Signer: ac.signer,
		Attempts: auth.AttemptsFunc(a.currentAttempt), Throttle: ac.throttle}
	if a.cfg.Auth == AuthKubernetes {
		template := a.cfg.NamespaceTemplate
		ac.cluster = auth.NewCluster(func(project, domain string) string {
			return taskactions.NamespaceFor(template, project, domain)
		})
		authn.Cluster, ac.authz = ac.cluster, ac.cluster
		ac.sessions.Cluster = ac.cluster // the dashboard logs in with the cluster's tokens too
	}
	ac.authn = authn
	subjects := 1
	if file != nil {
		subjects += len(file.Subjects)
	}
	a.log.Info().Int("subjects", subjects).Str("adminToken", filepath.Join(a.cfg.DataDir, FileAPIToken)).Bool("cluster", ac.cluster != nil).Msg("authentication on")
	return ac, nil
}

// allowedHosts is what the Host guard allows: the listen host, the
// loopback names, and the operator's list.
func allowedHosts(listen string, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	return append(hosts, extra...)
}

// LoginURL returns a one-time link that logs a browser in as the admin
// (empty with --auth=none).
func (a *App) LoginURL() string {
	if a.access == nil || a.access.login == nil {
		return ""
	}
	return a.URL() + "/login?code=" + url.QueryEscape(a.access.login.Issue())
}

// taskToken is the token a process task gets (TASKACTIONS_TOKEN): for its
// attempt only, within its own run (read it, enqueue children, report its
// own status), and execute only when whoever enqueued the action could
// (taskactions.io/may-execute, which only the server writes). It lasts
// the attempt's timeout, and at most taskTokenTTL.
func (ac *access) taskToken(ta *v1.TaskAction, timeout time.Duration) string {
	if ac.signer == nil {
		return ""
	}
	ttl := taskTokenTTL
	if timeout > 0 && timeout+time.Minute < ttl {
		ttl = timeout + time.Minute
	}
	s := &ta.Spec
	return ac.signer.TaskToken(auth.TaskScope{
		Project: s.Project, Domain: s.Domain, Run: s.RunName, Action: s.ActionName,
		UID: string(ta.UID), Attempt: max(ta.Status.Attempts, 1),
		MayExecute: ta.Annotations[v1.AnnotationMayExecute] == "true",
	}, ttl)
}

// currentAttempt is what ends a task token with its attempt: the action
// it names must be live, the same object, not finished, and not on a
// later attempt. The cache is read once it holds this server's own
// writes, so a token is refused as soon as the executor has recorded the
// attempt's end (on another replica, once that replica's cache has it).
func (a *App) currentAttempt(ctx context.Context, t auth.TaskScope) error {
	if a.mgr == nil {
		return fmt.Errorf("%w: the server is starting", auth.ErrUnavailable)
	}
	id := taskactions.ActionID{Project: t.Project, Domain: t.Domain, Run: t.Run, Name: t.Action}
	ta, err := a.mgr.GetTaskAction(ctx, id)
	switch {
	case errors.Is(err, taskactions.ErrNotFound):
		return fmt.Errorf("%w: the task token's action %s is gone", auth.ErrUnauthenticated, id)
	case err != nil:
		return fmt.Errorf("%w: %w", auth.ErrUnavailable, err)
	case string(ta.UID) != t.UID:
		return fmt.Errorf("%w: the task token's action %s was deleted (another has its name)", auth.ErrUnauthenticated, id)
	}
	if p := v1.PhaseOf(ta.Status.Conditions); p.Terminal() {
		return fmt.Errorf("%w: the task token's attempt is over: action %s is %s", auth.ErrUnauthenticated, id, p)
	}
	if ta.Status.Attempts > t.Attempt {
		return fmt.Errorf("%w: the task token's attempt %d is over: action %s is on attempt %d", auth.ErrUnauthenticated, t.Attempt, id, ta.Status.Attempts)
	}
	return nil
}

// adminTokenFile is where the admin token is kept; the login page names it.
func (a *App) adminTokenFile() string { return filepath.Join(a.cfg.DataDir, FileAPIToken) }
