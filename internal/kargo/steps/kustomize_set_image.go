package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	kustypes "sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"taskactions/internal/kargo/engine"
)

// kustomizeImageSetter is kustomize-set-image (Kargo's
// kustomize_image_setter.go): the images field of the Kustomization in
// path set (merged with what it has, "*" keeping a field's current value,
// sorted by name), from the images given or, with none, every image of
// the Freight. Output: {"commitMessage"} when an image was set.
type kustomizeImageSetter struct{ warehouses engine.Warehouses }

type kustomizeSetImageConfig struct {
	Path   string `json:"path"`
	Images []struct {
		Image   string `json:"image"`
		Name    string `json:"name,omitempty"`
		NewName string `json:"newName,omitempty"`
		Tag     string `json:"tag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images"`
}

// preserve, as a new name, tag or digest, keeps the current one.
const preserve = "*"

func (kustomizeImageSetter) Name() string { return "kustomize-set-image" }

func (k kustomizeImageSetter) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[kustomizeSetImageConfig]("kustomize-set-image", sc.Config)
	if err != nil {
		return errored(err)
	}
	kusPath, err := findKustomization(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("could not discover kustomization file: %w", err))
	}
	targets := map[string]kustypes.Image{}
	if len(cfg.Images) > 0 {
		for _, img := range cfg.Images {
			t := kustypes.Image{Name: img.Image, NewName: img.NewName}
			if img.Name != "" {
				t.Name = img.Name
			}
			if img.Digest != "" {
				t.Digest = img.Digest
			} else if img.Tag != "" {
				t.NewTag = img.Tag
			}
			targets[t.Name] = t
		}
	} else if targets, err = k.imagesOfFreight(ctx, sc); err != nil {
		return errored(err)
	}
	if err := updateKustomization(kusPath, targets); err != nil {
		return errored(err)
	}
	if msg := imagesCommitMessage(cfg.Path, targets); msg != "" {
		return succeeded(map[string]any{"commitMessage": msg})
	}
	return succeeded(nil)
}

// imagesOfFreight are every image of the Freight, unless two requested
// origins could provide one image.
func (k kustomizeImageSetter) imagesOfFreight(ctx context.Context, sc *StepContext) (map[string]kustypes.Image, error) {
	refs := sc.Freight.References()
	f := engine.Finder{Project: sc.Project, Requests: sc.FreightRequests, Freight: refs, Warehouses: k.warehouses}
	if ambiguous, err := f.HasAmbiguousImageRequest(ctx); err != nil || ambiguous {
		e := errors.New("manual configuration required due to ambiguous result")
		if err != nil {
			e = fmt.Errorf("%w: %v", e, err)
		}
		return nil, e
	}
	images := map[string]kustypes.Image{}
	for _, ref := range refs {
		for _, img := range ref.Images {
			images[img.RepoURL] = kustypes.Image{Name: img.RepoURL, NewTag: img.Tag, Digest: img.Digest}
		}
	}
	return images, nil
}

func imagesCommitMessage(path string, images map[string]kustypes.Image) string {
	if len(images) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Updated %s to use new image", path)
	if len(images) > 1 {
		b.WriteString("s")
	}
	b.WriteString("\n")
	for _, name := range slices.Sorted(mapsKeys(images)) {
		i := images[name]
		ref := i.Name
		if i.NewName != "" {
			ref = i.NewName
		}
		if i.NewTag != "" {
			ref += ":" + i.NewTag
		}
		if i.Digest != "" {
			ref += "@" + i.Digest
		}
		fmt.Fprintf(&b, "\n- %s", ref)
	}
	return b.String()
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func updateKustomization(path string, targets map[string]kustypes.Image) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("could not read Kustomization file: %w", err)
	}
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil {
		return fmt.Errorf("could not unmarshal Kustomization file: %w", err)
	}
	var current []kustypes.Image
	if err := decodeField(&node, "images", &current); err != nil {
		var nf errFieldNotFound
		if !errors.As(err, &nf) {
			return fmt.Errorf("could not decode images field in Kustomization file: %w", err)
		}
	}
	if err := updateField(&node, "images", mergeImages(current, targets)); err != nil {
		return fmt.Errorf("could not update images field in Kustomization file: %w", err)
	}
	out, err := kyaml.Marshal(&node)
	if err != nil {
		return fmt.Errorf("could not marshal updated Kustomization file: %w", err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil { //nolint:gosec // a file of the repository, as Kargo writes it
		return fmt.Errorf("could not write updated Kustomization file: %w", err)
	}
	return nil
}

// mergeImages is Kargo's mergeImages: the targets over the current
// images ("*" keeps the current field, or clears it for a new image),
// sorted by name.
func mergeImages(current []kustypes.Image, targets map[string]kustypes.Image) []kustypes.Image {
	for _, img := range current {
		t, ok := targets[img.Name]
		if !ok {
			targets[img.Name] = img
			continue
		}
		if t.NewName == preserve {
			t.NewName = img.NewName
		}
		if t.NewTag == preserve {
			t.NewTag = img.NewTag
		}
		if t.Digest == preserve {
			t.Digest = img.Digest
		}
		targets[img.Name] = t
	}
	out := make([]kustypes.Image, 0, len(targets))
	for _, v := range targets {
		if v.NewName == preserve {
			v.NewName = ""
		}
		if v.NewTag == preserve {
			v.NewTag = ""
		}
		if v.Digest == preserve {
			v.Digest = ""
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b kustypes.Image) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// findKustomization is the one Kustomization file (kustomization.yaml,
// .yml or Kustomization) in dir.
func findKustomization(workDir, dir string) (string, error) {
	d, err := Join(workDir, dir)
	if err != nil {
		return "", fmt.Errorf("could not secure join path %q: %w", dir, err)
	}
	var found []string
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(d, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("could not find any Kustomization files in %q", dir)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("ambiguous result: found multiple Kustomization files in %q: %v", dir, found)
}
