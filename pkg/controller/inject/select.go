package inject

import (
	corev1 "k8s.io/api/core/v1"
)

// InjectDisabledValue is the value of InjectLabel, on a pod's labels or
// annotations, that opts the pod out.
const InjectDisabledValue = "false"

// Wanted reports whether the pod gets a proxy. namespaceInjects says that
// its namespace carries InjectLabel: "true" (the webhook knows it from the
// configuration entry that called it). A pod is injected when it is
// labelled "true", or when its namespace is and the pod does not opt out;
// a label or annotation "false" opts out. A value that is neither, on a pod
// that would otherwise be injected, is refused: the pod's intent is
// unclear, and guessing either way could be wrong.
func Wanted(pod *corev1.Pod, namespaceInjects bool) (bool, error) {
	label, labelled := pod.Labels[InjectLabel]
	annotation, annotated := pod.Annotations[InjectLabel]
	want := label == InjectLabelValue || (namespaceInjects && label != InjectDisabledValue)
	if !want {
		return false, nil
	}
	if labelled && label != InjectLabelValue {
		return false, refuse(InjectLabel, "label %q is neither \"true\" nor \"false\"", label)
	}
	if annotated {
		switch annotation {
		case InjectDisabledValue:
			return false, nil
		case InjectLabelValue:
		default:
			return false, refuse(InjectLabel, "annotation %q is neither \"true\" nor \"false\"", annotation)
		}
	}
	return true, nil
}
