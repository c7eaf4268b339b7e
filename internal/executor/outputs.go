package executor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
)

const outputsFile = "outputs.json"

// lookupCache is the cache status of a new action: DISABLED unless its
// template is cacheable and it has a cache key; HIT (with the action whose
// outputs to reuse) when a succeeded action of the same project, domain,
// task type, key and cache version exists; MISS otherwise.
func (c *Controller) lookupCache(ta *v1.TaskAction, tmpl plugins.Template) (v1.CatalogCacheStatus, *v1.TaskAction) {
	if !tmpl.Metadata.Cacheable || ta.Spec.CacheKey == "" {
		return v1.CacheDisabled, nil
	}
	others, err := c.mgr.ByCacheKey(ta.Spec.Project, ta.Spec.Domain, ta.Spec.CacheKey)
	if err != nil {
		return v1.CacheLookupFailure, nil
	}
	for _, o := range others {
		if o.UID == ta.UID || o.Spec.TaskType != ta.Spec.TaskType || v1.PhaseOf(o.Status.Conditions) != v1.PhaseSucceeded {
			continue
		}
		if ot, err := parseTemplate(o); err == nil && ot.Metadata.Cacheable && ot.Metadata.CacheVersion == tmpl.Metadata.CacheVersion {
			if _, err := os.Stat(filepath.Join(c.outputDir(o), outputsFile)); err == nil {
				return v1.CacheHit, o
			}
		}
	}
	return v1.CacheMiss, nil
}

// writeOutputs writes a succeeded action's outputs.json: the plugin's
// outputs, or, when it has none, what the task wrote there itself (a
// process may), or an empty object. Cache hits reuse this file.
//
// A process task owns its output dir: what it left under that name that
// is not a regular file (a symlink to a file of the server's) is removed,
// and no symlink is followed.
func writeOutputs(dir string, outputs any) error {
	path := filepath.Join(dir, outputsFile)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove a non-file outputs.json: %w", err)
		}
	} else if err == nil && outputs == nil {
		return nil
	}
	if outputs == nil {
		outputs = struct{}{}
	}
	b, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("encode outputs: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyOutputs copies a cached action's outputs.json to a new action.
func copyOutputs(from, to string) error {
	src, err := os.OpenFile(filepath.Join(from, outputsFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	dst, err := os.OpenFile(filepath.Join(to, outputsFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
