package history

import (
	"context"
	"time"
)

// Project is a project and domain with runs.
type Project struct {
	Project, Domain string
	Runs            int64
	// LastActivity is the latest start or end of any of its runs.
	LastActivity time.Time
}

// Projects returns every project and domain with runs, sorted. It scans
// the runs (one pass over the primary key), so callers keep the result
// and follow changes rather than ask again.
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	return s.projects(ctx, "", "")
}

// Project returns one project and domain; Runs is 0 when it has none.
func (s *Store) Project(ctx context.Context, project, domain string) (Project, error) {
	ps, err := s.projects(ctx, project, domain)
	if err != nil || len(ps) == 0 {
		return Project{Project: project, Domain: domain}, err
	}
	return ps[0], nil
}

func (s *Store) projects(ctx context.Context, project, domain string) ([]Project, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	where, args := "", []any{}
	if project != "" {
		where, args = "WHERE project = ? AND domain = ?", []any{project, domain}
	}
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT project, domain, COUNT(*), MAX(started_at), MAX(COALESCE(ended_at, 0))
		FROM runs `+where+` GROUP BY project, domain ORDER BY project, domain`), args...)
	if err != nil {
		return nil, s.fail("list projects", err)
	}
	defer rows.Close()
	var out []Project
	for rows.Next() {
		var p Project
		var started, ended int64
		if err := rows.Scan(&p.Project, &p.Domain, &p.Runs, &started, &ended); err != nil {
			return nil, s.fail("list projects", err)
		}
		p.LastActivity = fromNanos(max(started, ended))
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list projects", err)
	}
	return out, nil
}
