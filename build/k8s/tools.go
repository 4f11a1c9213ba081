//go:build tools

// Package tools pins kube-apiserver's packages so that `go mod tidy` fills
// go.sum; `make k8s` builds k8s.io/kubernetes/cmd/kube-apiserver from here.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"
