package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// strictDecoder decodes manifests into the typed Kubernetes objects of
// the groups the manifests use; strict: an unknown or duplicated field is
// an error, as `kubectl apply --validate=strict` makes it.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// decodeManifests decodes every document of a multi-document YAML file.
func decodeManifests(dec runtime.Decoder, name string, data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufioReader(data))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		out = append(out, obj)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// manifests decodes every file of k8s/.
func manifests(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/: %v", err)
	}
	dec := strictDecoder(t)
	out := map[string][]runtime.Object{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(dec, f, data)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = objs
	}
	return out
}

// The decoder is strict: a misspelt field fails, so the manifests' test
// can fail.
func TestStrictDecoderRefusesUnknownFields(t *testing.T) {
	bad := "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  selector: {a: b}\n  prots: [{port: 80}]\n"
	if _, err := decodeManifests(strictDecoder(t), "bad.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "prots") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// podChecks are what every pod template of the manifests must hold: the
// stormdrill containers run the image's numeric non-root user with no
// privilege escalation; every secret, PVC and env var used is declared.
func podChecks(t *testing.T, where string, pod corev1.PodTemplateSpec, claims map[string]bool) {
	t.Helper()
	vols := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = true
		if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
			t.Errorf("%s: volume %s claims %q, which no manifest declares", where, v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s/%s: mounts %q, not a volume of the pod", where, c.Name, m.Name)
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
		}
		for _, a := range c.Args {
			for rest := a; strings.Contains(rest, "$("); {
				_, after, _ := strings.Cut(rest, "$(")
				name, tail, _ := strings.Cut(after, ")")
				if !env[name] {
					t.Errorf("%s/%s: args use $(%s), which the container's env does not define (Kubernetes would leave it as it is)", where, c.Name, name)
				}
				rest = tail
			}
		}
		if !strings.HasPrefix(c.Image, "stormdrill:") {
			continue
		}
		if len(c.Command) > 0 {
			t.Errorf("%s/%s: command %v replaces the image's entry point (stormdrill); give args", where, c.Name, c.Command)
		}
		// The container's own setting wins over the pod's.
		var nonRoot *bool
		var uid *int64
		if psc := pod.Spec.SecurityContext; psc != nil {
			nonRoot, uid = psc.RunAsNonRoot, psc.RunAsUser
		}
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsNonRoot != nil {
				nonRoot = sc.RunAsNonRoot
			}
			if sc.RunAsUser != nil {
				uid = sc.RunAsUser
			}
		}
		if nonRoot == nil || !*nonRoot || uid == nil || *uid != 65532 {
			t.Errorf("%s/%s: want runAsNonRoot with user 65532, the image's", where, c.Name)
		}
	}
}

func TestKubernetesManifests(t *testing.T) {
	all := manifests(t)
	claims := map[string]bool{}
	for _, objs := range all {
		for _, o := range objs {
			if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
				claims[pvc.Name] = true
			}
		}
	}
	var deployments []*appsv1.Deployment
	var services []*corev1.Service
	var jobs []*batchv1.Job
	for file, objs := range all {
		for _, o := range objs {
			switch v := o.(type) {
			case *appsv1.Deployment:
				deployments = append(deployments, v)
				sel, err := metaSelector(v.Spec.Selector.MatchLabels)
				if err != nil || !sel.Matches(labels.Set(v.Spec.Template.Labels)) {
					t.Errorf("%s: deployment %s: its selector does not match its pods' labels", file, v.Name)
				}
				podChecks(t, file+": "+v.Name, v.Spec.Template, claims)
			case *corev1.Service:
				services = append(services, v)
			case *batchv1.Job:
				jobs = append(jobs, v)
				if v.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever && v.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
					t.Errorf("%s: job %s: restartPolicy %q", file, v.Name, v.Spec.Template.Spec.RestartPolicy)
				}
				podChecks(t, file+": "+v.Name, v.Spec.Template, claims)
			case *corev1.PersistentVolumeClaim:
			default:
				t.Errorf("%s: a %T the test does not check", file, o)
			}
		}
	}
	// The partner server: a Deployment behind a Service on 8080, its token
	// from a Secret.
	var partner *appsv1.Deployment
	for _, d := range deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Args) > 0 && c.Args[0] == "partner" && slices.Contains(c.Args, "0.0.0.0:8080") {
				partner = d
				tokenFromSecret := false
				for _, e := range c.Env {
					tokenFromSecret = tokenFromSecret || e.Name == "STORMDRILL_PARTNER_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
				}
				if !tokenFromSecret {
					t.Errorf("deployment %s: a partner server on 0.0.0.0 needs $STORMDRILL_PARTNER_TOKEN from a Secret", d.Name)
				}
			}
		}
	}
	if partner == nil {
		t.Fatal("no Deployment runs a partner server on 0.0.0.0:8080")
	}
	served := false
	for _, s := range services {
		sel := labels.SelectorFromSet(s.Spec.Selector)
		for _, p := range s.Spec.Ports {
			served = served || len(s.Spec.Selector) > 0 && sel.Matches(labels.Set(partner.Spec.Template.Labels)) && p.Port == 8080
		}
	}
	if !served {
		t.Error("no Service selects the partner server's pods on port 8080")
	}
	// The dispatcher with its store: one pod, the dispatcher's store on
	// loopback (the dispatcher talks to nothing else), the store on a volume.
	var dispatcher *appsv1.Deployment
	for _, d := range deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Args) > 0 && c.Args[0] == "dispatch" {
				dispatcher = d
				if i := slices.Index(c.Args, "--store"); i < 0 || i+1 >= len(c.Args) || !strings.Contains(c.Args[i+1], "@127.0.0.1:") {
					t.Errorf("deployment %s: dispatch --store must be the pod's own store on 127.0.0.1 (%v)", d.Name, c.Args)
				}
			}
		}
	}
	if dispatcher == nil {
		t.Fatal("no Deployment runs stormdrill dispatch")
	}
	storeOnVolume := false
	for _, c := range dispatcher.Spec.Template.Spec.Containers {
		storeOnVolume = storeOnVolume || strings.HasPrefix(c.Image, "postgres:") && len(c.VolumeMounts) > 0
	}
	if !storeOnVolume || dispatcher.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("deployment %s: want a PostgreSQL container on a volume and the Recreate strategy", dispatcher.Name)
	}
	// Sharded work: an Indexed Job whose pod I runs --shard I/N, N its
	// completions, and a merge of every shard's directory.
	var indexed, merge *batchv1.Job
	for _, j := range jobs {
		if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			indexed = j
		} else if a := j.Spec.Template.Spec.Containers[0].Args; len(a) > 0 && a[0] == "merge" {
			merge = j
		}
	}
	if indexed == nil || merge == nil {
		t.Fatal("want an Indexed Job and a merge Job")
	}
	n := *indexed.Spec.Completions
	c := indexed.Spec.Template.Spec.Containers[0]
	var shardVar string
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			shardVar = e.Name
		}
	}
	if shardVar == "" {
		t.Fatalf("job %s: no env var holds the completion index", indexed.Name)
	}
	if i := slices.Index(c.Args, "--shard"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != fmt.Sprintf("$(%s)/%d", shardVar, n) {
		t.Errorf("job %s: args %v: want --shard $(%s)/%d", indexed.Name, c.Args, shardVar, n)
	}
	mergeArgs := merge.Spec.Template.Spec.Containers[0].Args
	if len(mergeArgs) < 2 || mergeArgs[1] != c.Args[1] {
		t.Errorf("merge args %v: want the shards' experiment or drill %q", mergeArgs, c.Args[1])
	}
	out := c.Args[slices.Index(c.Args, "--out")+1]
	for i := range n {
		dir := strings.ReplaceAll(out, "$("+shardVar+")", fmt.Sprint(i))
		if !slices.Contains(mergeArgs, dir) {
			t.Errorf("merge args %v: shard %d's directory %s missing", mergeArgs, i, dir)
		}
	}
}
