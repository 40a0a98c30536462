// Package docs holds the repository's manual (the Markdown pages in this
// directory) and its link test: every relative link in README.md,
// CONTRIBUTING.md and docs/*.md must lead to a file of the repository (and
// to a heading of it, when the link names one), and no page may point
// outside the repository or to the tracker. Its deploy test requires every
// sh block of deploy.md to be marked for `make deploy-check` (which runs
// them; e2e's TestDeployGuide runs it) or to say why it is not. The
// package has no code; `go test ./...` runs the tests with the rest of the
// suite.
package docs
