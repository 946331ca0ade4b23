// client-go against the local API server, driven by test/integration/kube/client-go.test.ts.
//
// It runs a dynamic shared informer on HTTPProxies (projectcontour.io/v1) in one namespace and
// prints one JSON line per informer callback on stdout. Commands arrive as JSON lines on stdin;
// the only one, updateStatus, writes the EnvoyProgrammed condition with UpdateStatus inside
// retry.RetryOnConflict, as a controller does: the first attempt uses the informer's copy (or
// one made stale on purpose by the test), a conflict refetches from the server and tries again.
// EOF on stdin stops the informer and exits 0.
//
// The dynamic client speaks JSON (application/json) in both directions.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

var httpproxies = schema.GroupVersionResource{Group: "projectcontour.io", Version: "v1", Resource: "httpproxies"}

type printer struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (p *printer) print(fields map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.enc.Encode(fields); err != nil {
		fmt.Fprintf(os.Stderr, "writing stdout: %v\n", err)
		os.Exit(1)
	}
}

func describe(event string, obj any) map[string]any {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return map[string]any{"event": event, "error": fmt.Sprintf("unexpected object %T", obj)}
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	fqdn, _, _ := unstructured.NestedString(u.Object, "spec", "virtualhost", "fqdn")
	return map[string]any{
		"event":           event,
		"name":            u.GetName(),
		"resourceVersion": u.GetResourceVersion(),
		"generation":      u.GetGeneration(),
		"labels":          u.GetLabels(),
		"fqdn":            fqdn,
		"conditions":      conditions,
	}
}

type command struct {
	Op   string `json:"op"`
	Name string `json:"name"`
	// StaleResourceVersion, when set, replaces the resourceVersion of the first attempt: the
	// informer's copy lagging behind the server, made deterministic.
	StaleResourceVersion string `json:"staleResourceVersion"`
	Message              string `json:"message"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("namespace", "default", "namespace to watch")
	flag.Parse()

	out := &printer{enc: json.NewEncoder(os.Stdout)}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		out.print(map[string]any{"event": "fatal", "error": err.Error()})
		os.Exit(1)
	}
	config.UserAgent = "client-go-informer (xds-programmed peer test)"
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		out.print(map[string]any{"event": "fatal", "error": err.Error()})
		os.Exit(1)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, nil)
	informer := factory.ForResource(httpproxies)
	registration, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { out.print(describe("add", obj)) },
		UpdateFunc: func(_, obj any) { out.print(describe("update", obj)) },
		DeleteFunc: func(obj any) { out.print(describe("delete", obj)) },
	})
	if err != nil {
		out.print(map[string]any{"event": "fatal", "error": err.Error()})
		os.Exit(1)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	// The registration's HasSynced, not the informer's: it is true only once this handler has been
	// given every object of the initial state, so "synced" is printed after their "add" lines.
	if !cache.WaitForCacheSync(stop, registration.HasSynced) {
		out.print(map[string]any{"event": "fatal", "error": "the informer did not sync"})
		os.Exit(1)
	}
	out.print(map[string]any{"event": "synced", "resourceVersion": informer.Informer().LastSyncResourceVersion()})

	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		var cmd command
		if err := json.Unmarshal(scanner.Bytes(), &cmd); err != nil {
			out.print(map[string]any{"event": "error", "error": fmt.Sprintf("bad command: %v", err)})
			continue
		}
		switch cmd.Op {
		case "updateStatus":
			out.print(updateStatus(client, informer.Lister(), *namespace, cmd))
		default:
			out.print(map[string]any{"event": "error", "error": fmt.Sprintf("unknown op %q", cmd.Op)})
		}
	}
	close(stop)
	factory.Shutdown()
}

func updateStatus(client dynamic.Interface, lister cache.GenericLister, namespace string, cmd command) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resource := client.Resource(httpproxies).Namespace(namespace)
	attempts, conflicts := 0, 0
	var written *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempts++
		var current *unstructured.Unstructured
		if attempts == 1 {
			cached, err := lister.ByNamespace(namespace).Get(cmd.Name)
			if err != nil {
				return err
			}
			current = cached.(*unstructured.Unstructured).DeepCopy()
			if cmd.StaleResourceVersion != "" {
				current.SetResourceVersion(cmd.StaleResourceVersion)
			}
		} else {
			fresh, err := resource.Get(ctx, cmd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current = fresh
		}
		condition := map[string]any{
			"type":               "EnvoyProgrammed",
			"status":             "True",
			"observedGeneration": current.GetGeneration(),
			"reason":             "Programmed",
			"message":            cmd.Message,
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}
		if err := unstructured.SetNestedSlice(current.Object, []any{condition}, "status", "conditions"); err != nil {
			return err
		}
		updated, err := resource.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: "client-go-informer"})
		if apierrors.IsConflict(err) {
			conflicts++
		}
		if err != nil {
			return err
		}
		written = updated
		return nil
	})
	result := map[string]any{"event": "statusUpdated", "name": cmd.Name, "attempts": attempts, "conflicts": conflicts}
	if err != nil {
		result["error"] = err.Error()
		return result
	}
	result["resourceVersion"] = written.GetResourceVersion()
	result["generation"] = written.GetGeneration()
	return result
}
