// Package e2e holds end-to-end integration tests that run kplan's verbs in
// sequence, in process, against a lab of their own shape (labtest.Start):
// one lab per test binary, so tests needing another shape live here rather
// than next to the verbs' code.
package e2e
