package warehouses

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/git"
)

// gitSource is how discovery reaches a Git repository: the clone's
// client options (credentials, TLS, whether local paths are allowed) and
// where clones are made.
type gitSource struct {
	client  git.ClientOptions
	baseDir string
}

// discoverCommits is Kargo's Git discovery (internal/controller/warehouses/
// git.go in v1.6): a blobless, single-branch clone of the subscription's
// repository, then commits by the subscription's strategy, newest first,
// cut to discoveryLimit. The clone is removed before it returns.
func discoverCommits(ctx context.Context, sub kargoapi.GitSubscription, src gitSource) (res kargoapi.GitDiscoveryResult, err error) {
	res.RepoURL = sub.RepoURL
	if git.IsLocalURL(sub.RepoURL) && !src.client.AllowLocal {
		// Kargo's CRD refuses such URLs; this holds wherever a CRD does
		// not (a cluster's may be older), with a message that says why.
		return res, fmt.Errorf("repository %s is a local path or file:// URL: Warehouses may use repositories on this server's disk only when the server runs with --promotion-git-local", git.Redact(sub.RepoURL))
	}
	src.client.InsecureSkipTLSVerify = sub.InsecureSkipTLSVerify
	repo, err := git.Clone(ctx, sub.RepoURL, &src.client, &git.CloneOptions{
		BaseDir: src.baseDir, Branch: sub.Branch, SingleBranch: true, Filter: git.FilterBlobless,
	})
	if err != nil {
		return res, fmt.Errorf("failed to clone git repo %q: %w", sub.RepoURL, err)
	}
	defer func() {
		if cerr := repo.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("error removing the clone of git repo %q: %w", sub.RepoURL, cerr)
		}
	}()
	switch sub.CommitSelectionStrategy {
	case kargoapi.CommitSelectionStrategyLexical, kargoapi.CommitSelectionStrategyNewestTag, kargoapi.CommitSelectionStrategySemVer:
		tags, err := discoverTags(ctx, repo, sub)
		if err != nil {
			return res, fmt.Errorf("error listing tags from git repo %q: %w", sub.RepoURL, err)
		}
		for _, t := range tags {
			res.Commits = append(res.Commits, kargoapi.DiscoveredCommit{
				ID: t.CommitID, Tag: t.Tag, Subject: shortenString(t.Subject, 80),
				Author: t.Author, Committer: t.Committer, CreatorDate: &metav1.Time{Time: t.CreatorDate},
			})
		}
	default:
		commits, err := discoverBranchHistory(ctx, repo, sub)
		if err != nil {
			return res, fmt.Errorf("error listing commits from git repo %q: %w", sub.RepoURL, err)
		}
		for _, c := range commits {
			res.Commits = append(res.Commits, kargoapi.DiscoveredCommit{
				ID: c.ID, Branch: sub.Branch, Subject: shortenString(c.Subject, 80),
				Author: c.Author, Committer: c.Committer, CreatorDate: &metav1.Time{Time: c.CommitDate},
			})
		}
	}
	return res, nil
}

// discoverBranchHistory is the branch's newest commits that pass the
// expression filter and the path filters, at most discoveryLimit. Without
// filters it is one page of the log; with them, pages until enough pass.
func discoverBranchHistory(ctx context.Context, repo *git.WorkTree, sub kargoapi.GitSubscription) ([]git.CommitMetadata, error) {
	var program *vm.Program
	if sub.ExpressionFilter != "" {
		p, err := expr.Compile(sub.ExpressionFilter)
		if err != nil {
			return nil, fmt.Errorf("error compiling expression filter: %w", err)
		}
		program = p
	}
	paths, err := newPathFilter(sub.IncludePaths, sub.ExcludePaths)
	if err != nil {
		return nil, err
	}
	n := discoveryLimit(sub.DiscoveryLimit)
	out := make([]git.CommitMetadata, 0, n)
	for skip := uint(0); ; skip += uint(n) {
		commits, err := repo.ListCommits(ctx, uint(n), skip)
		if err != nil {
			return nil, fmt.Errorf("error listing commits from git repo %q: %w", sub.RepoURL, err)
		}
		if program == nil && paths == nil {
			return commits, nil
		}
		for _, c := range commits {
			if program != nil {
				ok, err := exprTrue(program, map[string]any{
					"id": c.ID, "commitDate": c.CommitDate, "author": c.Author, "committer": c.Committer, "subject": c.Subject,
				})
				if err != nil {
					return nil, fmt.Errorf("error evaluating expression commit filter: %w", err)
				}
				if !ok {
					continue
				}
			}
			if paths != nil {
				diff, err := repo.GetDiffPathsForCommitID(ctx, c.ID)
				if err != nil {
					return nil, fmt.Errorf("error getting diff paths for commit %q in git repo %q: %w", c.ID, sub.RepoURL, err)
				}
				if !paths.matches(diff) {
					continue
				}
			}
			if out = append(out, c); len(out) >= n {
				return out, nil
			}
		}
		if len(commits) < n {
			return out, nil
		}
	}
}

// discoverTags is the repository's tags that pass allowTags, ignoreTags
// and the expression filter, ordered by the strategy (NewestTag: by
// creation, as listed), then those whose commit touches the paths, at
// most discoveryLimit.
func discoverTags(ctx context.Context, repo *git.WorkTree, sub kargoapi.GitSubscription) ([]git.TagMetadata, error) {
	tags, err := repo.ListTags(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing tags from git repo %q: %w", sub.RepoURL, err)
	}
	allowed, err := tagFilter(sub.AllowTags, sub.IgnoreTags)
	if err != nil {
		return nil, fmt.Errorf("failed to filter tags: %w", err)
	}
	tags = slices.DeleteFunc(tags, func(t git.TagMetadata) bool { return !allowed(t.Tag) })
	if tags, err = filterTagsByExpression(tags, sub.ExpressionFilter); err != nil {
		return nil, fmt.Errorf("failed to filter tags by expression: %w", err)
	}
	switch sub.CommitSelectionStrategy {
	case kargoapi.CommitSelectionStrategySemVer:
		if tags, err = bySemver(tags, func(t git.TagMetadata) string { return t.Tag }, sub.SemverConstraint, sub.StrictSemvers); err != nil {
			return nil, fmt.Errorf("failed to select semver tags: %w", err)
		}
	case kargoapi.CommitSelectionStrategyLexical:
		slices.SortFunc(tags, func(a, b git.TagMetadata) int { return strings.Compare(b.Tag, a.Tag) })
	}
	n := discoveryLimit(sub.DiscoveryLimit)
	paths, err := newPathFilter(sub.IncludePaths, sub.ExcludePaths)
	if err != nil || paths == nil {
		return limit(tags, int32(n)), err
	}
	out := make([]git.TagMetadata, 0, n)
	for _, t := range tags {
		diff, err := repo.GetDiffPathsForCommitID(ctx, t.CommitID)
		if err != nil {
			return nil, fmt.Errorf("error getting diff paths for tag %q in git repo %q: %w", t.Tag, sub.RepoURL, err)
		}
		if paths.matches(diff) {
			if out = append(out, t); len(out) >= n {
				break
			}
		}
	}
	return out, nil
}

// filterTagsByExpression keeps the tags for which the expression is true
// (Kargo's variables: tag, id, creatorDate, author, committer, subject,
// tagger, annotation).
func filterTagsByExpression(tags []git.TagMetadata, expression string) ([]git.TagMetadata, error) {
	if expression == "" {
		return tags, nil
	}
	program, err := expr.Compile(expression)
	if err != nil {
		return nil, fmt.Errorf("error compiling tag expression filter: %w", err)
	}
	out := make([]git.TagMetadata, 0, len(tags))
	for _, t := range tags {
		ok, err := exprTrue(program, map[string]any{
			"tag": t.Tag, "id": t.CommitID, "creatorDate": t.CreatorDate, "author": t.Author,
			"committer": t.Committer, "subject": t.Subject, "tagger": t.Tagger, "annotation": t.Annotation,
		})
		if err != nil {
			return nil, fmt.Errorf("error evaluating tag expression filter: %w", err)
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// exprTrue runs a filter: a result that is not a bool counts by its
// text, as strconv.ParseBool reads it (Kargo's rule).
func exprTrue(program *vm.Program, env map[string]any) (bool, error) {
	v, err := expr.Run(program, env)
	if err != nil {
		return false, err
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	b, err := strconv.ParseBool(fmt.Sprint(v))
	if err != nil {
		return false, fmt.Errorf("error parsing expression result: %w", err)
	}
	return b, nil
}

// discoveryLimit is the CRD's default (20) for an unset limit.
func discoveryLimit(n int32) int {
	if n <= 0 {
		return 20
	}
	return int(n)
}

// shortenString cuts a commit's subject, as Kargo does, so that twenty of
// them cannot make a Warehouse too big to store.
func shortenString(s string, n int) string {
	if n >= 0 && len(s) > n {
		return s[:n] + "..."
	}
	return s
}
