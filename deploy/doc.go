// Package deploy holds stormdrill's deployment files (compose.yaml, the
// Kubernetes manifests in k8s/) and, in its tests, their validation by the
// real parsers: compose-spec's loader with its schema, Kubernetes' typed
// objects decoded strictly, and a YAML parser for the GitHub workflows,
// the reusable action and the release configuration. It is a module of its
// own so that those parsers stay out of stormdrill's go.mod and build.
package deploy
