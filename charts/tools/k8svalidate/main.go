// k8svalidate: strict schema check of rendered Kubernetes objects (helm template output).
//
// Each YAML document is decoded into the Kubernetes API type its apiVersion/kind names (the
// k8s.io/api types, and the Prometheus Operator's for ServiceMonitor) with unknown fields
// rejected, so a misspelt or misplaced field, a wrong type or an unknown kind fails.
//
//	k8svalidate FILE...   (or stdin); exit 1 and one line per problem when anything is wrong
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

func newObject(apiVersion, kind string) (interface{}, bool) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, true
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, true
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, true
	}
	return nil, false
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

func check(name string, data []byte) []string {
	var problems []string
	for i, doc := range docSep.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			problems = append(problems, fmt.Sprintf("%s doc %d: not YAML: %v", name, i, err))
			continue
		}
		obj, ok := newObject(tm.APIVersion, tm.Kind)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s doc %d: unknown apiVersion/kind %q/%q", name, i, tm.APIVersion, tm.Kind))
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			problems = append(problems, fmt.Sprintf("%s doc %d (%s): %v", name, i, tm.Kind, err))
			continue
		}
		var om struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = yaml.Unmarshal([]byte(doc), &om)
		for _, msg := range validation.IsDNS1123Subdomain(om.Metadata.Name) {
			problems = append(problems, fmt.Sprintf("%s doc %d (%s): metadata.name %q: %s", name, i, tm.Kind, om.Metadata.Name, msg))
		}
		if tm.Kind == "Service" {
			for _, msg := range validation.IsDNS1035Label(om.Metadata.Name) {
				problems = append(problems, fmt.Sprintf("%s doc %d (Service): name %q: %s", name, i, om.Metadata.Name, msg))
			}
		}
		for k, v := range om.Metadata.Labels {
			for _, msg := range validation.IsQualifiedName(k) {
				problems = append(problems, fmt.Sprintf("%s doc %d (%s): label key %q: %s", name, i, tm.Kind, k, msg))
			}
			for _, msg := range validation.IsValidLabelValue(v) {
				problems = append(problems, fmt.Sprintf("%s doc %d (%s): label %q value %q: %s", name, i, tm.Kind, k, v, msg))
			}
		}
	}
	return problems
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func main() {
	var problems []string
	n := 0
	if len(os.Args) < 2 {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8svalidate:", err)
			os.Exit(2)
		}
		problems = check("stdin", data)
		n = 1
	}
	for _, f := range os.Args[1:] {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8svalidate:", err)
			os.Exit(2)
		}
		problems = append(problems, check(f, data)...)
		n++
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("k8svalidate: %d file(s), every object valid\n", n)
}
