// Package measuresec holds the integration test of `kplan measure` against
// a SASL_SSL lab, in a test binary of its own (its own lab).
package measuresec
