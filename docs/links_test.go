package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// pages lists the Markdown files whose links are checked, relative to the
// repository root: README.md, CONTRIBUTING.md and every docs/*.md.
func pages(t *testing.T, root string) []string {
	t.Helper()
	ps := []string{"README.md", "CONTRIBUTING.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, filepath.ToSlash(rel))
	}
	sort.Strings(ps[2:])
	return ps
}

// A page's text split into what is prose and what is code. Links inside
// code are not links; the tracker check applies to prose only for "#N"
// (a diagram may number its boxes), everywhere else for the rest.
type page struct {
	prose []line // lines outside fenced code, inline code spans blanked
	all   []line // every line
}

type line struct {
	n    int
	text string
}

var inlineCode = regexp.MustCompile("`+[^`]*`+")

func readPage(path string) (page, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return page{}, err
	}
	var p page
	fence := ""
	for i, l := range strings.Split(string(b), "\n") {
		p.all = append(p.all, line{i + 1, l})
		trim := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			continue
		}
		p.prose = append(p.prose, line{i + 1, inlineCode.ReplaceAllStringFunc(l, func(s string) string {
			return strings.Repeat(" ", len(s))
		})})
	}
	return p, nil
}

var (
	// [text](target "title") and ![alt](target); the target ends at the
	// first space or closing parenthesis.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// <a href="x"> and <img src="x">
	htmlLink = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*(?:href|src)\s*=\s*"([^"]+)"`)
	// anchors written as HTML
	htmlAnchor = regexp.MustCompile(`(?i)<a\s[^>]*(?:name|id)\s*=\s*"([^"]+)"`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// links returns every link target of the page's prose with its line.
func (p page) links() []line {
	var out []line
	for _, l := range p.prose {
		for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(l.text, -1) {
				out = append(out, line{l.n, m[1]})
			}
		}
	}
	return out
}

// anchors returns the fragment names GitHub gives the page's headings
// (lower case, punctuation dropped, spaces to hyphens, -1, -2… for
// repeats) and its HTML anchors.
func (p page) anchors() map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range p.prose {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
	}
	// Headings are read from the text with code spans kept: their
	// content counts for the slug.
	fence := ""
	for _, l := range p.all {
		trim := strings.TrimSpace(l.text)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			continue
		}
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's heading anchor: the text of links kept, lower case,
// letters, digits, '-' and '_' kept, spaces to '-', everything else
// dropped.
func slug(h string) string {
	h = mdLinkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestSlug pins the anchor rule on headings of these pages.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Timestamps: where they come from, what error to expect": "timestamps-where-they-come-from-what-error-to-expect",
		"Estimators (`EstimateLDA`)":                             "estimators-estimatelda",
		"1. Receive (`dataplane.Port`)":                          "1-receive-dataplaneport",
		"Fig. 6: which two banks":                                "fig-6-which-two-banks",
		"Why α stays 0.5 — theory":                               "why-α-stays-05--theory",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// outside matches text that points outside the repository: the team's
// notebook, the build machine's paths, design-document sections and the
// tracker. "#N" is checked in prose only.
var outside = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`\.\./shared|/work/`), "a path outside the repository"},
	{regexp.MustCompile(`DESIGN(\.md)?\s*§|DESIGN\.md`), "a design-document reference"},
	{regexp.MustCompile(`(?i)\b(issue|ticket|PR|pull request)s?\s+#?\d+`), "a tracker reference"},
}

var (
	hashNumber = regexp.MustCompile(`(?:^|[\s(\[,;])(#\d+)\b`)
	// The lab's two appliances are ldafwd#1 and ldafwd#2 (scripts/lab.sh);
	// a page that names them so may shorten them to #1 and #2.
	applianceName = regexp.MustCompile(`ldafwd ?(#\d+)`)
)

// names returns the "#N" a page defines as appliance names.
func (p page) names() map[string]bool {
	out := map[string]bool{}
	for _, l := range p.all {
		for _, m := range applianceName.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// TestLinks: every relative link of README.md, CONTRIBUTING.md and
// docs/*.md leads to a file inside the repository (and to a heading or
// HTML anchor of it, when it names one); no page points outside the
// repository or to the tracker.
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cache := map[string]page{}
	load := func(path string) (page, error) {
		if p, ok := cache[path]; ok {
			return p, nil
		}
		p, err := readPage(path)
		if err == nil {
			cache[path] = p
		}
		return p, err
	}
	checked := 0
	for _, name := range pages(t, root) {
		path := filepath.Join(root, filepath.FromSlash(name))
		p, err := load(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, l := range p.all {
			for _, o := range outside {
				if m := o.re.FindString(l.text); m != "" {
					t.Errorf("%s:%d: %s: %q", name, l.n, o.what, m)
				}
			}
		}
		names := p.names()
		for _, l := range p.prose {
			for _, m := range hashNumber.FindAllStringSubmatch(l.text, -1) {
				if !names[m[1]] {
					t.Errorf("%s:%d: a tracker reference: %q", name, l.n, m[1])
				}
			}
		}
		for _, l := range p.links() {
			checked++
			if err := checkLink(root, path, l.text, load); err != nil {
				t.Errorf("%s:%d: link %q: %v", name, l.n, l.text, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the page list or the link pattern is wrong")
	}
}

// checkLink resolves target as written in the page at from.
func checkLink(root, from, target string, load func(string) (page, error)) error {
	low := strings.ToLower(target)
	for _, scheme := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(low, scheme) {
			return nil
		}
	}
	if strings.Contains(target, "://") || strings.HasPrefix(target, "file:") {
		return fmt.Errorf("not a repository link")
	}
	file, frag, _ := strings.Cut(target, "#")
	dest := from
	if file != "" {
		if strings.HasPrefix(file, "/") {
			return fmt.Errorf("absolute path: links must be relative to the page")
		}
		dest = filepath.Clean(filepath.Join(filepath.Dir(from), filepath.FromSlash(file)))
		rel, err := filepath.Rel(root, dest)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(dest); err != nil {
			return fmt.Errorf("no such file %s", filepath.ToSlash(rel))
		}
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(dest, ".md") {
		return nil // an anchor into a non-Markdown file (a line of code): not checked
	}
	p, err := load(dest)
	if err != nil {
		return err
	}
	if !p.anchors()[frag] {
		return fmt.Errorf("no heading or anchor #%s in %s", frag, filepath.Base(dest))
	}
	return nil
}

// TestCheckLink holds the resolver to links that must pass and links that
// must fail, in a repository of its own.
func TestCheckLink(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "docs", "img"), 0o755))
	must(os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("# Title\n\n## Twice\n\n## Twice\n\n```\n## not a heading\n```\n<a id=\"here\"></a>\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "docs", "img", "p.png"), nil, 0o644))
	from := filepath.Join(root, "docs", "b.md")
	load := func(path string) (page, error) { return readPage(path) }
	for target, ok := range map[string]bool{
		"a.md":                true,
		"a.md#title":          true,
		"a.md#twice":          true,
		"a.md#twice-1":        true,
		"a.md#here":           true,
		"img/p.png":           true,
		"../docs/a.md":        true,
		"https://example.org": true,
		"a.md#twice-2":        false,
		"a.md#not-a-heading":  false,
		"b2.md":               false,
		"../../outside.md":    false,
		"/etc/passwd":         false,
		"file:///etc/passwd":  false,
	} {
		err := checkLink(root, from, target, load)
		if (err == nil) != ok {
			t.Errorf("checkLink(%q) = %v, want ok=%v", target, err, ok)
		}
	}
}

// TestNoMergeMarkers: no page keeps a merge's conflict markers.
func TestNoMergeMarkers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`(?m)^(<{7} |={7}$|>{7} )`)
	for _, name := range pages(t, root) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if loc := marker.FindIndex(b); loc != nil {
			t.Errorf("%s:%d: a merge conflict marker", name, 1+strings.Count(string(b[:loc[0]]), "\n"))
		}
	}
}
