package inject

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWanted checks which pods get a proxy, by the pod's label and
// annotation and whether its namespace is labelled.
func TestWanted(t *testing.T) {
	cases := map[string]struct {
		labels, annotations map[string]string
		namespace           bool
		want                bool
		refused             string // part of the refusal's text
	}{
		"label true":                           {labels: map[string]string{InjectLabel: "true"}, want: true},
		"label false":                          {labels: map[string]string{InjectLabel: "false"}},
		"label True":                           {labels: map[string]string{InjectLabel: "True"}},
		"label empty":                          {labels: map[string]string{InjectLabel: ""}},
		"no label":                             {labels: map[string]string{"app": "x"}},
		"nil":                                  {},
		"label true, annotation false":         {labels: map[string]string{InjectLabel: "true"}, annotations: map[string]string{InjectLabel: "false"}},
		"label true, annotation true":          {labels: map[string]string{InjectLabel: "true"}, annotations: map[string]string{InjectLabel: "true"}, want: true},
		"label true, annotation yes":           {labels: map[string]string{InjectLabel: "true"}, annotations: map[string]string{InjectLabel: "yes"}, refused: `annotation "yes" is neither`},
		"annotation only, outside namespace":   {annotations: map[string]string{InjectLabel: "true"}},
		"namespace, no label":                  {namespace: true, want: true},
		"namespace, label true":                {namespace: true, labels: map[string]string{InjectLabel: "true"}, want: true},
		"namespace, label false":               {namespace: true, labels: map[string]string{InjectLabel: "false"}},
		"namespace, annotation false":          {namespace: true, annotations: map[string]string{InjectLabel: "false"}},
		"namespace, annotation bad":            {namespace: true, annotations: map[string]string{InjectLabel: "off"}, refused: `annotation "off" is neither`},
		"namespace, label bad":                 {namespace: true, labels: map[string]string{InjectLabel: "enabled"}, refused: `label "enabled" is neither`},
		"namespace, label false, annotation x": {namespace: true, labels: map[string]string{InjectLabel: "false"}, annotations: map[string]string{InjectLabel: "x"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}}
			got, err := Wanted(pod, tc.namespace)
			if tc.refused != "" {
				var r *Refusal
				if !errors.As(err, &r) || r.Annotation != InjectLabel || !strings.Contains(r.Reason, tc.refused) {
					t.Fatalf("Wanted = %v, %v; want a refusal of %s containing %q", got, err, InjectLabel, tc.refused)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Wanted = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
