package kubectl

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// kube is the plugin's access to the cluster: the API clients, the
// namespace of the command, and the admin client over the chosen
// transport.
type kube struct {
	namespace string
	pods      kubernetes.Interface
	dynamic   dynamic.Interface
	admin     *adminclient.Client
}

// newKube loads the kubeconfig as kubectl does (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; --context; --namespace, else the
// context's) and builds the clients.
func newKube(o options) (*kube, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: namespace: %w", err)
	}
	pods, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	var transport adminclient.Transport
	if o.transport == transportDirect {
		transport = adminclient.NewDirect(o.adminTimeout)
	} else {
		pf, err := adminclient.NewPortForward(cfg)
		if err != nil {
			return nil, err
		}
		transport = pf
	}
	return &kube{namespace: ns, pods: pods, dynamic: dyn, admin: adminclient.New(transport, o.adminTimeout)}, nil
}

// pod reads a pod of the command's namespace.
func (k *kube) pod(ctx context.Context, name string) (*corev1.Pod, error) {
	p, err := k.pods.CoreV1().Pods(k.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s/%s not found", k.namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", k.namespace, name, err)
	}
	return p, nil
}
