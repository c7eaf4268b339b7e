package git

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// CloneOptions are the options of a plain clone (Kargo's CloneOptions),
// the kind a Warehouse's discovery makes.
type CloneOptions struct {
	// BaseDir is where the clone's home directory is made.
	BaseDir string
	// Branch to check out (the default branch when empty).
	Branch string
	// Depth limits the history (0: all of it).
	Depth uint
	// Filter is a partial clone filter (FilterBlobless).
	Filter string
	// SingleBranch fetches only Branch.
	SingleBranch bool
}

// FilterBlobless leaves blobs out of a clone until a checkout needs them.
const FilterBlobless = "blob:none"

// Clone makes a plain clone of repoURL (<home>/repo, without tags) and
// returns its working tree; Close removes it with its home.
func Clone(ctx context.Context, repoURL string, clientOpts *ClientOptions, opts *CloneOptions) (*WorkTree, error) {
	if clientOpts == nil {
		clientOpts = &ClientOptions{}
	}
	if opts == nil {
		opts = &CloneOptions{}
	}
	homeDir, err := newHomeDir(opts.BaseDir, repoURL)
	if err != nil {
		return nil, err
	}
	w := &WorkTree{baseRepo: &baseRepo{
		creds: clientOpts.Credentials, dir: filepath.Join(homeDir, "repo"), homeDir: homeDir,
		url: repoURL, allowLocal: clientOpts.AllowLocal,
	}}
	if err := w.setupClient(clientOpts); err != nil {
		return nil, w.fail(err)
	}
	args := []string{"clone", "--no-tags"}
	if opts.Branch != "" {
		args = append(args, "--branch", opts.Branch)
	}
	if opts.SingleBranch {
		args = append(args, "--single-branch")
	}
	if opts.Depth > 0 {
		args = append(args, "--depth", fmt.Sprint(opts.Depth))
	}
	if opts.Filter != "" {
		args = append(args, "--filter", opts.Filter)
	}
	args = append(args, repoURL, w.dir)
	cmd := w.gitCommand(ctx, args...)
	cmd.Dir = homeDir
	if _, err := run(cmd, w.secrets()); err != nil {
		return nil, w.fail(fmt.Errorf("error cloning repo %q into %q: %w", Redact(repoURL), w.dir, err))
	}
	if err := w.saveDirs(ctx); err != nil {
		return nil, w.fail(err)
	}
	return w, nil
}

// CommitMetadata describes a commit (Kargo's CommitMetadata).
type CommitMetadata struct {
	ID         string
	CommitDate time.Time
	Author     string // "Name <email>"
	Committer  string
	Subject    string
}

// ListCommits lists the current branch's commits, newest first (limit 0:
// all).
func (w *WorkTree) ListCommits(ctx context.Context, limit, skip uint) ([]CommitMetadata, error) {
	args := []string{"log", "--pretty=format:%H%x09%ci%x09%an <%ae>%x09%cn <%ce>%x09%s"}
	if limit > 0 {
		args = append(args, fmt.Sprintf("--max-count=%d", limit))
	}
	if skip > 0 {
		args = append(args, fmt.Sprintf("--skip=%d", skip))
	}
	out, err := w.git(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("error listing commits for repo %q: %w", Redact(w.url), err)
	}
	var commits []CommitMetadata
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := bytes.SplitN(sc.Bytes(), []byte("\t"), 5)
		if len(parts) != 5 {
			return nil, fmt.Errorf("unexpected number of fields: %q", sc.Bytes())
		}
		date, err := time.Parse("2006-01-02 15:04:05 -0700", string(parts[1]))
		if err != nil {
			return nil, fmt.Errorf("error parsing commit date %q: %w", parts[1], err)
		}
		commits = append(commits, CommitMetadata{ID: string(parts[0]), CommitDate: date,
			Author: string(parts[2]), Committer: string(parts[3]), Subject: string(parts[4])})
	}
	return commits, sc.Err()
}

// TagMetadata describes a tag (Kargo's TagMetadata).
type TagMetadata struct {
	Tag         string
	CommitID    string
	CreatorDate time.Time
	Author      string
	Committer   string
	Subject     string
	Tagger      string // annotated tags only
	Annotation  string // annotated tags only
}

// ListTags fetches the remote's tags and lists them, newest first.
func (w *WorkTree) ListTags(ctx context.Context) ([]TagMetadata, error) {
	if _, err := w.git(ctx, "fetch", "origin", "--tags"); err != nil {
		return nil, fmt.Errorf("error fetching tags from repo %q: %w", Redact(w.url), err)
	}
	const (
		annotated   = `%(refname:short)|*|%(*objectname)|*|%(*contents:subject)|*|%(*authorname) %(*authoremail)|*|%(*committername) %(*committeremail)|*|%(creatordate:iso8601)|*|%(taggername) %(taggeremail)|*|%(contents:subject)`
		lightweight = `%(refname:short)|*|%(objectname)|*|%(contents:subject)|*|%(authorname) %(authoremail)|*|%(committername) %(committeremail)|*|%(creatordate:iso8601)`
		format      = `%(if)%(*objectname)%(then)` + annotated + `%(else)` + lightweight + `%(end)`
	)
	out, err := w.git(ctx, "for-each-ref", "--sort=-creatordate", "--format="+format, "refs/tags")
	if err != nil {
		return nil, fmt.Errorf("error listing tags for repo %q: %w", Redact(w.url), err)
	}
	var tags []TagMetadata
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		t, err := parseTagLine(sc.Bytes())
		if err != nil {
			return nil, err
		}
		tags = append(tags, t)
	}
	return tags, sc.Err()
}

func parseTagLine(line []byte) (TagMetadata, error) {
	parts := bytes.Split(line, []byte("|*|"))
	if l := len(parts); l < 6 || l == 7 {
		return TagMetadata{}, fmt.Errorf("unexpected number of fields: %q", line)
	}
	date, err := time.Parse("2006-01-02 15:04:05 -0700", string(parts[5]))
	if err != nil {
		return TagMetadata{}, fmt.Errorf("error parsing creator date %q: %w", parts[5], err)
	}
	t := TagMetadata{Tag: string(parts[0]), CommitID: string(parts[1]), Subject: string(parts[2]),
		Author: string(parts[3]), Committer: string(parts[4]), CreatorDate: date}
	if len(parts) >= 8 {
		t.Tagger = string(parts[6])
		t.Annotation = string(bytes.Join(parts[7:], []byte("|*|")))
	}
	return t, nil
}

// GetDiffPathsForCommitID lists the paths a commit added or changed.
func (w *WorkTree) GetDiffPathsForCommitID(ctx context.Context, id string) ([]string, error) {
	out, err := w.git(ctx, "show", "--pretty=", "--name-only", id)
	if err != nil {
		return nil, fmt.Errorf("error getting diff paths for commit %q: %w", id, err)
	}
	var paths []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		paths = append(paths, sc.Text())
	}
	return paths, sc.Err()
}
