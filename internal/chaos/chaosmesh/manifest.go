package chaosmesh

import (
	"context"
	"fmt"

	"github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kplan-dev/kplan/internal/errkind"
)

// Manifest returns the PodChaos that kills pod, as kplan creates it: named
// kplan-<RunID> (generateName kplan- when RunID is ""), labelled managed by
// kplan, in mode one with the pod named explicitly in a
// pods: {namespace: [pod]} selector (never a label match that could select
// several pods), and already defaulted by Chaos Mesh's own webhook.
func Manifest(o Options, pod string) (*v1alpha1.PodChaos, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if pod == "" {
		return nil, errkind.Usagef("pod", "the pod to kill is required")
	}
	pc := &v1alpha1.PodChaos{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.KindPodChaos},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.Namespace,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue},
		},
		Spec: v1alpha1.PodChaosSpec{
			ContainerSelector: v1alpha1.ContainerSelector{
				PodSelector: v1alpha1.PodSelector{
					Mode: v1alpha1.OneMode,
					Selector: v1alpha1.PodSelectorSpec{
						Pods: map[string][]string{o.Namespace: {pod}},
					},
				},
			},
			Action: v1alpha1.PodChaosAction(o.Action),
			// Zero: the pod is deleted at once, as a crash would end it.
			GracePeriod: 0,
		},
	}
	if o.RunID == "" {
		pc.GenerateName = "kplan-"
	} else {
		pc.Name = o.chaosName()
		pc.Labels[RunIDLabel] = o.RunID
	}
	switch o.Action {
	case ActionPodFailure:
		d := o.Duration.String()
		pc.Spec.Duration = &d
	case ActionContainerKill:
		pc.Spec.ContainerNames = []string{o.Container}
	}
	if err := pc.Default(context.Background(), pc); err != nil {
		return nil, fmt.Errorf("chaos mesh's defaults for the PodChaos: %w", err)
	}
	if _, err := pc.ValidateCreate(context.Background(), pc); err != nil {
		return nil, fmt.Errorf("chaos mesh's validation refuses the PodChaos: %w", err)
	}
	return pc, nil
}

// ManifestYAML renders pc as YAML as kubectl would take it: without status
// and server-set metadata.
func ManifestYAML(pc *v1alpha1.PodChaos) (string, error) {
	c := pc.DeepCopy()
	c.Status = v1alpha1.PodChaosStatus{}
	c.ResourceVersion, c.UID, c.Generation = "", "", 0
	c.CreationTimestamp = metav1.Time{}
	c.ManagedFields = nil
	if c.APIVersion == "" || c.Kind == "" {
		c.APIVersion, c.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.KindPodChaos
	}
	j, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the PodChaos: %w", err)
	}
	// Drop the empty status and creationTimestamp that the types always
	// print, so the YAML is what a person would write.
	var m map[string]any
	if err := yaml.Unmarshal(j, &m); err != nil {
		return "", fmt.Errorf("encode the PodChaos: %w", err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode the PodChaos: %w", err)
	}
	return string(out), nil
}
