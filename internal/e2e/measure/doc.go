// Package measure holds the end-to-end integration test of `kplan measure`
// against a secured lab (SASL_SSL, SCRAM): one lab shape per test binary,
// so it lives apart from internal/e2e's plaintext lab and from
// internal/e2e/secure (another helper's).
package measure
