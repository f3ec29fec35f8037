"""Plain Pods and PodGroups: the ones users submit themselves, without a Job (Volcano's podgroup
controller's part of vc-controller-manager). See core.py."""
